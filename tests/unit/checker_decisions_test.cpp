// The engine's soundness-critical decisions, each with a case where only that decision stands
// between a target and a wrong verdict (docs/verify.md, "Checker mutants": scripts/mutants plants
// the opposite decision and these tests must fail then). A solver that cannot decide gives
// unknown, never a proof.

#include <gtest/gtest.h>

#include <string>

#include "core/text_parser.h"
#include "verify/engine.h"
#include "verify/loop_permutation_lift.h"
#include "verify_fixtures.h"

namespace fp::verify {
namespace {

Routine pair_routine(const std::string& name) {
  return parse_routine_file(std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit/verify/pairs/" + name);
}

Task pair_of(const std::string& name, const std::string& claim) {
  return pair_task(pair_routine(name + ".src.fp"), pair_routine(name + ".tgt.fp"), claim, name + ".tgt.fp",
                   "flashproof verify --src " + name + ".src.fp --tgt " + name + ".tgt.fp");
}

std::string steps_text(const Verdict& v) {
  std::string s;
  for (const auto& step : v.steps) s += step + "\n";
  return s;
}

// max reassociates bit for bit, but as terms the two sides differ: the solver decides it. With a
// resource limit of 1 it cannot, and the verdict says so.
TEST(CheckerDecisions, PairCellsTheSolverCannotDecideAreUnknownNotExact) {
  const Task t = pair_of("max-reassociation", "exact");
  EngineOptions o = testing::engine_options("decisions-exact");
  const Verdict proved = discharge(t, o);
  ASSERT_EQ(proved.kind, VerdictKind::Exact) << proved.message;
  ASSERT_NE(steps_text(proved).find("Z3: cells"), std::string::npos) << "the pair never reached the solver";
  o.limits.rlimit = 1;
  const Verdict v = discharge(t, o);
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_EQ(v.reason, UnknownReason::ResourceLimit);
  EXPECT_NE(v.message.find("Z3 could not decide"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("--rlimit 1"), std::string::npos) << v.message;  // which budget, and how to raise it
}

TEST(CheckerDecisions, PairCellsTheSolverCannotDecideAreUnknownNotBounded) {
  const Task t = pair_of("max-reassociation", "bounded:1e-9");
  EngineOptions o = testing::engine_options("decisions-bounded");
  ASSERT_EQ(discharge(t, o).kind, VerdictKind::Bounded);
  o.limits.rlimit = 1;
  const Verdict v = discharge(t, o);
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_EQ(v.reason, UnknownReason::ResourceLimit);
}

// The loop-permutation lift holds only on facts Z3 proved: undecided facts leave it unproved (and the
// verdict scoped to the routine's own sizes). A value pass no other test of this binary lifts first
// (the order facts are memoized by content when decided).
TEST(CheckerDecisions, ALoopPermutationWhoseFactsAreUndecidedIsNotLifted) {
  AttentionSpec s;
  s.sq = 3;
  s.sk = 7;
  s.d = 5;
  s.e = 6;
  s.heads = 3;
  std::vector<Task> hoists;
  for (const Task& t : testing::attention_tasks(s))
    if (t.obligation.claim == "value-pass") hoists.push_back(t);
  ASSERT_EQ(hoists.size(), 1u);
  Limits undecided;
  undecided.rlimit = 1;
  const LiftResult lift = lift_loop_permutation(hoists[0].src, hoists[0].tgt, hoists[0].app, undecided, "");
  EXPECT_FALSE(lift.proved) << lift.why_not;
  EXPECT_TRUE(lift.unknown) << lift.why_not;
  EngineOptions o = testing::engine_options("decisions-lift");
  o.limits.rlimit = 1;
  const Verdict v = discharge(hoists[0], o);
  EXPECT_FALSE(v.scope.all_sizes) << v.scope.text;
}

}  // namespace
}  // namespace fp::verify
