// The verify engine on the tier issue's attention programs (tests/fixtures/attention_suite.h): every
// shape-2 application is exact for all sizes, every shape-1 application's max is exact and its
// normalizer bounded with the certified bound, the interpreter differential inside it.

#include <gtest/gtest.h>

#include "core/checker.h"
#include "tests/fixtures/attention_suite.h"
#include "verify/engine.h"

namespace fp::verify {
namespace {

Limits fast_limits() {
  Limits l;
  l.search_trials = 200;
  l.real_n = 2;
  l.mpfr_rows = 2000;  // verify_bounds_test runs the full 10^4-row certificate
  return l;
}

void expect_table(const std::string& name) {
  for (const auto& c : attention_suite()) {
    if (c.name != name) continue;
    SCOPED_TRACE(c.name);
    Routine r = build_attention(c.spec);
    Config cfg;
    cfg.set("online_softmax", "true");
    TierTasks tt = tier_tasks(r, cfg, {}, c.name + ".fp", "flashproof verify " + c.name + ".fp");
    ASSERT_FALSE(tt.tasks.empty());
    EngineOptions o;
    o.limits = fast_limits();
    o.use_cache = false;
    std::vector<Verdict> vs = verify_tasks(tt.tasks, o);
    int shape1 = 0, shape2 = 0;
    for (const auto& v : vs) {
      SCOPED_TRACE(v.id + ": " + v.message);
      if (v.claim == "value-pass") {
        ++shape2;
        EXPECT_EQ(v.kind, VerdictKind::Exact);
        EXPECT_TRUE(v.scope.all_sizes);
        EXPECT_EQ(v.scope.text, "all sizes");
      } else if (v.claim == "normalizer-max") {
        ++shape1;
        EXPECT_EQ(v.kind, VerdictKind::Exact);
      } else if (v.claim == "normalizer-sum") {
        EXPECT_EQ(v.kind, VerdictKind::Bounded);
        ASSERT_TRUE(v.bound.has_value());
        EXPECT_GT(v.bound->value, 0);
        EXPECT_LE(v.bound->worst_observed, 1.0);
        EXPECT_GE(v.bound->tightness, 0);
        EXPECT_LE(v.bound->tightness, 1.0);
        for (const auto& d : v.bound->downstream) EXPECT_LE(d.worst_observed, 1.0) << d.node;
        bool recurrence = false;
        for (const auto& p : v.bound->parts)
          recurrence = recurrence || (p.name == "(i) recurrence" && p.status == "proved");
        EXPECT_TRUE(recurrence);
        // The induction (docs/bounds.md §5 (a)): every query proved; the line may read unknown only
        // because the stated REL falls below the proved value at n (normalizer_bound's long double).
        bool induction = false;
        for (const auto& p : v.bound->parts)
          if (p.name == "induction") {
            induction = true;
            EXPECT_TRUE(p.status == "proved" || p.detail.find("is above the stated") != std::string::npos)
                << p.detail;
            EXPECT_EQ(p.detail.find("undecided"), std::string::npos) << p.detail;
            EXPECT_EQ(p.detail.find("counterexample"), std::string::npos) << p.detail;
          }
        EXPECT_TRUE(induction);
      } else {
        ADD_FAILURE() << "unexpected claim " << v.claim;
      }
      EXPECT_FALSE(v.solver.version.empty());
      EXPECT_FALSE(v.repro.empty());
    }
    EXPECT_EQ(shape1, c.spec.layers);
    EXPECT_GE(shape2, c.spec.layers);
    return;
  }
  FAIL() << "no case " << name;
}

TEST(VerifyAttention, ForwardF32) {
  expect_table("forward-f32");
}
TEST(VerifyAttention, Masks) {
  for (auto n : {"causal", "prefix-2", "padding-1", "causal-sq5-sk2-masked-rows", "sq2-sk5"}) expect_table(n);
}
TEST(VerifyAttention, MaskFills) {
  expect_table("fill-nan");
  expect_table("fill-finite");
}
TEST(VerifyAttention, Precisions) {
  for (auto n : {"f64", "f16", "bf16"}) expect_table(n);
}
TEST(VerifyAttention, LayersDropoutTraining) {
  for (auto n : {"layers-2", "dropout", "train-f32"}) expect_table(n);
}

// A stacked training step with the fused backward (and, with block 2, the fold): the two layers'
// backwards apply in one round and the two folds in the next, each pair's runs adjacent (layer 2's
// backward ends where layer 1's begins; nothing is left between the two folds). Each obligation's
// pair must hold its own application alone (verify/task.cpp isolate, by the application's
// anchor_run): before, layer 1's backward pair also held layer 2's fused dQ — the dO layer 1 reads —
// and its exact dV was refuted although the rewrite is right; likewise layer 2's fold pair held
// layer 1's fold, whose bounded output layer 2 reads, and its exact max was refuted. Layer 1's dQ
// and dK read a dO that is not an input but layer 2's dQ, whose cells the bound's identity finds by
// their terms: bounded too (they were unknown while the identity asked for an input).
TEST(VerifyAttention, StackedTrainingStepIsolatesEachLayersRewrites) {
  for (const char* block : {"0", "2"}) {
    SCOPED_TRACE(std::string("online_softmax_block = ") + block);
    AttentionSpec s;
    s.sq = 4;
    s.sk = 5;
    s.d = s.e = 3;
    s.layers = 2;
    s.mask = "causal";
    s.train = true;
    s.precision = Prec::BF16;
    Config cfg;
    cfg.set("online_softmax", "true");
    cfg.set("online_softmax_backward", "true");
    cfg.set("online_softmax_block", block);
    TierTasks tt = tier_tasks(build_attention(s), cfg, {}, "stacked.fp", "flashproof verify stacked.fp");
    EngineOptions o;
    o.limits = fast_limits();
    o.use_cache = false;
    int dv = 0, bounded = 0, maxes = 0;
    for (const Verdict& v : verify_tasks(tt.tasks, o)) {
      SCOPED_TRACE(v.id + ": " + v.message);
      EXPECT_NE(v.kind, VerdictKind::Refuted);
      if (v.claim == "backward-dv") {
        ++dv;
        EXPECT_EQ(v.kind, VerdictKind::Exact);
      }
      if (v.claim == "fold-max" || v.claim == "normalizer-max") {
        ++maxes;
        EXPECT_EQ(v.kind, VerdictKind::Exact);
      }
      bounded += v.kind == VerdictKind::Bounded && v.claim.rfind("backward-", 0) == 0;
    }
    EXPECT_EQ(dv, 2);
    EXPECT_EQ(maxes, 2);
    EXPECT_EQ(bounded, 4);  // both layers' dQ and dK
  }
}

// Self-attention with projections (v = x·w_v): the counterexample search finds inputs where the
// fold's partial numerators U = Σ e·v overflow while the composed O = Σ (e / l)·v does not (O
// finite near 1e38, the fold's +inf, even of the other sign). The bound holds in the absence of
// overflow; such a cell is outside that hypothesis, not a counterexample — fold-output was
// refuted here until the comparison gave the fold's numerator its headroom of n keys.
TEST(VerifyAttention, FoldNumeratorOverflowIsNotACounterexample) {
  AttentionSpec s;
  s.leaf = false;
  s.sq = s.sk = 6;
  s.d = s.e = 3;
  s.heads = 2;
  s.mask = "causal";
  s.train = true;
  Config cfg;
  cfg.set("online_softmax", "true");
  cfg.set("online_softmax_block", "4");
  TierTasks tt = tier_tasks(build_attention(s), cfg, {}, "self.fp", "flashproof verify self.fp");
  std::vector<Task> fold;
  for (const Task& t : tt.tasks)
    if (t.obligation.claim == "fold-output") fold.push_back(t);
  ASSERT_EQ(fold.size(), 1u);
  EngineOptions o;
  o.limits.mpfr_rows = 2000;  // the default search (1500 trials) is what finds the overflowing inputs
  o.use_cache = false;
  for (const Verdict& v : verify_tasks(fold, o)) EXPECT_EQ(v.kind, VerdictKind::Bounded) << v.message;
}

}  // namespace
}  // namespace fp::verify
