// Counterexample size reduction (verify/size_reduction.h): a refuted case is written at smaller
// extents when the bug survives them, never below the size the bug needs, and a resized routine
// the checker rejects is skipped, not run. The written case must still replay as a failure.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "frontend/attention.h"
#include "core/checker.h"
#include "core/npy.h"
#include "core/random_inputs.h"
#include "core/text_parser.h"
#include "verify/engine.h"
#include "rewrites/online_softmax/mutants.h"
#include "verify/pair_check.h"
#include "verify/size_reduction.h"
#include "verify_fixtures.h"

namespace fp::verify {
namespace {

using testing::attention_tasks;
using testing::tasks_of_shape;

EngineOptions options(const std::string& tag) { return testing::engine_options("size-reduction-" + tag, 300); }

const Mutant& mutant(const std::vector<Mutant>& ms, const std::string& id) {
  for (const auto& m : ms)
    if (m.id == id) return m;
  throw std::runtime_error("no mutant " + id);
}

std::int64_t largest_dim(const Routine& r) {
  std::int64_t m = 0;
  for (const auto& n : r.nodes)
    for (auto d : n.dims) m = std::max(m, d);
  return m;
}

// The written case, replayed in process (the same comparison as `flashproof verify --inputs`)
// and through its one-line replay command: both must report the failure.
void expect_case_replays(const Counterexample& cex, std::optional<double> rel) {
  Routine src = parse_routine_file(cex.dir + "/src.fp"), tgt = parse_routine_file(cex.dir + "/tgt.fp");
  ASSERT_TRUE(check_routine(src).empty());
  ASSERT_TRUE(check_routine(tgt).empty());
  std::vector<std::string> nodes;
  for (const Node* n : src.outputs()) nodes.push_back(n->name);
  ASSERT_EQ(pair_mismatch(src, tgt, nodes), "");
  TensorMap in;
  for (const Node* n : src.inputs()) in[n->name] = read_npy(cex.dir + "/" + n->name + ".npy");
  PairRunner runner(src, tgt, claim_checks(nodes, rel));
  EXPECT_TRUE(runner.run(in).has_value()) << "the written case does not fail in process";
  std::string cmd = cex.replay;
  ASSERT_EQ(cmd.rfind("flashproof ", 0), 0u);
  cmd = std::string(FLASHPROOF_BINARY) + cmd.substr(std::string("flashproof").size()) + " > /dev/null";
  int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << cmd;
}

bool has_step(const Verdict& v, const std::string& text) {
  for (const auto& s : v.steps)
    if (s.find(text) != std::string::npos) return true;
  return false;
}

// (a) A planted bug in a real rewritten attention routine at seq 64: the verdict is decided at
// 64, the case is written at a handful of keys and replays.
TEST(VerifySizeReduction, AttentionMutantCaseIsSmallerAndReplays) {
  std::vector<Task> pair = tasks_of_shape(attention_tasks(64, 16), "online-softmax.value-pass-hoist");
  ASSERT_EQ(pair.size(), 1u);
  Task t = pair[0];
  t.tgt = mutant(osm::value_pass_mutants(t.tgt, t.app), "inner-off-by-one").tgt;
  Verdict v = discharge(t, options("value-pass"));
  ASSERT_EQ(v.kind, VerdictKind::Refuted) << v.message;
  ASSERT_TRUE(v.counterexample.has_value());
  const Counterexample& cex = *v.counterexample;
  ASSERT_FALSE(cex.extents.empty()) << v.message;
  for (const auto& e : cex.extents) EXPECT_LT(e.reduced, e.original);
  EXPECT_NE(v.message.find("sizes reduced: 64→"), std::string::npos) << v.message;
  EXPECT_TRUE(has_step(v, "counterexample sizes reduced: 64→"));
  Routine src = parse_routine_file(cex.dir + "/src.fp");
  const Node* q = src.find_node("q");
  ASSERT_NE(q, nullptr);
  EXPECT_LE(q->dims[1], 4) << "seq 64 must shrink to a handful of queries";
  EXPECT_LE(largest_dim(src), 4);
  EXPECT_LE(src.attrs.at("seq_k"), 4);  // attrs hold extents and shrink with them
  expect_case_replays(cex, std::nullopt);
  // The JSON form carries the extents.
  nlohmann::json j = to_json(v);
  ASSERT_TRUE(j["counterexample"]["extents"].is_array());
  EXPECT_EQ(j["counterexample"]["extents"][0]["original"], 64);
  EXPECT_EQ(verdict_from_json(j).counterexample->extents, cex.extents);
}

// (a) The same for the bounded normalizer: a dropped rescale at 16 keys, the bounded check's
// checks (computed for n = 16) applied at the reduced size.
TEST(VerifySizeReduction, NormalizerMutantCaseIsSmallerAndReplays) {
  std::vector<Task> pair = tasks_of_shape(attention_tasks(16, 4), "online-softmax.normalizer-scan");
  ASSERT_EQ(pair.size(), 2u);
  const Routine bad = mutant(osm::normalizer_scan_mutants(pair[0].tgt), "rescale-dropped").tgt;
  int refuted = 0;
  for (Task t : pair) {
    t.tgt = bad;
    Verdict v = discharge(t, options("normalizer-" + t.obligation.claim));
    SCOPED_TRACE(t.id + ": " + v.message);
    if (v.kind != VerdictKind::Refuted) continue;
    ++refuted;
    ASSERT_TRUE(v.counterexample.has_value());
    ASSERT_FALSE(v.counterexample->extents.empty());
    Routine src = parse_routine_file(v.counterexample->dir + "/src.fp");
    EXPECT_LE(src.find_node("k")->dims[1], 4);
    std::optional<double> rel;
    if (v.counterexample->replay.find("bounded:") != std::string::npos)
      rel = std::stod(v.counterexample->replay.substr(v.counterexample->replay.find("bounded:") + 8));
    expect_case_replays(*v.counterexample, rel);
  }
  EXPECT_GE(refuted, 1);
}

// (b) The bug needs an extent of at least 3 (the target drops every cell from index 2 on, a
// constant the resizer does not touch): the case stops at 3, never below.
TEST(VerifySizeReduction, StopsAtTheSizeTheBugNeeds) {
  const char* src_text = R"(routine keep_all {
  node a : f32[16, 8] materialized input
  node o : f32[16, 8] materialized output
  for i in 0..15 {
    for j in 0..7 {
      o[i, j] = a[i, j]
    }
  }
})";
  const char* tgt_text = R"(routine keep_two {
  node a : f32[16, 8] materialized input
  node o : f32[16, 8] materialized output
  for i in 0..15 {
    for j in 0..7 {
      o[i, j] = where.f32(lt.f32(idx.f32(i), 2:f32), a[i, j], 0:f32)
    }
  }
})";
  Task t = pair_task(parse_routine(src_text, "src.fp"), parse_routine(tgt_text, "tgt.fp"), "exact", "keep.fp",
                     "unit test");
  Verdict v = discharge(t, options("needs-three"));
  ASSERT_EQ(v.kind, VerdictKind::Refuted) << v.message;
  ASSERT_TRUE(v.counterexample.has_value());
  const std::vector<ExtentReduction> want{{16, 3}, {8, 1}};
  EXPECT_EQ(v.counterexample->extents, want) << extents_text(v.counterexample->extents);
  Routine src = parse_routine_file(v.counterexample->dir + "/src.fp");
  EXPECT_EQ(src.find_node("a")->dims, (std::vector<std::int64_t>{3, 1}));
  EXPECT_NE(v.message.find("sizes reduced: 16→3, 8→1"), std::string::npos) << v.message;
  expect_case_replays(*v.counterexample, std::nullopt);
}

