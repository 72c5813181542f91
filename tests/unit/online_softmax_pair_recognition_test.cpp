// A user's own block fold checked against the composed attention it replaces (`verify --src
// composed.fp --tgt my_fold.fp --claim bounded`, verify/online_softmax/pair_recognition.cpp): a
// fold with its own names, operand order and block is recognized by the fold's all-sizes lift and
// bounded for every size; each planted fold mutant, written by hand, is refuted with a case that
// is still a fold; a pair that is not a fold is unknown with the reason. A user's own fused backward
// is recognized by the fused backward's lift, and a wrong one refuted where it is wrong.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/attention.h"
#include "rewrites/config.h"
#include "rewrites/members.h"
#include "verify/engine.h"
#include "online_softmax_fixtures.h"
#include "verify_fixtures.h"

namespace fp::verify {
namespace {

AttentionSpec small_causal() {
  AttentionSpec s;
  s.sq = 3;
  s.sk = 7;
  s.d = s.e = 2;
  s.mask = "causal";
  return s;
}

// The tier's fold of `s` at `block`, as the tier's only block-fold task.
Task tier_fold(const AttentionSpec& s, int block) {
  const Config cfg = make_config("", {"online_softmax=true", "online_softmax_block=" + std::to_string(block)}, {});
  for (const Task& t : tier_tasks(build_attention(s), cfg, {}, "attention.fp", "repro").tasks)
    if (t.shape == "online-softmax.block-fold") return t;
  ADD_FAILURE() << "no fold";
  return Task{};
}

// `r` as a user writes it: every name of the tier's own (os_...) renamed.
Routine handwritten(const Routine& r) {
  return parse_routine(ostest::replaced_all(print_routine(r), "os_", "my_"), "my_fold.fp");
}

TEST(OnlineSoftmaxPairRecognition, AHandWrittenFoldIsBoundedForEverySize) {
  const Task fold = tier_fold(small_causal(), 3);
  const std::vector<Task> tasks =
      pair_tasks(fold.src, handwritten(fold.tgt), kCertifiedClaim, "my_fold.fp", "repro", Limits{});
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].obligation.claim, "fold-output");
  EXPECT_NE(tasks[0].obligation.description.find("blocks of 3"), std::string::npos) << tasks[0].obligation.description;
  const Verdict v = discharge(tasks[0], testing::engine_options("pair-fold"));
  EXPECT_EQ(v.kind, VerdictKind::Bounded) << v.message;
  EXPECT_TRUE(v.scope.all_sizes) << v.scope.text;
}

