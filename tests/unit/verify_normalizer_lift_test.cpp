// The all-sizes lift of the normalizer scan (verify/online_softmax/normalizer_lift.h): it holds for the tier's own
// output, and a target that is right at the given size but wrong at another is never reported
// for all sizes — it keeps the proof at its own sizes only.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "core/checker.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/attention.h"
#include "rewrites/config.h"
#include "verify/engine.h"
#include "verify/online_softmax/normalizer_lift.h"
#include "verify/task.h"
#include "verify_fixtures.h"

namespace fp::verify {
namespace {

std::vector<Task> tasks_of(std::int64_t seq, std::int64_t d, const std::string& mask = "causal",
                           Prec precision = Prec::F32, bool train = false) {
  AttentionSpec s;
  s.precision = precision;
  s.train = train;
  s.heads = 2;
  s.sq = s.sk = seq;
  s.d = s.e = d;
  s.mask = mask;
  return testing::attention_tasks(s);
}

const Task& task(const std::vector<Task>& ts, const std::string& claim) {
  for (const auto& t : ts)
    if (t.obligation.claim == claim) return t;
  throw std::runtime_error("no task " + claim);
}

// The target with one textual substitution, parsed back and checked well formed.
Routine edited(const Routine& r, const std::string& from, const std::string& to) {
  std::string text = print_routine(r);
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  Routine out = parse_routine(text, "edited.fp");
  EXPECT_TRUE(check_routine(out).empty()) << text;
  return out;
}

Limits quick() {
  Limits l;
  l.search_trials = 100;
  l.mpfr_rows = 1000;
  return l;
}

Verdict verify_one(const Task& t) {
  EngineOptions o;
  o.use_cache = false;
  o.limits = quick();
  return verify_tasks({t}, o).at(0);
}

TEST(NormalizerLift, HoldsForTheTiersScanAtEveryPrecision) {
  for (const char* mask : {"none", "causal"})
    for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16})
      for (bool train : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {} train {}", mask, prec_name(p), train));
        const auto ts = tasks_of(16, 8, mask, p, train);
        const Task& t = task(ts, "normalizer-sum");
        const NormalizerLift lift = lift_normalizer(t.src, t.tgt, t.app);
        EXPECT_TRUE(lift.proved) << lift.why_not;
        EXPECT_EQ(lift.row_terms, 16);
        EXPECT_EQ(lift.m, "row_max");
        EXPECT_EQ(lift.l, "row_sum");
      }
}

TEST(NormalizerLift, VerdictsAreForAllSizes) {
  const auto ts = tasks_of(32, 8);
  const Verdict max = verify_one(task(ts, "normalizer-max"));
  EXPECT_EQ(max.kind, VerdictKind::Exact) << max.message;
  EXPECT_TRUE(max.scope.all_sizes);
  EXPECT_NE(max.message.find("bitwise equal at reduced sizes (32→8)"), std::string::npos) << max.message;
  const Verdict sum = verify_one(task(ts, "normalizer-sum"));
  EXPECT_EQ(sum.kind, VerdictKind::Bounded) << sum.message;
  EXPECT_TRUE(sum.scope.all_sizes) << sum.scope.text;
  EXPECT_NE(sum.scope.text.find("REL stated for n = 32"), std::string::npos) << sum.scope.text;
}

// A guard that is true at the given size (t < 16 with 16 keys) is the same program here but not at
// 32 keys: the lift must refuse it, and the verdicts fall back to the routine's own sizes.
TEST(NormalizerLift, AGuardOnOneSizeIsNotAllSizes) {
  const auto ts = tasks_of(16, 8);
  Task sum = task(ts, "normalizer-sum");
  const std::string store =
      "row_sum[b, s, h] = where.f32(eq.f32(os_m_next_row_max, -inf:f32), nan:f32, os_l_next_row_sum)";
  sum.tgt = edited(sum.tgt, store,
                   "row_sum[b, s, h] = where.f32(lt.i32(idx.i32(t), 16:i32), where.f32(eq.f32(os_m_next_row_max, "
                   "-inf:f32), nan:f32, os_l_next_row_sum), 0:f32)");
  const NormalizerLift lift = lift_normalizer(sum.src, sum.tgt, sum.app);
  EXPECT_FALSE(lift.proved);
  EXPECT_NE(lift.why_not.find("where(max = -inf, NaN, sum)"), std::string::npos) << lift.why_not;
  const Verdict v = verify_one(sum);
  EXPECT_EQ(v.kind, VerdictKind::Bounded) << v.message;  // right at 16 keys
  EXPECT_FALSE(v.scope.all_sizes) << v.scope.text;

  Task max = task(ts, "normalizer-max");
  max.tgt = edited(max.tgt, "os_m_next_row_max := max.f32(os_m_prev_row_max, os_x_masked)",
                   "os_m_next_row_max := max.f32(os_m_prev_row_max, where.f32(lt.i32(idx.i32(t), 16:i32), "
                   "os_x_masked, -inf:f32))");
  EXPECT_FALSE(lift_normalizer(max.src, max.tgt, max.app).proved);
  const Verdict vm = verify_one(max);
  EXPECT_EQ(vm.kind, VerdictKind::Exact) << vm.message;
  EXPECT_FALSE(vm.scope.all_sizes);
  EXPECT_NE(vm.message.find("proved at the routine's sizes only"), std::string::npos) << vm.message;
}

// A scan over a fixed part of the row (a bound that equals the extent only here) or reading the
// scores at another row is not the composed max: not lifted.
TEST(NormalizerLift, RefusesWhatIsNotTheRecurrence) {
  const auto ts = tasks_of(16, 8);
  const Task& t = task(ts, "normalizer-sum");
  // The rescale factor missing: l_next = l_prev + exp(x - m).
  const Routine no_rescale =
      edited(t.tgt,
             "os_l_next_row_sum := add.f32(mul.f32(os_l_prev_row_sum, exp.f32(sub.f32(max.f32(os_m_prev_row_max, "
             "-3.4028234663852886e+38:f32), max.f32(os_m_next_row_max, -3.4028234663852886e+38:f32)))), ",
             "os_l_next_row_sum := add.f32(os_l_prev_row_sum, ");
  const NormalizerLift a = lift_normalizer(t.src, no_rescale, t.app);
  EXPECT_FALSE(a.proved);
  EXPECT_NE(a.why_not.find("rescaled recurrence"), std::string::npos) << a.why_not;
  // The scores read at the transposed cell.
  const Routine transposed = edited(t.tgt, "os_x_masked := masked[b, s, h, t]", "os_x_masked := masked[b, t, h, s]");
  const NormalizerLift b = lift_normalizer(t.src, transposed, t.app);
  EXPECT_FALSE(b.proved);
  EXPECT_NE(b.why_not.find("reduced axis"), std::string::npos) << b.why_not;
  // The max stored at a fixed head: not a plain loop symbol (and not every row).
  const Routine fixed = edited(t.tgt, "row_max[b, s, h] = os_m_next_row_max", "row_max[b, s, 0] = os_m_next_row_max");
  const NormalizerLift c = lift_normalizer(t.src, fixed, t.app);
  EXPECT_FALSE(c.proved);
  EXPECT_NE(c.why_not.find("not a plain loop symbol"), std::string::npos) << c.why_not;
  // The source unchanged against itself: no scan.
  EXPECT_FALSE(lift_normalizer(t.src, t.src, t.app).proved);
}

}  // namespace
}  // namespace fp::verify