// (c) A blocked loop (o[4·tb + t]) cannot be resized by substitution: every candidate is out of
// bounds, the checker rejects it, nothing runs it, and the case keeps its sizes.
TEST(VerifySizeReduction, CheckerRejectedCandidatesAreSkipped) {
  const char* src_text = R"(routine blocked_src {
  node a : f32[16] materialized input
  node o : f32[16] materialized output
  for tb in 0..3 {
    for t in 0..3 {
      o[4*tb + t] = add.f32(a[4*tb + t], 0:f32)
    }
  }
})";
  const char* tgt_text = R"(routine blocked_tgt {
  node a : f32[16] materialized input
  node o : f32[16] materialized output
  for tb in 0..3 {
    for t in 0..3 {
      o[4*tb + t] = a[4*tb + t]
    }
  }
})";
  Routine src = parse_routine(src_text, "src.fp"), tgt = parse_routine(tgt_text, "tgt.fp");
  for (std::int64_t v : {1, 2, 3, 4, 8}) EXPECT_FALSE(check_routine(resize_routine(src, 16, v)).empty()) << v;
  PairRunner runner(src, tgt, claim_checks({"o"}, std::nullopt));
  TensorMap in;
  in["a"] = Tensor::zeros(Prec::F32, {16});
  in["a"].data[5] = -0.0;
  auto m = runner.run(in);
  ASSERT_TRUE(m.has_value());
  SizeReduction red = reduce_sizes(runner, Found{in, *m, "unit", 0}, {src, tgt});
  EXPECT_FALSE(red.reduced());
  EXPECT_EQ(red.rejected_by_checker, red.tried);
  EXPECT_GT(red.tried, 0);
  EXPECT_EQ(red.runs, 0);
  EXPECT_TRUE(equal(red.src, src));
  EXPECT_EQ(red.found.inputs.at("a").dims, (std::vector<std::int64_t>{16}));

  Verdict v = discharge(pair_task(src, tgt, "exact", "blocked.fp", "unit test"), options("blocked"));
  ASSERT_EQ(v.kind, VerdictKind::Refuted) << v.message;
  ASSERT_TRUE(v.counterexample.has_value());
  EXPECT_TRUE(v.counterexample->extents.empty());
  EXPECT_TRUE(has_step(v, "counterexample sizes not reduced")) << v.message;
  EXPECT_EQ(v.message.find("sizes reduced"), std::string::npos);
  expect_case_replays(*v.counterexample, std::nullopt);
}

