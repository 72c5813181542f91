// `flashproof diff --rewrite` on training steps (verify/online_softmax/fused_backward_diff_plan.h, docs/bounds.md
// §8.1): the fused backward's gradients are held to the certified per-cell bound, with the forward's
// certified perturbation of l and O carried through when the two-pass or fold forward is rewritten
// too (then dV as well; without a forward rewrite dV stays bitwise). The real rewrite is inside the
// bound on every configuration; the fused backward's planted mutants and a forward far less accurate
// than its claim are mismatches; a layer whose backward reads what another rewrite perturbs without a
// certified bound (stacked layers) falls back to the stand-in.

#include <gtest/gtest.h>

#include "core/checker.h"
#include "core/interpreter.h"
#include "core/random_inputs.h"
#include "frontend/attention.h"
#include "online_softmax_fixtures.h"
#include "rewrites/online_softmax/fused_backward.h"
#include "rewrites/online_softmax/mutants.h"
#include "rewrites/tier.h"
#include "tensor_expect.h"
#include "verify/accumulation_bound.h"
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

namespace fp {
namespace {

AttentionSpec self_attention_step(Prec p, const std::string& mask, std::int64_t seq, std::int64_t heads,
                                  const std::string& fill = "-inf") {
  AttentionSpec s = ostest::one_head_training_step(p, mask, seq, seq, 4, 4, fill);
  s.leaf = false;
  s.heads = heads;
  s.dmodel = 6;
  return s;
}

// A self-attention step (projections in and out): its outputs are the projections' gradients and
// grad_x, which only accumulate products of dQ, dK, dV or O with unperturbed values. Each gets a
// bound carried from those factors' certified checks (verify/accumulation_bound.h); the real
// rewrite is inside it, and the fused backward's planted mutants leave it.
TEST(DiffPlanGradients, ProjectionGradientsCarryTheirFactorsBounds) {
  for (const auto& [s, block] : {std::pair{self_attention_step(Prec::F32, "causal", 8, 2), std::string("3")},
                                 {self_attention_step(Prec::F32, "none", 7, 1), std::string("")},
                                 {self_attention_step(Prec::F16, "causal", 6, 2), std::string("4")}}) {
    SCOPED_TRACE(block);
    const Rewritten r = rewrite_step(s, block);
    verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
    EXPECT_TRUE(plan.stand_in.empty());
    for (const std::string& n : plan.notes) ADD_FAILURE() << "note: " << n;
    for (const Node* n : r.result.routine.outputs()) {
      ASSERT_EQ(plan.certified.count(n->name), 1u) << n->name;
      EXPECT_NE(plan.statements.at(n->name).find("carried from the certified bounds"), std::string::npos);
    }
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const auto [a, b] = runs(plan, r.result.routine, seed);
      for (const Node* n : r.result.routine.outputs()) {
        const verify::OutputComparison cmp = verify::compare_output(plan.check_for(n->name), a, b);
        EXPECT_TRUE(cmp.ok()) << n->name << " seed " << seed << ": " << (cmp.first ? cmp.first->text() : "");
      }
    }
  }
  // A finite fill of -1: dropping the mask from ds shows (under -inf the masked p is 0).
  const Rewritten r = rewrite_step(self_attention_step(Prec::F32, "causal", 5, 1, "-1"), "2");
  const verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  const Application* app = nullptr;
  for (const Application& x : r.result.applications)
    if (x.shape == osm::kFusedBackwardId) app = &x;
  ASSERT_NE(app, nullptr);
  int caught = 0, total = 0;
  for (const Mutant& m : osm::fused_backward_mutants(r.result.routine, *app)) {
    if (!check_routine(m.tgt).empty()) continue;
    ++total;
    bool out = false;
    for (std::uint64_t seed = 1; seed <= 4 && !out; ++seed) {
      verify::RewriteDiffPlan p = plan;
      const auto [a, b] = runs(p, m.tgt, seed);
      for (const Node* n : r.result.routine.outputs())
        out = out || !verify::compare_output(p.check_for(n->name), a, b).ok();
    }
    caught += out;
    EXPECT_TRUE(out) << m.id << ": " << m.description;
  }
  EXPECT_GE(total, 10);
  std::printf("[ mutants  ] self-attention step: %d of %d planted fused-backward mutants leave a carried bound\n",
              caught, total);
}

// What the carried bound refuses: an output with a product of two perturbed factors, or a factor
// perturbed without a certified check (stacked layers' gradients) stays on the stand-in.
TEST(DiffPlanGradients, AProductOfTwoPerturbedFactorsIsNotCarried) {
  AttentionSpec s = self_attention_step(Prec::F32, "causal", 6, 1);
  s.layers = 2;
  const Rewritten r = rewrite_step(s, "2");
  const verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r.original, r.result);
  EXPECT_FALSE(plan.stand_in.empty());
  verify::PerturbedNodes p;
  p.reached = {"a", "b"};
  const Routine two = ostest::parse_checked(R"(routine r {
  node a : f32[2] materialized input
  node b : f32[2] materialized input
  node y : f32[1] materialized output
  zero y
  for i in 0..1 {
    y[0] = add.f32(y[0], mul.f32(a[i], b[i]))
  }
})");
  verify::NodeCheck c;
  c.kind = verify::NodeCheck::Kind::Relative;
  c.rel = 1e-6;
  p.checks["a"] = p.checks["b"] = c;
  std::string why;
  EXPECT_FALSE(verify::accumulation_plan(two, two, "y", p, &why).has_value());
  EXPECT_NE(why.find("both factors"), std::string::npos) << why;
  p.reached = {"a"};
  EXPECT_TRUE(verify::accumulation_plan(two, two, "y", p, &why).has_value()) << why;
  p.checks.clear();
  EXPECT_FALSE(verify::accumulation_plan(two, two, "y", p, &why).has_value());
  EXPECT_NE(why.find("without a certified check"), std::string::npos) << why;
}

}  // namespace
}  // namespace fp