TEST(OnlineSoftmaxPairRecognition, APairThatIsNotAFoldIsUnknownWithTheReason) {
  const Task fold = tier_fold(small_causal(), 3);
  const std::vector<Task> tasks = pair_tasks(fold.src, fold.src, kCertifiedClaim, "same.fp", "repro", Limits{});
  ASSERT_EQ(tasks.size(), 1u);
  const Verdict v = discharge(tasks[0], testing::engine_options("pair-not-fold"));
  EXPECT_EQ(v.kind, VerdictKind::Unknown) << v.message;
  EXPECT_EQ(v.reason, UnknownReason::Unsupported);
  EXPECT_NE(v.message.find("no rewrite recognizes the pair"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("not a block fold"), std::string::npos) << v.message;
}

// A training step whose forward the user folded: the fold's claims cover O, m and l but not the
// gradients, so the pair is not recognized (and says so) rather than bounded on part of its outputs.
TEST(OnlineSoftmaxPairRecognition, AFoldWhoseClaimsDoNotCoverEveryOutputIsNotRecognized) {
  AttentionSpec s = small_causal();
  s.train = true;
  const Task fold = tier_fold(s, 3);
  const std::vector<Task> tasks =
      pair_tasks(fold.src, handwritten(fold.tgt), kCertifiedClaim, "my_step.fp", "repro", Limits{});
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_NE(tasks[0].unrecognized.find("do not cover the outputs"), std::string::npos) << tasks[0].unrecognized;
  EXPECT_NE(tasks[0].unrecognized.find("grad_q"), std::string::npos) << tasks[0].unrecognized;
}

// The tier's fused backward of a training step (its forward composed), as its only backward task.
Task tier_backward(const AttentionSpec& s) {
  const Config cfg = make_config("", {"online_softmax=true", "online_softmax_backward=true"}, {});
  for (const Task& t : tier_tasks(build_attention(s), cfg, {}, "attention.fp", "repro").tasks)
    if (t.shape == "online-softmax.fused-backward") return t;
  ADD_FAILURE() << "no fused backward";
  return Task{};
}

// A user's own fused backward — the tier's, every name of its own renamed and the row dot's product
// commuted — is recognized by the fused backward's lift: dV exact and dQ, dK bounded, every size.
TEST(OnlineSoftmaxPairRecognition, AHandWrittenFusedBackwardIsProvedForEverySize) {
  AttentionSpec s = small_causal();
  s.train = true;
  const Task bw = tier_backward(s);
  std::string text = ostest::replaced_all(print_routine(bw.tgt), "os_bwd_", "my_");
  text = ostest::replaced_all(text, "mul.f32(dout[bw_b, bw_s, bw_h, bw_value_width], o[bw_b, bw_s, bw_h, bw_value_width])",
                              "mul.f32(o[bw_b, bw_s, bw_h, bw_value_width], dout[bw_b, bw_s, bw_h, bw_value_width])");
  const Routine mine = parse_routine(ostest::replaced_all(text, "bw_", "me_"), "my_step.fp");
  const std::vector<Task> tasks = pair_tasks(bw.src, mine, kCertifiedClaim, "my_step.fp", "repro", Limits{});
  ASSERT_EQ(tasks.size(), 3u) << (tasks.empty() ? "" : tasks[0].unrecognized);
  for (const Task& t : tasks) {
    SCOPED_TRACE(t.obligation.claim);
    const Verdict v = discharge(t, testing::engine_options("pair-backward"));
    EXPECT_EQ(v.kind, t.obligation.claim == "backward-dv" ? VerdictKind::Exact : VerdictKind::Bounded) << v.message;
    EXPECT_TRUE(v.scope.all_sizes) << v.scope.text;
  }
}

// A hand-written fused backward whose dQ nest shifts the scores the wrong way (exp(max − x)): the
// lift refuses dQ, which its checks at the pair's sizes refute; dV and dK stay proved.
TEST(OnlineSoftmaxPairRecognition, AWrongHandWrittenFusedBackwardIsRefutedWhereItIsWrong) {
  AttentionSpec s = small_causal();
  s.train = true;
  const Task bw = tier_backward(s);
  const std::string from = "sub.f32(os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h], row_max[bw_b, bw_s, bw_h])";
  std::string text = print_routine(bw.tgt);
  ASSERT_NE(text.find(from), std::string::npos);
  text = ostest::replaced_all(text, from, "sub.f32(row_max[bw_b, bw_s, bw_h], os_bwd_probs_dq[bw_j, bw_b, bw_s, bw_h])");
  const Routine wrong = parse_routine(text, "wrong_step.fp");
  const std::vector<Task> tasks = pair_tasks(bw.src, wrong, kCertifiedClaim, "wrong_step.fp", "repro", Limits{});
  ASSERT_EQ(tasks.size(), 3u) << (tasks.empty() ? "" : tasks[0].unrecognized);
  for (const Task& t : tasks) {
    SCOPED_TRACE(t.obligation.claim);
    const Verdict v = discharge(t, testing::engine_options("pair-backward-wrong"));
    if (t.obligation.claim == "backward-dq") {
      EXPECT_EQ(v.kind, VerdictKind::Refuted) << v.message;
    } else {
      EXPECT_TRUE(v.scope.all_sizes) << v.message;
    }
  }
}

// Every declared fold mutant that changes the output, written by hand, is refuted; its case is
// still a fold (recognized as one at the case's sizes), never "source 1, target 0".
TEST(OnlineSoftmaxPairRecognition, EachHandWrittenFoldMutantIsRefutedWithACaseThatIsStillAFold) {
  const Task fold = tier_fold(small_causal(), 3);
  const ShapeInfo* shape = find_shape("online-softmax.block-fold");
  ASSERT_NE(shape, nullptr);
  int refuted = 0;
  for (const Mutant& m : shape->mutants(fold.tgt, fold.app)) {
    SCOPED_TRACE(m.id);
    const std::vector<Task> tasks =
        pair_tasks(fold.src, handwritten(m.tgt), kCertifiedClaim, "mutant.fp", "repro", Limits{});
    ASSERT_FALSE(tasks.empty());
    if (!tasks[0].unrecognized.empty()) continue;  // not a fold's skeleton any more (counted below)  // not a fold's skeleton any more (counted below)
    const Verdict v = discharge(tasks[0], testing::engine_options("pair-mutant-" + m.id, 200));
    if (v.kind != VerdictKind::Refuted) {
      // A mutant that changes no output at these sizes (a max nothing reads) may pass.
      EXPECT_NE(v.kind, VerdictKind::Error) << v.message;
      continue;
    }
    ++refuted;
    ASSERT_TRUE(v.counterexample.has_value());
    const std::filesystem::path dir = v.counterexample->dir;
    const Routine case_src = parse_routine_file((dir / "src.fp").string());
    const Routine case_tgt = parse_routine_file((dir / "tgt.fp").string());
    const std::vector<Task> again =
        pair_tasks(case_src, case_tgt, kCertifiedClaim, "case.fp", "repro", Limits{});
    EXPECT_TRUE(!again.empty() && again[0].unrecognized.empty())
        << "the case is not a fold: " << (again.empty() ? "" : again[0].unrecognized);
  }
  EXPECT_GE(refuted, 12);
}

}  // namespace
}  // namespace fp::verify