// What a substitution touches: node dims, attrs, loop bounds counted from the end (a backward
// scan's alike, and a reversed read), and nothing near the start.
TEST(VerifySizeReduction, ResizeSubstitutesExtentsBoundsAndReversedIndices) {
  const char* text = R"(routine reversed {
  node a : f32[8] materialized input
  node o : f32[8] materialized output
  node l : f32[1] materialized output
  for i in 0..7 {
    o[i] = a[7 - i]
  }
  for i in 1..6 {
    o[i] = add.f32(a[i], a[7])
  }
  scan j in 0..7 backward carry(p -> n : f32 = 0:f32) {
    n := add.f32(p, a[j])
    l[0] = n
  }
})";
  Routine r = parse_routine(text, "reversed.fp");
  r.attrs["seq_k"] = 8;
  r.attrs["other"] = 5;
  ASSERT_TRUE(check_routine(r).empty());
  Routine s = resize_routine(r, 8, 3);
  EXPECT_TRUE(check_routine(s).empty());
  EXPECT_EQ(s.find_node("a")->dims, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(s.find_node("l")->dims, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(s.attrs.at("seq_k"), 3);
  EXPECT_EQ(s.attrs.at("other"), 5);
  const auto& top = s.body->body;
  EXPECT_EQ(top[0]->to, 2);
  EXPECT_EQ(top[0]->body[0]->value->indices[0].offset, 2);           // a[2 - i]
  EXPECT_EQ(top[1]->from, 1);                                        // near the start: kept
  EXPECT_EQ(top[1]->to, 1);                                          // 6 = 8 - 2 → 3 - 2
  EXPECT_EQ(top[1]->body[0]->value->args[1]->indices[0].offset, 2);  // the last cell a[7] → a[2]
  EXPECT_EQ(top[2]->kind, StmtKind::Scan);
  EXPECT_EQ(top[2]->from, 0);
  EXPECT_EQ(top[2]->to, 2);
  // A routine without the extent comes back as the very same tree.
  Routine same = resize_routine(r, 9, 2);
  EXPECT_EQ(same.body, r.body);
}

// The mutant survey: how far the engine shrinks each planted bug's case, and what it costs.
// Disabled (minutes); run with --gtest_also_run_disabled_tests --gtest_filter='*Survey*'.
TEST(VerifySizeReduction, DISABLED_MutantSurvey) {
  for (auto [seq, width] : {std::pair<std::int64_t, std::int64_t>{16, 8}, {64, 16}}) {
    std::vector<Task> tasks = attention_tasks(seq, width);
    for (const char* shape : {"online-softmax.normalizer-scan", "online-softmax.value-pass-hoist"}) {
      std::vector<Task> pair = tasks_of_shape(tasks, shape);
      std::vector<Mutant> ms = std::string(shape) == "online-softmax.normalizer-scan"
                                   ? osm::normalizer_scan_mutants(pair[0].tgt)
                                   : osm::value_pass_mutants(pair[0].tgt, pair[0].app);
      for (const auto& m : ms) {
        for (Task t : pair) {
          t.tgt = m.tgt;
          EngineOptions on = options("survey"), off = options("survey-off");
          off.reduce_case_sizes = false;
          auto t0 = std::chrono::steady_clock::now();
          Verdict v = discharge(t, on);
          auto t1 = std::chrono::steady_clock::now();
          Verdict w = discharge(t, off);
          auto t2 = std::chrono::steady_clock::now();
          if (v.kind != VerdictKind::Refuted) {
            std::printf("[ survey ] seq %lld %s %s %s: %s\n", static_cast<long long>(seq), shape,
                        m.id.c_str(), t.obligation.claim.c_str(), verdict_kind_name(v.kind));
            continue;
          }
          std::string sizes = extents_text(v.counterexample->extents);
          std::string why;
          for (const auto& s : v.steps)
            if (s.find("counterexample sizes") != std::string::npos) why = s;
          std::printf("[ survey ] seq %lld %s %s %s: %s | with %.2fs without %.2fs | %s\n",
                      static_cast<long long>(seq), shape, m.id.c_str(), t.obligation.claim.c_str(),
                      sizes.empty() ? "not reduced" : sizes.c_str(),
                      std::chrono::duration<double>(t1 - t0).count(),
                      std::chrono::duration<double>(t2 - t1).count(), why.c_str());
          std::fflush(stdout);
        }
      }
    }
  }
}

}  // namespace
}  // namespace fp::verify

