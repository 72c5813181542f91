// The chain every executing command runs (pipeline/): the tier with its output re-checked, and the
// config reaching the executors through one call.
#include <gtest/gtest.h>

#include <string>

#include "core/ir_visit.h"
#include "core/text_parser.h"
#include "exec/run_memory.h"
#include "online_softmax_fixtures.h"
#include "pipeline/checked_tier.h"
#include "pipeline/prepared_program.h"

namespace fp {
namespace {

using ostest::lit_routine;

Config online_softmax_on(const std::vector<std::string>& more = {}) {
  std::vector<std::string> settings{"online_softmax=true"};
  settings.insert(settings.end(), more.begin(), more.end());
  return make_config("", settings, {});
}

int scans(const Routine& r) {
  int n = 0;
  for_each_stmt(r.body, [&](const Stmt& s) { n += s.kind == StmtKind::Scan; });
  return n;
}

// What `run` and `verify` both reject: a tier output that the checker refuses is a bug, named as
// such, never handed on.
TEST(CheckedTier, MalformedTierOutputIsAnInternalErrorNamingTheProblem) {
  RewriteResult bad;
  bad.routine = parse_routine(
      "routine r {\n  node x : f32[4] materialized input\n  node y : f32[4] materialized output\n"
      "  for i in 0..3 {\n    y[i] = x[i + 1]\n  }\n}\n",
      "bad.fp");
  try {
    check_tier_output(bad);
    FAIL() << "a malformed tier output was accepted";
  } catch (const MalformedRewrite& e) {
    EXPECT_NE(std::string(e.what()).find("the rewritten routine is malformed:"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("within 0..3"), std::string::npos) << e.what();
  }
  // It is a logic_error like TierDidNotConverge: main() reports both as internal errors (exit 70).
  EXPECT_THROW(check_tier_output(bad), std::logic_error);
}

TEST(CheckedTier, WellFormedOutputPassesAndIsTheTiersResult) {
  const Routine r = lit_routine("apply-basic.fp");
  const RewriteResult checked = run_tier_checked(r, online_softmax_on());
  const RewriteResult plain = run_tier(r, online_softmax_on());
  EXPECT_TRUE(equal(checked.routine, plain.routine));
  EXPECT_EQ(checked.applications.size(), plain.applications.size());
  EXPECT_GT(scans(checked.routine), 0);
}

TEST(PreparedProgram, RunsTheTierAndTakesPlacementFromTheConfig) {
  const Routine r = lit_routine("apply-basic.fp");
  PrepareOptions o;
  o.source_name = "apply-basic.fp";
  o.threads = 3;
  const PreparedProgram p = prepare_program(r, online_softmax_on({"virtualize_max_inline_reduction=64"}), o);
  ASSERT_TRUE(p.tier.has_value());
  EXPECT_TRUE(equal(p.routine, p.tier->routine));
  EXPECT_GT(scans(p.routine), 0);
  EXPECT_EQ(p.exec.placement.max_inline_reduction, 64);
  EXPECT_EQ(p.exec.threads, 3);
  EXPECT_EQ(p.exec.source_name, "apply-basic.fp");
  // exec_options alone is the same mapping (bench makes its executor before any routine exists).
  const ExecOptions eo = exec_options(online_softmax_on({"virtualize_max_inline_reduction=64"}), "x", 3);
  EXPECT_EQ(eo.placement.max_inline_reduction, p.exec.placement.max_inline_reduction);
  EXPECT_EQ(placement_config(make_config("", {}, {})).max_inline_reduction, 16);
}

TEST(PreparedProgram, WithoutRewriteTheRoutineRunsAsGiven) {
  const Routine r = lit_routine("apply-basic.fp");
  PrepareOptions o;
  o.rewrite = false;
  const PreparedProgram p = prepare_program(r, online_softmax_on(), o);
  EXPECT_FALSE(p.tier.has_value());
  EXPECT_TRUE(equal(p.routine, r));
}

// verify's trials: each pair holds its source and target at once, `jobs` pairs side by side.
TEST(ParallelPairsMemory, CountsTheBiggestPairsThatRunAtOnce) {
  const Routine small = parse_routine(
      "routine s {\n  node x : f32[10] materialized input\n  node o : f32[10] materialized output\n"
      "  zero o\n}\n",
      "s.fp");
  const Routine big = parse_routine(
      "routine b {\n  node x : f32[1000] materialized input\n  node o : f32[1000] materialized output\n"
      "  zero o\n}\n",
      "b.fp");
  const auto pair_bytes = [](const Routine& r) {
    return combine({estimate_run_memory(r, "interp", {}), estimate_run_memory(r, "interp", {}, true)}, "")
        .bytes;
  };
  const std::vector<std::pair<const Routine*, const Routine*>> pairs{{&small, &small}, {&big, &big}};
  EXPECT_EQ(parallel_pairs_memory(pairs, "interp", 1, "one").bytes, pair_bytes(big));
  EXPECT_EQ(parallel_pairs_memory(pairs, "interp", 2, "two").bytes, pair_bytes(big) + pair_bytes(small));
  EXPECT_EQ(parallel_pairs_memory(pairs, "interp", 8, "eight").bytes, pair_bytes(big) + pair_bytes(small));
  EXPECT_EQ(parallel_pairs_memory(pairs, "interp", 1, "one").basis, "one");
  EXPECT_EQ(parallel_pairs_memory({}, "interp", 1, "none").bytes, 0);
}

}  // namespace
}  // namespace fp
