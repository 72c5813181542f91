// Soundness: planted bugs in real rewritten routines must come out refuted — never unknown, never
// proved — with a minimized, replayable counterexample. At least 10 mutants per shape
// (declared by the shape: ShapeInfo::mutants, rewrites/member.h), each applied to the target of a tier obligation on an attention program;
// plus a hoist of a loop that does not index the target, built with the rewrite's own emitter
// on a nest it declines.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "frontend/attention.h"
#include "core/checker.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "verify/engine.h"
#include "rewrites/members.h"
#include "verify_fixtures.h"

namespace fp::verify {
namespace {

using testing::attention_tasks;
using testing::tasks_of_shape;

EngineOptions options(const std::string& tag) { return testing::engine_options("mutants-" + tag); }

// The worst verdict over the tasks of one pair, with the target replaced by the mutant.
Verdict worst_verdict(const std::vector<Task>& pair, const Routine& mutant, const EngineOptions& o) {
  std::optional<Verdict> worst;
  for (Task t : pair) {
    t.tgt = mutant;
    Verdict v = discharge(t, o);
    auto rank = [](VerdictKind k) {
      return k == VerdictKind::Refuted ? 3 : k == VerdictKind::Unknown ? 2 : k == VerdictKind::Error ? 1 : 0;
    };
    if (!worst || rank(v.kind) > rank(worst->kind)) worst = v;
  }
  return *worst;
}

// The mutants the task's shape declares, of its target.
std::vector<Mutant> declared_mutants(const Task& t) {
  const ShapeInfo* shape = find_shape(t.shape);
  EXPECT_TRUE(shape && shape->mutants) << t.shape << " declares no mutants";
  return shape && shape->mutants ? shape->mutants(t.tgt, t.app) : std::vector<Mutant>{};
}

void expect_all_refuted(const std::vector<Task>& pair, const std::vector<Mutant>& mutants,
                        const EngineOptions& o, int at_least) {
  EXPECT_GE(static_cast<int>(mutants.size()), at_least);
  int refuted = 0;
  for (const auto& m : mutants) {
    SCOPED_TRACE(m.id + ": " + m.description);
    auto problems = check_routine(m.tgt);
    ASSERT_TRUE(problems.empty()) << problems[0].where << " " << problems[0].message;
    ASSERT_FALSE(equal(m.tgt, pair[0].tgt)) << "the mutant changes nothing";
    Verdict v = worst_verdict(pair, m.tgt, o);
    EXPECT_EQ(v.kind, VerdictKind::Refuted) << verdict_kind_name(v.kind) << ": " << v.message;
    if (v.kind != VerdictKind::Refuted) continue;
    ++refuted;
    ASSERT_TRUE(v.counterexample.has_value());
    EXPECT_TRUE(std::filesystem::exists(v.counterexample->dir + "/src.fp"));
    EXPECT_TRUE(std::filesystem::exists(v.counterexample->dir + "/tgt.fp"));
    EXPECT_NE(v.counterexample->replay.find("flashproof verify --src"), std::string::npos);
    // The written case parses, is well formed, and its one-line replay reproduces it (exit 1).
    Routine back = parse_routine_file(v.counterexample->dir + "/tgt.fp");
    EXPECT_TRUE(check_routine(back).empty());
    std::string cmd = v.counterexample->replay;
    ASSERT_EQ(cmd.rfind("flashproof ", 0), 0u);
    cmd = std::string(FLASHPROOF_BINARY) + cmd.substr(std::string("flashproof").size()) + " > /dev/null";
    int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << cmd;
  }
  std::printf("[ mutants ] %d of %zu refuted\n", refuted, mutants.size());
}

TEST(VerifyMutants, NormalizerScanMutantsAreRefuted) {
  std::vector<Task> pair = tasks_of_shape(attention_tasks(3, 2), "online-softmax.normalizer-scan");
  ASSERT_EQ(pair.size(), 2u);  // normalizer-max (exact) and normalizer-sum (bounded)
  EngineOptions o = options("shape1");
  // The unmutated target verifies.
  EXPECT_EQ(worst_verdict(pair, pair[0].tgt, o).kind, VerdictKind::Exact);
  expect_all_refuted(pair, declared_mutants(pair[0]), o, 10);
}

TEST(VerifyMutants, NormalizerScanMutantsAreRefutedAtF16) {
  std::vector<Task> pair = tasks_of_shape(attention_tasks(3, 2, Prec::F16), "online-softmax.normalizer-scan");
  ASSERT_EQ(pair.size(), 2u);
  std::vector<Mutant> ms;
  for (auto& m : declared_mutants(pair[0]))
    if (m.id != "narrowed-state" && m.id != "narrowed-score-read") ms.push_back(std::move(m));
  expect_all_refuted(pair, ms, options("shape1-f16"), 10);
}

TEST(VerifyMutants, ValuePassMutantsAreRefuted) {
  std::vector<Task> pair = tasks_of_shape(attention_tasks(3, 2), "online-softmax.value-pass-hoist");
  ASSERT_EQ(pair.size(), 1u);
  EngineOptions o = options("shape2");
  Verdict ok = discharge(pair[0], o);
  EXPECT_EQ(ok.kind, VerdictKind::Exact);
  EXPECT_TRUE(ok.scope.all_sizes);
  expect_all_refuted(pair, declared_mutants(pair[0]), o, 10);
}

// The block fold in a causal training step (m and l are read by the backward, so `fold-max` and
// `fold-sum` are obligations): every declared mutant changes the running maximum (refuted through
// `fold-max`, exact) or the sum (refuted by `fold-sum`'s certified check: a target that is not the
// fold's recurrence gets the full search against REL(n, b)) or the output alone (refuted by
// `fold-output`'s certified check). The unmutated fold's `fold-sum` and `fold-output` are bounded
// with their induction proved.
// The fused backward of a causal training step (sq = sk = 4, the blocked form; the mask's fill a
// finite -2, so that a masked cell's p is not 0 and the mask's where in ds matters): the unmutated
// target's dV is exact and its dQ / dK bounded (term identity with the fused form, the bound of
// docs/bounds.md §8 confirmed); every declared mutant is refuted — through dV's bitwise check or
// through dQ / dK's f64 shadows computing another function.
TEST(VerifyMutants, FusedBackwardMutantsAreRefuted) {
  AttentionSpec s;
  s.sq = 4;
  s.sk = 4;
  s.d = s.e = 2;
  s.mask = "causal";
  s.mask_fill = "-2";
  s.train = true;
  Config cfg;
  cfg.set("online_softmax", "true");
  cfg.set("online_softmax_backward", "true");
  std::vector<Task> pair = tasks_of_shape(
      tier_tasks(build_attention(s), cfg, {}, "attention.fp", "flashproof verify attention.fp").tasks,
      "online-softmax.fused-backward");
  ASSERT_EQ(pair.size(), 3u);  // backward-dv, backward-dq, backward-dk
  EngineOptions o = options("backward");
  EXPECT_EQ(discharge(pair[0], o).kind, VerdictKind::Exact) << "backward-dv on the unmutated target";
  for (int i : {1, 2}) {
    const Verdict v = discharge(pair[static_cast<std::size_t>(i)], o);
    EXPECT_EQ(v.kind, VerdictKind::Bounded) << v.message;
    ASSERT_TRUE(v.bound.has_value());
    EXPECT_LT(v.bound->worst_observed, 1.0);
  }
  expect_all_refuted(pair, declared_mutants(pair[0]), o, 10);
}

TEST(VerifyMutants, BlockFoldMutantsAreRefuted) {
  AttentionSpec s;
  s.sq = 3;
  s.sk = 5;
  s.d = s.e = 2;
  s.mask = "causal";
  s.train = true;
  Config cfg;
  cfg.set("online_softmax", "true");
  cfg.set("online_softmax_block", "2");
  std::vector<Task> pair = tasks_of_shape(
      tier_tasks(build_attention(s), cfg, {}, "attention.fp", "flashproof verify attention.fp").tasks,
      "online-softmax.block-fold");
  ASSERT_EQ(pair.size(), 3u);  // fold-max, fold-sum, fold-output
  EngineOptions o = options("fold");
  EXPECT_EQ(discharge(pair[0], o).kind, VerdictKind::Exact) << "fold-max on the unmutated fold";
  const Verdict sum = discharge(pair[1], o);
  EXPECT_EQ(sum.claim, "fold-sum");
  EXPECT_EQ(sum.kind, VerdictKind::Bounded) << sum.message;
  ASSERT_TRUE(sum.bound);
  bool induction = false, recurrence = false;
  for (const auto& part : sum.bound->parts) {
    induction = induction || (part.name == "induction" && part.status == "proved");
    recurrence = recurrence || (part.name == "(i) recurrence" && part.status == "proved");
  }
  EXPECT_TRUE(induction && recurrence) << sum.message;
  const Verdict output = discharge(pair[2], o);
  EXPECT_EQ(output.claim, "fold-output");
  EXPECT_EQ(output.kind, VerdictKind::Bounded) << output.message;
  const VerdictKind worst = worst_verdict(pair, pair[0].tgt, o).kind;
  EXPECT_TRUE(worst == VerdictKind::Exact || worst == VerdictKind::Bounded) << verdict_kind_name(worst);
  // The fold skips the fully masked block of rows 0 and 1 (key 4 of 5); its recurrence says so.
  bool skips = false;
  for (const auto& part : output.bound->parts)
    skips = skips || (part.name == "(i) recurrence" && part.detail.find("block-skip lemma") != std::string::npos);
  EXPECT_TRUE(skips) << output.message;
  // 19 of the fold and 3 of its skip (skip-live-block, skip-without-zero-sum, skip-resets-max).
  expect_all_refuted(pair, declared_mutants(pair[0]), o, 22);
}

// The rewrite's own emitter, forced onto a nest it declines (moved-loop-not-in-target): the moved
// loop k does not index o as a plain iterator, so contributions to one cell change order.
TEST(VerifyMutants, HoistOfLoopNotIndexingTheTargetIsRefuted) {
  std::string path =
      std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit/online_softmax/hoist-decline-target-not-plain.fp";
  Routine src = parse_routine_file(path);
  std::vector<StmtP> top;
  for (const auto& s : src.body->body) top.push_back(s);
  const std::size_t pos = top.size() - 1;  // the value pass
  const Stmt& nest = *top[pos];            // for i { for k { for j { o[i, j + k] += p[i, j] * v[j, k] } } }
  const Stmt& store = *nest.body[0]->body[0]->body[0];
  ExprP read = store.value->args[1]->args[0];
  ExprP value =
      binary(BinOp::Add, store.value->args[0],
             binary(BinOp::Mul, get_local("os_p_p", Prec::F32), store.value->args[1]->args[1], Prec::F32),
             Prec::F32);
  StmtP hoisted = for_loop("i", 0, 1,
                           {for_loop("j", 0, 3,
                                     {declare_local("os_p_p", Prec::F32), set_local("os_p_p", read),
                                      for_loop("k", 0, 2, {set("o", store.indices, value)})})});
  Routine tgt = src;
  std::vector<StmtP> t = top;
  t[pos] = hoisted;
  tgt.body = seq(t);
  ASSERT_TRUE(check_routine(tgt).empty());
  Task task;
  task.id = "forced-hoist";
  task.member = "online-softmax";
  task.shape = "online-softmax.value-pass-hoist";
  task.app.shape = task.shape;
  task.app.statements = {static_cast<int>(pos + 1)};
  task.obligation.kind = ObligationKind::Exact;
  task.obligation.claim = "value-pass";
  task.obligation.covers = {Cover{"o", "o[i, j + k]"}};
  task.src = src;
  task.tgt = tgt;
  task.repro = "flashproof verify (unit test)";
  Verdict v = discharge(task, options("forced-hoist"));
  EXPECT_EQ(v.kind, VerdictKind::Refuted) << v.message;
  bool order_fact_failed = false;
  for (const auto& s : v.steps)
    order_fact_failed = order_fact_failed || s.find("fact 'order' fails") != std::string::npos;
  EXPECT_TRUE(order_fact_failed) << "the all-sizes lift must fail on the order fact";
}

}  // namespace
}  // namespace fp::verify
