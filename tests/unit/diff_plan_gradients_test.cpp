// `flashproof diff --rewrite` on training steps (verify/fused_backward_diff_plan.h, docs/bounds.md
// §8.1): the fused backward's gradients are held to the certified per-cell bound, with the forward's
// certified perturbation of l and O carried through when the two-pass or fold forward is rewritten
// too (then dV as well; without a forward rewrite dV stays bitwise). The real rewrite is inside the
// bound on every configuration; the fused backward's planted mutants and a forward far less accurate
// than its claim are mismatches; a layer whose backward reads what another rewrite perturbs without a
// certified bound (stacked layers) falls back to the stand-in.

#include <gtest/gtest.h>

#include "core/interpreter.h"
#include "core/random_inputs.h"
#include "frontend/attention.h"
#include "online_softmax_fixtures.h"
#include "rewrites/online_softmax/fused_backward.h"
#include "rewrites/online_softmax/mutants.h"
#include "rewrites/tier.h"
#include "tensor_expect.h"
#include "verify/diff_plan.h"

namespace fp {
namespace {

struct Rewritten {
  Routine original;
  RewriteResult result;
};

// The tier's rewrite of `s` with the fused backward and the forward in blocks of `block` ("" the
// two-pass forward, "none" no forward rewrite).
Rewritten rewrite_step(const AttentionSpec& s, const std::string& block) {
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_backward", "true");
  if (!block.empty() && block != "none") c.set("online_softmax_block", block);
  TierOptions opts;
  if (block == "none") opts.only = {osm::kFusedBackwardId};
  Rewritten r{build_attention(s), {}};
  r.result = run_tier(r.original, c, opts);
  return r;
}

// The first run of diff (the plan's instrumented original, completed) and the second (`tgt`).
std::pair<TensorMap, TensorMap> runs(verify::RewriteDiffPlan& plan, const Routine& tgt,
                                     std::uint64_t seed) {
  const TensorMap in = random_inputs(plan.source, seed);
  TensorMap a = interpret(plan.source, in);
  plan.complete(a, [](const Routine& r, const TensorMap& inputs) { return interpret(r, inputs); });
  return {std::move(a), interpret(tgt, in)};
}

const char* const kGradients[] = {"grad_q", "grad_k", "grad_v"};

struct StepCase {
  std::string name;
  AttentionSpec spec;
  std::string block;
};

TEST(DiffPlanGradients, EveryGradientIsCertifiedAndTheRewriteIsInside) {
  const std::vector<StepCase> cases = {
      {"f32 causal, fold B=4", ostest::one_head_training_step(Prec::F32, "causal", 6, 12, 4, 5), "4"},
      {"f32 none, two-pass", ostest::one_head_training_step(Prec::F32, "none", 7, 9, 3, 4), ""},
      {"f32 causal 12x8 (fully masked rows), fold B=3",
       ostest::one_head_training_step(Prec::F32, "causal", 12, 8, 4, 4), "3"},
      {"f32 causal 12x8, finite fill, two-pass",
       ostest::one_head_training_step(Prec::F32, "causal", 12, 8, 4, 4, "-1e4"), ""},
      {"f16 padding:3, fold B=3", ostest::one_head_training_step(Prec::F16, "padding:3", 6, 10, 4, 4), "3"},
      {"bf16 causal, two-pass", ostest::one_head_training_step(Prec::BF16, "causal", 6, 8, 4, 4), ""},
      {"f64 none, fold B=5", ostest::one_head_training_step(Prec::F64, "none", 5, 11, 3, 3), "5"},
      {"f32 causal, the fused backward alone",
       ostest::one_head_training_step(Prec::F32, "causal", 6, 9, 4, 4), "none"},
  };
  for (const StepCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Rewritten r = rewrite_step(c.spec, c.block);
    verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
    EXPECT_TRUE(plan.stand_in.empty());
    for (const std::string& n : plan.notes) ADD_FAILURE() << "note: " << n;
    for (const char* g : kGradients) {
      const bool exact = c.block == "none" && std::string(g) == "grad_v";  // backward-dv alone: bitwise
      ASSERT_EQ(plan.certified.count(g), exact ? 0u : 1u) << g;
      if (!exact) {
        EXPECT_NE(plan.statements.at(g).find("§8"), std::string::npos);
      }
    }
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const auto [a, b] = runs(plan, r.result.routine, seed);
      for (const char* g : kGradients) {
        const verify::OutputComparison cmp = verify::compare_output(plan.check_for(g), a, b);
        EXPECT_TRUE(cmp.ok()) << g << " seed " << seed << ": " << (cmp.first ? cmp.first->text() : "");
      }
      // Instrumenting the original changes none of its outputs.
      const TensorMap plain = interpret(r.original, random_inputs(plan.source, seed));
      for (const Node* n : r.original.outputs())
        EXPECT_TRUE(testing::bitwise_equal(plain.at(n->name), a.at(n->name), n->name));
    }
  }
}

// Whether any gradient of `tgt` leaves its certified check on seeds 1..4.
bool leaves_the_bound(verify::RewriteDiffPlan plan, const Routine& tgt) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto [a, b] = runs(plan, tgt, seed);
    for (const char* g : kGradients)
      if (plan.certified.count(g) && !verify::compare_output(plan.check_for(g), a, b).ok()) return true;
  }
  return false;
}

