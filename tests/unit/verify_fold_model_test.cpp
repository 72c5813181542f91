// A model-sized verify of the block fold in the suite, at a size that fits its time budget (the
// 24-layer, seq-4096 model is bench/verify_bench's BM_VerifyModel/1/1/<mask>): a two-layer training
// step at seq 256 with a padding mask, the fold in blocks of 64 — every obligation decided, every
// one for every size, none refuted.

#include <gtest/gtest.h>

#include "frontend/attention.h"
#include "rewrites/config.h"
#include "verify/engine.h"
#include "verify_fixtures.h"

namespace fp::verify {
namespace {

TEST(VerifyFoldModel, ATwoLayerTrainingStepAtSeq256IsProvedForEverySize) {
  AttentionSpec s;
  s.layers = 2;
  s.heads = 2;
  s.sq = s.sk = 256;
  s.d = s.e = 32;
  s.mask = "padding:16";
  s.train = true;
  const Config cfg = make_config("", {"online_softmax=true", "online_softmax_block=64"}, {});
  const std::vector<Task> tasks = tier_tasks(build_attention(s), cfg, {}, "model.fp", "repro").tasks;
  ASSERT_EQ(tasks.size(), 8u);  // per layer: fold-max, fold-sum, fold-output and the value pass
  EngineOptions o = testing::engine_options("fold-model");
  o.jobs = 2;
  for (const Verdict& v : verify_tasks(tasks, o)) {
    SCOPED_TRACE(v.id);
    EXPECT_TRUE(v.kind == VerdictKind::Exact || v.kind == VerdictKind::Bounded) << v.message;
    EXPECT_TRUE(v.scope.all_sizes) << v.scope.text;
  }
}

}  // namespace
}  // namespace fp::verify