namespace fp::verify {
namespace {

// A block fold's target hard-codes its block count and tail (6 keys in blocks of 4: one full
// block and a tail of 2). Substituting the key extent in both routines gives pairs the tier never
// emits; with the task's reemit as the faithfulness test, every size kept is one at which the tier
// emits exactly the resized target for the resized source (a written case is an instance of the
// rewrite). The pair fails a bitwise check (the fold reassociates the sum), so it shrinks if it can.
TEST(VerifySizeReduction, AFoldCaseShrinksOnlyToSizesTheTierEmits) {
  AttentionSpec s;
  s.sq = 5;
  s.sk = 6;
  s.d = 3;
  s.e = 2;
  Config cfg;
  cfg.set("online_softmax", "true");
  cfg.set("online_softmax_block", "4");
  const std::vector<Task> tasks =
      tier_tasks(build_attention(s), cfg, {}, "attention.fp", "flashproof verify attention.fp").tasks;
  const Task* fold = nullptr;
  for (const Task& t : tasks)
    if (t.obligation.claim == "fold-output") fold = &t;
  ASSERT_NE(fold, nullptr);
  ASSERT_TRUE(fold->reemit);
  const std::optional<Routine> again = fold->reemit(fold->src);
  ASSERT_TRUE(again && equal(*again, fold->tgt)) << "reemit reproduces the task's own target";
  PairRunner runner(fold->src, fold->tgt, claim_checks({"o"}, std::nullopt));
  std::optional<Found> found;
  for (std::uint64_t seed = 1; seed < 200 && !found; ++seed) {
    TensorMap in = random_inputs(fold->src, seed);
    if (auto m = runner.run(in)) found = Found{in, *m, "unit", 0};
  }
  ASSERT_TRUE(found.has_value()) << "the fold never differs bitwise from the composed sum";
  auto faithful = [&](const std::vector<Routine>& c) {
    const std::optional<Routine> e = fold->reemit(c[0]);
    return e && equal(*e, c[1]);
  };
  SizeReductionOptions free_options;
  const SizeReduction unchecked = reduce_sizes(runner, *found, {fold->src, fold->tgt}, free_options);
  SizeReductionOptions faithful_options;
  faithful_options.faithful = faithful;
  const SizeReduction red = reduce_sizes(runner, *found, {fold->src, fold->tgt}, faithful_options);
  EXPECT_GT(red.rejected_unfaithful, 0);
  EXPECT_TRUE(faithful(red.companions)) << red.text();
  // Without the test the reduction keeps a substitution the tier would not emit (what the check is
  // for); with it, it keeps none of those.
  EXPECT_FALSE(faithful(unchecked.companions)) << unchecked.text();
  std::printf("[ sizes    ] unchecked: %s; faithful: %s (%d rejected as not what the tier emits)\n",
              unchecked.text().c_str(), red.reduced() ? red.text().c_str() : "not reduced", red.rejected_unfaithful);
}

}  // namespace
}  // namespace fp::verify
