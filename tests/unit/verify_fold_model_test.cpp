// A model-sized verify of the block fold in the suite, at a size that fits its time budget (the
// 24-layer, seq-4096 model is bench/verify_bench's BM_VerifyModel/1/<gates>/<mask>): a two-layer
// training step at seq 256 with a padding mask, the fold in blocks of 64 — every obligation
// decided, every one for every size, none refuted; and the same step with every gate on (the fold
// and the fused backward, `--profile approximate`), causal.

#include <gtest/gtest.h>

#include "frontend/attention.h"
#include "rewrites/config.h"
#include "verify/engine.h"
#include "verify_fixtures.h"

namespace fp::verify {
namespace {

// A two-layer, two-head training step at seq 256, d = e = 32.
AttentionSpec two_layer_step(const char* mask) {
  AttentionSpec s;
  s.layers = 2;
  s.heads = 2;
  s.sq = s.sk = 256;
  s.d = s.e = 32;
  s.mask = mask;
  s.train = true;
  return s;
}

// Every verdict of `tasks` exact or bounded, for every size; the verdicts.
std::vector<Verdict> expect_every_size(const std::vector<Task>& tasks, const std::string& tag) {
  EngineOptions o = testing::engine_options(tag);
  o.jobs = 2;
  const std::vector<Verdict> vs = verify_tasks(tasks, o);
  for (const Verdict& v : vs) {
    SCOPED_TRACE(v.id);
    EXPECT_TRUE(v.kind == VerdictKind::Exact || v.kind == VerdictKind::Bounded) << v.message;
    EXPECT_TRUE(v.scope.all_sizes) << v.scope.text;
  }
  return vs;
}

TEST(VerifyFoldModel, ATwoLayerTrainingStepAtSeq256IsProvedForEverySize) {
  const Config cfg = make_config("", {"online_softmax=true", "online_softmax_block=64"}, {});
  const std::vector<Task> tasks =
      tier_tasks(build_attention(two_layer_step("padding:16")), cfg, {}, "model.fp", "repro").tasks;
  ASSERT_EQ(tasks.size(), 8u);  // per layer: fold-max, fold-sum, fold-output and the value pass
  for (const Verdict& v : expect_every_size(tasks, "fold-model")) {
    SCOPED_TRACE(v.id);
    // A bounded fold claim is cross-checked on the fold the tier emits at a small size in blocks of
    // 3 (several blocks and a tail), against that instance's own bound.
    if (v.kind != VerdictKind::Bounded) continue;
    ASSERT_TRUE(v.bound.has_value());
    std::string differential;
    for (const auto& p : v.bound->parts)
      if (p.name == "differential") differential = p.detail;
    EXPECT_NE(differential.find("at reduced sizes"), std::string::npos) << differential;
    EXPECT_NE(differential.find("b = 3)"), std::string::npos) << differential;
  }
}

TEST(VerifyFoldModel, ATwoLayerTrainingStepWithEveryGateOnIsProvedForEverySize) {
  const Config cfg = make_config("approximate", {}, {});
  const std::vector<Task> tasks =
      tier_tasks(build_attention(two_layer_step("causal")), cfg, {}, "model.fp", "repro").tasks;
  ASSERT_EQ(tasks.size(), 12u);  // per layer: the fused backward's dV, dQ, dK and the fold's three claims
  expect_every_size(tasks, "every-gate-model");
}

}  // namespace
}  // namespace fp::verify