TEST(DiffPlanGradients, PlantedMutantsOfTheFusedBackwardAreMismatches) {
  // sq = sk: some mutants read one side's rows with the other's index (well formed only then). A
  // finite fill of -1 keeps masked probabilities well above 0, so dropping the mask from ds shows.
  const Rewritten r =
      rewrite_step(ostest::one_head_training_step(Prec::F32, "causal", 5, 5, 3, 4, "-1"), "2");
  verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  ASSERT_EQ(plan.certified.size(), 3u);
  const Application* app = nullptr;
  for (const Application& a : r.result.applications)
    if (a.shape == osm::kFusedBackwardId) app = &a;
  ASSERT_NE(app, nullptr);
  const std::vector<Mutant> mutants = osm::fused_backward_mutants(r.result.routine, *app);
  ASSERT_GE(mutants.size(), 10u);
  for (const Mutant& m : mutants) EXPECT_TRUE(leaves_the_bound(plan, m.tgt)) << m.id << ": " << m.description;
}

// A forward far less accurate than its claim (l scaled by 1 + 2^-12 before the backward reads it):
// the gradients leave their bounds, which carry only the forward's certified perturbation.
TEST(DiffPlanGradients, AForwardOutsideItsClaimIsAMismatch) {
  const Rewritten r = rewrite_step(ostest::one_head_training_step(Prec::F32, "none", 6, 10, 4, 4), "4");
  verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  const Routine tgt = ostest::scaled_before_backward(r.result.routine, {"row_sum"}, 1 + 0x1p-12);
  EXPECT_FALSE(leaves_the_bound(plan, r.result.routine));
  EXPECT_TRUE(leaves_the_bound(plan, tgt));
}

// Two stacked layers: layer 1's output gradient comes from layer 2's rewritten backward and layer
// 2's scores from layer 1's rewritten forward; neither perturbation has a certified bound at those
// nodes, so those gradients get the stand-in with a note, never a certified check that does not apply.
TEST(DiffPlanGradients, GradientsFedByAnotherRewriteGetTheStandIn) {
  AttentionSpec s = ostest::one_head_training_step(Prec::F32, "causal", 6, 6, 4, 4);
  s.layers = 2;
  const Rewritten r = rewrite_step(s, "2");
  verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  EXPECT_FALSE(plan.stand_in.empty());
  bool noted = false;
  for (const std::string& n : plan.notes)
    noted = noted || n.find("perturbed by another rewrite") != std::string::npos;
  EXPECT_TRUE(noted);
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const auto [a, b] = runs(plan, r.result.routine, seed);
    for (const Node* n : r.result.routine.outputs()) {
      const verify::OutputComparison cmp = verify::compare_output(plan.check_for(n->name), a, b);
      if (cmp.check.kind != verify::NodeCheck::Kind::StandIn) {
        EXPECT_TRUE(cmp.ok()) << n->name << " seed " << seed << ": " << (cmp.first ? cmp.first->text() : "");
      }
    }
  }
}

}  // namespace
}  // namespace fp

namespace fp {
namespace {

// A non-finite input (dO = -inf in one row) puts that row outside every statement of the bound:
// the composed and the fused forms need not agree on NaN there, so the gradients lose their
// certified check on that run and are compared with the stand-in, with a note (the fuzz finding
// rewrite-f32-backward-inf-output-gradient).
TEST(DiffPlanGradients, ANonFiniteInputLeavesTheGradientsWithoutACertifiedStatement) {
  const Rewritten r = rewrite_step(ostest::one_head_training_step(Prec::F32, "none", 4, 5, 3, 4), "2");
  verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  ASSERT_EQ(plan.certified.size(), 3u);
  TensorMap in = random_inputs(plan.source, 1);
  in.at("dout").data[5] = -INFINITY;
  TensorMap a = interpret(plan.source, in);
  plan.complete(a, [](const Routine& x, const TensorMap& inputs) { return interpret(x, inputs); });
  EXPECT_TRUE(plan.certified.empty());
  for (const char* g : kGradients) EXPECT_EQ(plan.stand_in.count(g), 1u) << g;
  int noted = 0;
  for (const std::string& n : plan.notes) noted += n.find("non-finite values") != std::string::npos;
  EXPECT_EQ(noted, 3);
}

}  // namespace
}  // namespace fp
