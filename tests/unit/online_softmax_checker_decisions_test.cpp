// The online-softmax member's checkers (verify/online_softmax/), each soundness-critical decision with
// a case where only that decision stands between a target and a wrong verdict (docs/verify.md,
// "Checker mutants": scripts/mutants plants the opposite decision and these tests must fail then).
// The targets here compute the right values — or values inside the bound — through a form the
// certificate is not about, or skip more than the mask hides: no concrete run can tell, only the
// checker's own decision.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/checker.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/attention.h"
#include "rewrites/config.h"
#include "verify/engine.h"
#include "verify_fixtures.h"

namespace fp::verify {
namespace {

std::vector<Task> tier_tasks_of(const AttentionSpec& s, const std::vector<std::string>& settings) {
  return tier_tasks(build_attention(s), make_config("", settings, {}), {}, "attention.fp",
                    "flashproof verify attention.fp")
      .tasks;
}

const Task& task_of(const std::vector<Task>& ts, const std::string& claim) {
  for (const auto& t : ts)
    if (t.obligation.claim == claim) return t;
  throw std::runtime_error("no task " + claim);
}

// `r` with every occurrence of `from` replaced by `to` (at least one), parsed back and checked.
Routine edited(const Routine& r, const std::string& from, const std::string& to) {
  std::string text = print_routine(r);
  std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "no '" << from << "' in\n" << text;
  for (; at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  Routine out = parse_routine(text, "edited.fp");
  const auto problems = check_routine(out);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems[0].message) << "\n" << text;
  return out;
}

std::string steps_text(const Verdict& v) {
  std::string s;
  for (const auto& step : v.steps) s += step + "\n";
  return s;
}

// The fold-output task of a 3 × 5 causal attention folded in blocks of 2 (a tail and a skipped block).
Task causal_fold_output() {
  AttentionSpec s;
  s.sq = 3;
  s.sk = 5;
  s.d = s.e = 2;
  s.mask = "causal";
  return task_of(tier_tasks_of(s, {"online_softmax=true", "online_softmax_block=2"}), "fold-output");
}

// A training step of sq = sk = n, d = e = 2.
AttentionSpec training_step(std::int64_t n, const char* mask, Prec p = Prec::F32) {
  AttentionSpec s;
  s.sq = s.sk = n;
  s.d = s.e = 2;
  s.mask = mask;
  s.precision = p;
  s.train = true;
  return s;
}

EngineOptions options(const std::string& tag) {
  EngineOptions o = testing::engine_options("osm-decisions-" + tag, 200);
  return o;
}

// The normalizer's l stored as max(l, +0): bit for bit the recurrence's value (l >= +0, or NaN,
// which max keeps), but not the recurrence term the bound certifies. Only the recurrence check
// keeps it from *bounded*.
TEST(OnlineSoftmaxCheckerDecisions, ASumThatIsNotTheCertifiedRecurrenceIsNotBounded) {
  AttentionSpec s;
  s.sq = s.sk = 8;
  s.d = s.e = 4;
  s.mask = "causal";
  Task t = task_of(tier_tasks_of(s, {"online_softmax=true"}), "normalizer-sum");
  t.tgt = edited(t.tgt, "nan:f32, os_l_next_row_sum)", "nan:f32, max.f32(os_l_next_row_sum, 0:f32))");
  const Verdict v = discharge(t, options("recurrence"));
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_EQ(v.reason, UnknownReason::Approximation);
  EXPECT_NE(v.message.find("not the recurrence the bound certifies"), std::string::npos) << v.message;
}

// A certificate whose exp assumption fails (fp_exp64 is measured above 0.4 ulp) confirms nothing.
TEST(OnlineSoftmaxCheckerDecisions, ASumWhoseCertificateIsNotConfirmedIsNotBounded) {
  AttentionSpec s;
  s.sq = s.sk = 6;
  s.d = s.e = 2;
  const Task t = task_of(tier_tasks_of(s, {"online_softmax=true"}), "normalizer-sum");
  EngineOptions o = options("exp-ulp");
  o.limits.exp_ulp = 0.4;
  const Verdict v = discharge(t, o);
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_NE(v.message.find("not confirmed"), std::string::npos) << v.message;
}

// The fold's O stored as x - (+0): x bit for bit for every x (-0 and NaN included), so no input
// refutes it, but not the fold's recurrence the bound is about.
TEST(OnlineSoftmaxCheckerDecisions, AFoldOutputThatIsNotTheFoldsRecurrenceIsNotBounded) {
  Task t = causal_fold_output();
  ASSERT_EQ(discharge(t, options("fold-output-ok")).kind, VerdictKind::Bounded);
  const std::string store = "div.f32(os_block_numerator_o[os_e, b, s, h], os_norm_row_sum)";
  t.tgt = edited(t.tgt, store, "sub.f32(" + store + ", 0:f32)");
  const Verdict v = discharge(t, options("fold-output"));
  EXPECT_NE(steps_text(v).find("(i) recurrence not established"), std::string::npos) << steps_text(v);
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_EQ(v.reason, UnknownReason::Approximation);
  EXPECT_NE(v.message.find("not the fold's recurrence the bound is about"), std::string::npos) << v.message;
}

// The fold's O off by 1e-30 where its numerator is exactly 0.125: a wrong target, but only on inputs
// no search draws, and inside the bound even there. Only the identity stands between it and
// *bounded*.
TEST(OnlineSoftmaxCheckerDecisions, AFoldOutputWrongOnARareInputIsNotBounded) {
  Task t = causal_fold_output();
  const std::string store = "div.f32(os_block_numerator_o[os_e, b, s, h], os_norm_row_sum)";
  t.tgt = edited(t.tgt, store,
                 "sub.f32(" + store + ", where.f32(eq.f32(os_block_numerator_o[os_e, b, s, h], 0.125:f32), "
                 "1e-30:f32, 0:f32))");
  const Verdict v = discharge(t, options("fold-output-rare"));
  EXPECT_NE(steps_text(v).find("(i) recurrence not established"), std::string::npos) << steps_text(v);
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_EQ(v.reason, UnknownReason::Approximation);
}

// A budget that stops the identity says which budget, and never reads like a refutation. (The
// target stores O on every block from the last on: right at these sizes only, so the all-sizes lift
// refuses it, names why, and the identity at the routine's sizes runs.)
TEST(OnlineSoftmaxCheckerDecisions, ABudgetThatStopsTheFoldsIdentityIsNamed) {
  Task t = causal_fold_output();
  t.tgt = edited(t.tgt, "if eq.i32(idx.i32(os_block_t), 2:i32) {", "if lt.i32(1:i32, idx.i32(os_block_t)) {");
  EngineOptions o = options("fold-budget");
  o.limits.max_terms = 50;
  const Verdict v = discharge(t, o);
  EXPECT_NE(steps_text(v).find("the structural lift does not hold (O's store is not guarded by the last block)"),
            std::string::npos)
      << steps_text(v);
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_EQ(v.reason, UnknownReason::ResourceLimit);
  EXPECT_NE(v.message.find("could not be established"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("--max-terms 50"), std::string::npos) << v.message;
  EXPECT_EQ(v.message.find("is not the fold's recurrence"), std::string::npos) << v.message;
}

// A fold that skips the exponentials of every block whose *first* key is masked — still taking the
// block's scores into the running max — under a mask (key >= query) that leaves a later key of such a
// block live: row 1's first block [masked, live] adds nothing although key 1 counts. The checker
// models a skip only for a block whose every cell is -inf, so its recurrence check must fail;
// deciding from the first key alone would call this fold's row state the recurrence (and only the
// differential would then catch it, on inputs where the live key matters).
Routine skipping_on_the_first_key(const Routine& fold) {
  std::string text = print_routine(fold);
  const std::string guard = "if lt.i32(idx.i32(2*os_block_t), idx.i32(s + 3)) {\n";
  const std::size_t body = text.find(guard);
  EXPECT_NE(body, std::string::npos) << text;
  // The computed block's scores and running max, up to its floor.
  const std::size_t from = body + guard.size();
  const std::size_t to = text.rfind('\n', text.find("os_floor_row_max := max.f32(os_block_max_row_max", from)) + 1;
  const std::string scores_and_max = text.substr(from, to - from);
  // The skip branch takes them too, instead of keeping the previous maximum.
  const std::string keep_max = "            os_block_max_row_max := os_m_prev_row_max\n";
  const std::size_t skip = text.find(keep_max, text.find("if eq.i32(lt.i32(idx.i32(2*os_block_t), idx.i32(s + 3)), 0:i32)"));
  EXPECT_NE(skip, std::string::npos) << text;
  text.replace(skip, keep_max.size(), scores_and_max);
  const Routine out = parse_routine(text, "skipping.fp");
  // The causal mask (key <= query + 2) becomes key >= query; the guard keeps testing the first key.
  return edited(edited(out, "lt.i32(idx.i32(2*os_block_t + os_key_t), idx.i32(s + 3))",
                       "lt.i32(idx.i32(s), idx.i32(2*os_block_t + os_key_t + 1))"),
                "lt.i32(idx.i32(2*os_block_t), idx.i32(s + 3))", "lt.i32(idx.i32(s), idx.i32(2*os_block_t + 1))");
}

TEST(OnlineSoftmaxCheckerDecisions, AFoldSkippingABlockWithALiveLaterKeyIsNotItsRecurrence) {
  Task t = causal_fold_output();
  t.src = edited(t.src, "lt.i32(idx.i32(t), idx.i32(s + 3))", "lt.i32(idx.i32(s), idx.i32(t + 1))");
  t.tgt = skipping_on_the_first_key(t.tgt);
  const Verdict v = discharge(t, options("skip-first-key"));
  EXPECT_NE(steps_text(v).find("(i) recurrence not established"), std::string::npos) << steps_text(v);
  EXPECT_EQ(steps_text(v).find("skip their row's fully masked blocks"), std::string::npos) << steps_text(v);
  EXPECT_NE(v.kind, VerdictKind::Bounded) << v.message;
}

// The fused backward's bound holds only with its formula proved (the γ calculus and the assembly,
// Z3 over the reals): a resource limit that leaves them undecided leaves the gradient unknown.
TEST(OnlineSoftmaxCheckerDecisions, AGradientWhoseBoundFormulaIsUnprovedIsNotBounded) {
  AttentionSpec s;
  s.sq = s.sk = 3;
  s.d = s.e = 2;
  s.train = true;
  const std::vector<Task> ts = tier_tasks_of(s, {"online_softmax=true", "online_softmax_backward=true"});
  EngineOptions o = options("formula");
  ASSERT_EQ(discharge(task_of(ts, "backward-dq"), o).kind, VerdictKind::Bounded);
  o.limits.rlimit = 1;
  const Verdict v = discharge(task_of(ts, "backward-dq"), o);
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_NE(v.message.find("the bound's formula was not proved"), std::string::npos) << v.message;
}


// The fused backward's three gradients of a training step with several blocks and a tail are
// decided for every size: dV exact, dQ and dK bounded, the bound stated at the routine's sizes.
TEST(OnlineSoftmaxCheckerDecisions, TheFusedBackwardsGradientsAreDecidedForEverySize) {
  const std::vector<Task> ts =
      tier_tasks_of(training_step(67, "causal"), {"online_softmax=true", "online_softmax_backward=true"});
  const EngineOptions o = options("backward-all-sizes");
  const Verdict dv = discharge(task_of(ts, "backward-dv"), o);
  EXPECT_EQ(dv.kind, VerdictKind::Exact) << dv.message;
  EXPECT_TRUE(dv.scope.all_sizes) << dv.message;
  for (const char* claim : {"backward-dq", "backward-dk"}) {
    SCOPED_TRACE(claim);
    const Verdict v = discharge(task_of(ts, claim), o);
    EXPECT_EQ(v.kind, VerdictKind::Bounded) << v.message;
    EXPECT_TRUE(v.scope.all_sizes) << v.message;
    EXPECT_NE(v.scope.text.find("n = 67 keys, E = 2 value columns, m = 67 terms"), std::string::npos) << v.scope.text;
    EXPECT_NE(v.message.find("at reduced sizes"), std::string::npos) << v.message;
  }
}

// Where the lift does not apply (ds at f32 over an f16 line), the gradient is still decided at the
// routine's sizes, and the verdict says why it is not for every size.
TEST(OnlineSoftmaxCheckerDecisions, AGradientTheLiftDoesNotCoverIsBoundedAtItsSizesWithTheReason) {
  const std::vector<Task> ts =
      tier_tasks_of(training_step(3, "none", Prec::F16), {"online_softmax=true", "online_softmax_backward=true"});
  const Verdict v = discharge(task_of(ts, "backward-dk"), options("backward-f16"));
  EXPECT_EQ(v.kind, VerdictKind::Bounded) << v.message;
  EXPECT_FALSE(v.scope.all_sizes);
  EXPECT_NE(v.message.find("all-sizes lift not established (the block's score gradient is computed at f32"),
            std::string::npos)
      << v.message;
}

// With the fused backward in round 1, the fold's round-2 source holds the backward's blocks, whose
// sizes are hard-coded: its cross-check instance is shrunk through the routine the tier ran on
// (it once fell back to the routine's own sizes: a 144 GiB concrete check on the 24-layer model).
TEST(OnlineSoftmaxCheckerDecisions, AFoldAfterTheFusedBackwardIsCrossCheckedOnAShrunkInstance) {
  const std::vector<Task> ts = tier_tasks_of(training_step(70, "causal"),
                                             {"online_softmax=true", "online_softmax_backward=true", "online_softmax_block=16"});
  const Task& t = task_of(ts, "fold-max");
  const Verdict v = discharge(t, options("fold-after-backward"));
  EXPECT_EQ(v.kind, VerdictKind::Exact) << v.message;
  EXPECT_TRUE(v.scope.all_sizes);
  EXPECT_NE(v.message.find("at reduced sizes (70→"), std::string::npos) << v.message;
}

// A stacked training step's fold changes a layer's O as well as its l: the next layer reads O, so
// the l-gradient of the layer below (computed from the upstream gradient) moves by O's change too.
// The sum's downstream plan must not charge that to l's REL (it once refuted every fold-sum but
// the last layer's, at the routine's own sizes and on the all-sizes instance alike).
TEST(OnlineSoftmaxCheckerDecisions, AStackedFoldsSumIsNotRefutedThroughTheNextLayersInput) {
  AttentionSpec s;
  s.layers = 3;
  s.heads = 4;
  s.sq = s.sk = 4;
  s.d = s.e = 4;
  s.mask = "causal";
  s.train = true;
  const std::vector<Task> tasks = tier_tasks_of(s, {"online_softmax=true", "online_softmax_block=3"});
  int sums = 0;
  for (const Task& t : tasks) {
    if (t.obligation.claim != "fold-sum") continue;
    ++sums;
    SCOPED_TRACE(t.id);
    const Verdict v = discharge(t, options("stacked-fold-sum-" + t.id));
    EXPECT_EQ(v.kind, VerdictKind::Bounded) << v.message;
    EXPECT_NE(steps_text(v).find("changed by the same rewrite under another claim"), std::string::npos)
        << steps_text(v);
  }
  EXPECT_EQ(sums, 3);
}


// The fold's cross-checks run on an instance the tier re-emits only when the target is what the
// tier emits: a target the lift covers but the tier did not write (here its numerator renamed) is
// cross-checked at its own sizes, never through a re-emission that is not it.
TEST(OnlineSoftmaxCheckerDecisions, ALiftedTargetTheTierDidNotEmitIsCrossCheckedAtItsOwnSizes) {
  Task t = causal_fold_output();
  t.tgt = edited(t.tgt, "os_block_numerator_o", "my_numerator");
  const Verdict v = discharge(t, options("fold-not-emitted"));
  EXPECT_EQ(v.kind, VerdictKind::Bounded) << v.message;
  EXPECT_TRUE(v.scope.all_sizes) << v.scope.text;
  ASSERT_TRUE(v.bound.has_value());
  std::string differential;
  for (const auto& p : v.bound->parts)
    if (p.name == "differential") differential = p.detail;
  EXPECT_EQ(differential.rfind("routine's own random inputs", 0), 0u) << differential;
}

}  // namespace
}  // namespace fp::verify
