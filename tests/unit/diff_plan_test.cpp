// `flashproof diff --rewrite`'s comparison plan (tools/diff_report.h): the rewritten attention's
// output is held to verify's certified per-cell bound (Σ|P·v| from the instrumented original),
// which the real rewrite satisfies and planted bugs in it violate; an output two bounded claims
// perturb (a second layer) falls back to the stand-in, never to a certified statement that does
// not apply to it.

#include <gtest/gtest.h>

#include "frontend/attention.h"
#include "core/interpreter.h"
#include "core/random_inputs.h"
#include "rewrites/tier.h"
#include "tensor_expect.h"
#include "tools/diff_report.h"
#include "rewrites/online_softmax/mutants.h"

namespace fp::cli {
namespace {

struct Rewritten {
  Routine original;
  RewriteResult result;
};

Rewritten rewrite_attention(int layers, Prec prec = Prec::F32, const std::string& block = "") {
  AttentionSpec s;
  s.sq = 6;
  s.sk = 12;
  s.d = s.e = 4;
  s.mask = "causal";
  s.layers = layers;
  s.precision = prec;
  Config cfg;
  cfg.set("online_softmax", "true");
  if (!block.empty()) cfg.set("online_softmax_block", block);
  Rewritten r{build_attention(s), {}};
  r.result = run_tier(r.original, cfg, {});
  return r;
}

// Compares output `node` of `tgt` against the plan's instrumented original on seed `seed`.
verify::OutputComparison compare_on(const verify::RewriteDiffPlan& plan, const Routine& tgt, const std::string& node,
                                    std::uint64_t seed) {
  const TensorMap in = random_inputs(plan.source, seed);
  return verify::compare_output(plan.certified.at(node), interpret(plan.source, in), interpret(tgt, in));
}

TEST(DiffPlan, OneLayerOutputIsCertifiedPerCellAndTheRewriteIsInside) {
  const Rewritten r = rewrite_attention(1);
  const verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  ASSERT_EQ(plan.certified.count("o"), 1u);
  EXPECT_EQ(plan.certified.at("o").kind, verify::NodeCheck::Kind::Scaled);
  EXPECT_TRUE(plan.stand_in.empty());
  EXPECT_NE(plan.statements.at("o").find("Σ|w·v|"), std::string::npos);
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const verify::OutputComparison c = compare_on(plan, r.result.routine, "o", seed);
    EXPECT_TRUE(c.ok()) << seed << ": " << (c.first ? c.first->why : "");
    EXPECT_STREQ(verify::comparison_basis_name(c.check.kind), "certified");
    EXPECT_LE(c.max_ratio(), 1.0);
  }
}

TEST(DiffPlan, PlantedBugsInTheRewriteAreMismatches) {
  const Rewritten r = rewrite_attention(1);
  const verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  int checked = 0;
  for (const Mutant& m : osm::normalizer_scan_mutants(r.result.routine)) {
    if (m.id != "narrowed-state" && m.id != "off-by-one-end" && m.id != "off-by-one-start") continue;
    ++checked;
    const verify::OutputComparison c = compare_on(plan, m.tgt, "o", 1);
    EXPECT_FALSE(c.ok()) << m.id << ": worst " << c.max_ratio();
    EXPECT_STREQ(verify::comparison_basis_name(c.check.kind), "certified") << m.id;
  }
  EXPECT_EQ(checked, 3);
}

TEST(DiffPlan, AnOutputTwoBoundedClaimsReachGetsTheStandIn) {
  const Rewritten r = rewrite_attention(2);
  const verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  EXPECT_EQ(plan.certified.count("o"), 0u);
  EXPECT_EQ(plan.stand_in.count("o"), 1u);
  EXPECT_GT(plan.stand_in_bound, 0);
  bool noted = false;
  for (const auto& n : plan.notes) noted = noted || n == "o: perturbed by more than one bounded claim";
  EXPECT_TRUE(noted);
}

// The block fold's claims: one layer's output keeps its certified check (fold-sum and
// fold-output of one application are stated jointly); the second of two folded layers is fed the
// first's perturbed output — through its scores, not through a node the first fold's plan names —
// and gets the stand-in. (Found by `flashproof fuzz rewrite`: a first layer's numerator overflow,
// inside its claim, made the second layer's output NaN, and the plan had certified it.)
TEST(DiffPlan, TheSecondOfTwoFoldedLayersGetsTheStandIn) {
  const Rewritten one = rewrite_attention(1, Prec::F32, "1");
  const verify::RewriteDiffPlan p1 = verify::plan_rewrite_diff(one.original, one.result);
  EXPECT_EQ(p1.certified.count("o"), 1u);
  EXPECT_TRUE(p1.stand_in.empty());
  const Rewritten two = rewrite_attention(2, Prec::F32, "1");
  const verify::RewriteDiffPlan p2 = verify::plan_rewrite_diff(two.original, two.result);
  EXPECT_EQ(p2.certified.count("o"), 0u);
  EXPECT_EQ(p2.stand_in.count("o"), 1u);
}

TEST(DiffPlan, InstrumentingTheOriginalChangesNoneOfItsOutputs) {
  const Rewritten r = rewrite_attention(1, Prec::F16);
  const verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  const TensorMap in = random_inputs(r.original, 3);
  const TensorMap a = interpret(r.original, in), b = interpret(plan.source, in);
  for (const Node* n : r.original.outputs())
    EXPECT_TRUE(testing::bitwise_equal(a.at(n->name), b.at(n->name), n->name));
}

}  // namespace
}  // namespace fp::cli
