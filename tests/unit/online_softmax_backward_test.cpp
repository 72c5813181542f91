// Online softmax, shape 3 (the fused backward, rewrites/online_softmax/fused_backward.h): the fused
// training step against the composed one on the interpreter — masks with fully masked rows under
// -inf (NaN rows in both, same positions) and under a finite fill (that row's dQ exactly 0 in both,
// some dV non-zero), keys never live, sq != sk both ways, f64/f32/f16/bf16, 2 layers, with the
// two-pass and the block-fold forward; dV bit for bit; an f64 finite-difference check of the fused
// gradients along random directions against the forward alone (independent of the composed
// backward); the compiled C executor bitwise against the interpreter, twice in a row; no square
// buffer with the fold; idempotence, gate-off identity, the fixpoint with every key on; every
// golden decline leaving the routine exactly as it was; and a RapidCheck property over random
// training steps.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>

#include "attention_reference.h"
#include "compiled_expect.h"
#include "core/interpreter.h"
#include "core/numerics.h"
#include "core/text_printer.h"
#include "exec/c_executor.h"
#include "frontend/attention.h"
#include "jit_test_options.h"
#include "online_softmax_fixtures.h"
#include "rewrites/name_minter.h"
#include "rewrites/online_softmax/block_fold.h"
#include "rewrites/online_softmax/fused_backward.h"
#include "rewrites/online_softmax/normalizer_scan.h"
#include "rewrites/online_softmax/routine_view.h"
#include "tensor_expect.h"

namespace fp {
namespace {

using namespace ostest;

// online_softmax and online_softmax_backward on; block 0 keeps the two-pass forward.
Config backward_on(std::int64_t block = 0) {
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_backward", "true");
  c.set("online_softmax_block", std::to_string(block));
  return c;
}

using Case = BlockedCase;

// A training step (fill -inf); block 0 keeps the two-pass forward.
Case step(std::string mask = "causal", std::int64_t q = 5, std::int64_t k = 7, std::int64_t b = 0,
          Prec p = Prec::F32) {
  return Case{std::move(mask), "-inf", q, k, b, p, true};
}

std::string name(const Case& c) {
  return blocked_case_name(c);
}

// The composed step and its rewrite on the same inputs: both outputs, the rewrite's routine.
struct Ran {
  Routine composed, fused;
  TensorMap in, want, got;
};
Ran run_both(const Case& c, std::uint64_t seed = 7) {
  Ran r;
  r.composed = build_attention(spec_of(c));
  RewriteResult res = run_tier(r.composed, backward_on(c.block));
  EXPECT_TRUE(well_formed(res.routine));
  EXPECT_EQ(count_shape(res, osm::kFusedBackwardId), c.layers) << name(c);
  r.fused = res.routine;
  r.in = testref::make_inputs(r.composed, seed + static_cast<std::uint64_t>(c.sq * 31 + c.sk));
  r.want = interpret(r.composed, r.in);
  r.got = interpret(r.fused, r.in);
  return r;
}

void differential(const Case& c, double tol) {
  SCOPED_TRACE(name(c));
  Ran r = run_both(c);
  ASSERT_EQ(r.want.size(), r.got.size());
  for (const auto& [node, t] : r.want) EXPECT_TRUE(testref::close(r.got.at(node).data, t.data, tol, node));
}

TEST(OnlineSoftmaxBackward, F32StepMatchesTheComposedStepAcrossMasksShapesAndForwards) {
  for (const std::string mask : {"none", "causal", "padding:2", "prefix:1"})
    for (auto [sq, sk] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {7, 4}, {1, 9}})
      for (std::int64_t b : {std::int64_t{0}, std::int64_t{3}}) differential(step(mask, sq, sk, b), 1e-5);
}

TEST(OnlineSoftmaxBackward, FillsKeepTheComposedNaNsAndFullyMaskedRows) {
  for (const std::string fill : {"-inf", "-1e4", "nan", "inf"})
    for (const std::string mask : {"causal", "padding:9", "padding:4"}) {
      Case c = step(mask, 4, 9, 4);
      c.fill = fill;
      differential(c, 1e-5);
    }
}

// Keys never live under a finite fill: every score is the fill, the probabilities are uniform and
// weigh in dV, while the mask's where makes every score gradient exactly 0 — dQ is exactly 0 in
// both, cell for cell.
TEST(OnlineSoftmaxBackward, FiniteFillWithNoLiveKeyGivesZeroDqAndNonZeroDv) {
  for (std::int64_t b : {std::int64_t{0}, std::int64_t{4}}) {
    Case c = step("padding:9", 4, 9, b);
    c.fill = "-1e4";
    SCOPED_TRACE(name(c));
    Ran r = run_both(c);
    for (const auto& [node, t] : r.want)
      if (node.rfind("grad_q", 0) == 0)
        for (std::size_t i = 0; i < t.data.size(); ++i) {
          EXPECT_TRUE(same_value(t.data[i], 0.0)) << node << "[" << i << "] composed " << t.data[i];
          EXPECT_TRUE(same_value(r.got.at(node).data[i], 0.0))
              << node << "[" << i << "] fused " << r.got.at(node).data[i];
        }
    bool nonzero_dv = false;
    for (const auto& [node, t] : r.got)
      if (node.rfind("grad_v", 0) == 0)
        for (double x : t.data) nonzero_dv = nonzero_dv || x != 0.0;
    EXPECT_TRUE(nonzero_dv);
  }
}

TEST(OnlineSoftmaxBackward, EveryPrecisionAndTwoLayers) {
  for (Prec p : {Prec::F64, Prec::F16, Prec::BF16})
    for (std::int64_t b : {std::int64_t{0}, std::int64_t{3}})
      differential(step("causal", 5, 7, b, p), p == Prec::F64 ? 1e-12 : (p == Prec::F16 ? 2e-2 : 1e-1));
  for (std::int64_t b : {std::int64_t{0}, std::int64_t{2}}) {
    Case c = step("causal", 4, 4, b);
    c.layers = 2;
    differential(c, 1e-5);
  }
}

// dV is exact: the same products p·dO in the same order, p recomputed bit for bit — against the
// composed step with only the backward fused (with the forward shapes on too, p comes from the
// rewritten, reassociated l: the normalizer's bounded claim, not this one).
TEST(OnlineSoftmaxBackward, ValueGradientIsBitForBitTheComposedOne) {
  TierOptions only;
  only.only = {osm::kFusedBackwardId};
  for (const std::string mask : {"none", "causal", "padding:5"}) {
    Case c = step(mask, 5, 7, 0);
    SCOPED_TRACE(name(c));
    Routine composed = build_attention(spec_of(c));
    RewriteResult res = run_tier(composed, backward_on(0), only);
    ASSERT_EQ(count_shape(res, osm::kFusedBackwardId), 1);
    TensorMap in = testref::make_inputs(composed, 17);
    TensorMap want = interpret(composed, in), got = interpret(res.routine, in);
    EXPECT_TRUE(testing::bitwise_equal(want.at("grad_v"), got.at("grad_v"), "grad_v"));
  }
}

// d/dε L(θ + ε·u) at ε = 0 by central differences of the forward alone (f64, h = 1e-5), against
// Σ ∇L·u from the fused gradients, L = Σ o·dout: within 1e-6.
TEST(OnlineSoftmaxBackward, FusedGradientsPassAFiniteDifferenceCheck) {
  for (const std::string mask : {"none", "causal"})
    for (std::int64_t b : {std::int64_t{0}, std::int64_t{3}}) {
      Case c = step(mask, 5, 7, b, Prec::F64);
      SCOPED_TRACE(name(c));
      Ran r = run_both(c, 3);
      AttentionCase fwd = c;
      fwd.train = false;
      const Routine forward = build_attention(spec_of(fwd));
      const TensorMap dirs = testref::make_inputs(r.composed, 99);
      auto loss_at = [&](double eps) {
        TensorMap in;
        for (const char* n : {"q", "k", "v"}) {
          Tensor t = r.in.at(n);
          for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] += eps * dirs.at(n).data[i];
          in[n] = t;
        }
        return testref::dot_loss(interpret(forward, in), r.in, {{"o", "dout"}});
      };
      const double h = 1e-5;
      const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
      double analytic = 0;
      for (const auto& [g, n] : {std::pair{"grad_q", "q"}, {"grad_k", "k"}, {"grad_v", "v"}})
        for (std::size_t i = 0; i < r.got.at(g).data.size(); ++i)
          analytic += r.got.at(g).data[i] * dirs.at(n).data[i];
      EXPECT_NEAR(analytic, fd, 1e-6) << "directional derivative";
    }
}

TEST(OnlineSoftmaxBackward, CompiledCIsBitwiseTheInterpreterTwiceInARow) {
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (Case c :
       {step("causal", 5, 7, 0), step("none", 4, 9, 3), step("padding:9", 3, 9, 2),
        step("causal", 6, 6, 16, Prec::F64), step("causal", 5, 7, 2, Prec::F16), step("causal", 37, 45, 7)}) {
    rs.push_back(run_tier(build_attention(spec_of(c)), backward_on(c.block)).routine);
    names.push_back(name(c));
  }
  // A second run of the step recomputes identical gradients (the zero-outs it accumulates onto
  // are kept).
  testing::expect_compiled_bitwise(rs, names, true);
}

// The backward of `r` in the per-pair form (every nest with scope locals per pair), built with the
// shape's own matcher and emitter, blocks disallowed.
Routine per_pair_backward(const Routine& r) {
  osm::RoutineView view(r);
  NameMinter names(r);
  std::map<int, std::vector<StmtP>> replacements;
  std::vector<Node> minted;
  for (const osm::Normalizer& nz : osm::find_normalizers(view).found) {
    auto bw = osm::match_backward(view, nz);
    if (!bw || !std::holds_alternative<osm::BackwardPlan>(*bw)) continue;
    const auto& plan = std::get<osm::BackwardPlan>(*bw);
    osm::BackwardEmission em = osm::emit_backward(plan, view, names, false);
    EXPECT_FALSE(em.blocked);
    for (int p : plan.consumed) replacements[p] = {};
    replacements[plan.emit_at] = em.stmts;
    for (auto& n : em.nodes) minted.push_back(n);
  }
  Routine out = view.rebuild(replacements);
  for (auto& n : minted) out.nodes.push_back(n);
  return out;
}

// Inputs with infinities, NaN, signed zeros, subnormals and large scores in v, dout and q.
TensorMap hostile_inputs(const Routine& r, std::uint64_t seed) {
  TensorMap in = testref::make_inputs(r, seed);
  const double specials[] = {INFINITY, -INFINITY, NAN, -0.0, 0.0, -1e-40, 1e-40, -3.0};
  for (auto& [node, t] : in)
    for (std::int64_t c = 0; c < t.size(); ++c) {
      const std::uint64_t h = (seed * 1000003u + static_cast<std::uint64_t>(c) * 7919u) % 29u;
      const auto cell = static_cast<std::size_t>(c);
      if ((node == "v" || node == "dout") && h < 8) t.data[cell] = round_to(t.prec, specials[h]);
      if (node == "q" && h == 9) t.data[cell] = 40.0;
    }
  return in;
}

// The blocked form is the per-pair form bit for bit (the same expression per cell, every gradient
// cell accumulating its pairs in the same order), on the interpreter and compiled, tails included
// (37 keys: a block of 37; 70 keys: 64 and a tail of 6).
TEST(OnlineSoftmaxBackward, BlockedFormIsBitForBitThePerPairForm) {
  TierOptions only;
  only.only = {osm::kFusedBackwardId};
  std::vector<Routine> compiled;
  std::vector<std::string> names;
  // The last four skip fully masked blocks' score and dp contractions (fused_backward.h, "skips"):
  // key blocks of query rows, query blocks of keys, tails, under hostile inputs whose NaNs and
  // infinities a skipped step must not let through.
  for (Case c : {step("causal", 5, 7), step("padding:3", 6, 9), step("none", 3, 70), step("causal", 70, 37),
                 step("causal", 5, 7, 0, Prec::F16), step("prefix:2", 4, 6, 0, Prec::F64), step("causal", 80, 80),
                 step("padding:20", 9, 80), step("prefix:60", 9, 80, 0, Prec::F64)}) {
    SCOPED_TRACE(name(c));
    const Routine composed = build_attention(spec_of(c));
    RewriteResult blocked = run_tier(composed, backward_on(0), only);
    ASSERT_EQ(count_shape(blocked, osm::kFusedBackwardId), 1);
    ASSERT_NE(print_routine(blocked.routine).find("os_bwd_probs_"), std::string::npos)
        << "not the blocked form";
    const Routine pair = per_pair_backward(composed);
    ASSERT_TRUE(well_formed(pair));
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      const TensorMap in = hostile_inputs(composed, seed);
      EXPECT_TRUE(testing::bitwise_equal(interpret(pair, in), interpret(blocked.routine, in)));
    }
    // Every mask guards its blocks' score steps; the cases over 80 pairs have blocks it hides.
    EXPECT_EQ(count_kind(blocked.routine, StmtKind::If) > 0, c.mask != "none");
    // Compiled: the per-pair forms of the small cases, and the causal 80 x 80 step's blocked form
    // with its guards (each compile of a blocked form costs seconds).
    const bool large = c.sq == 80 || c.sk == 80;
    if (large && c.mask != "causal") continue;
    compiled.push_back(large ? blocked.routine : pair);
    names.push_back(name(c) + (large ? " blocked" : " per pair"));
  }
  testing::expect_compiled_bitwise(compiled, names);
}

TEST(OnlineSoftmaxBackward, WithTheFoldNoSquareBufferIsLeftAndTheTierIsAFixpoint) {
  Case c = step("causal", 6, 10, 4);
  Routine composed = build_attention(spec_of(c));
  RewriteResult res = run_tier(composed, backward_on(4));
  EXPECT_EQ(count_shape(res, osm::kFusedBackwardId), 1);
  EXPECT_EQ(count_shape(res, osm::kBlockFoldId), 1);
  for (const Node& n : res.routine.nodes)
    EXPECT_FALSE(n.dims.size() == 4 && n.dims[1] == 6 && n.dims[3] == 10)
        << n.name << " is a [seq, seq] buffer";
  RewriteResult again = run_tier(res.routine, backward_on(4));
  EXPECT_TRUE(again.applications.empty());
  EXPECT_TRUE(equal(again.routine, res.routine));
  // Gate off: the composed backward stays (the forward shapes still apply).
  Config fwd_only;
  fwd_only.set("online_softmax", "true");
  EXPECT_EQ(count_shape(run_tier(composed, fwd_only), osm::kFusedBackwardId), 0);
  // online_softmax off: the backward key is inert.
  Config inert;
  inert.set("online_softmax_backward", "true");
  EXPECT_TRUE(equal(run_tier(composed, inert).routine, composed));
  // A forward alone: nothing to fuse and nothing to say.
  AttentionCase fwd = c;
  fwd.train = false;
  RewriteResult f = run_tier(build_attention(spec_of(fwd)), backward_on(0));
  EXPECT_EQ(count_shape(f, osm::kFusedBackwardId), 0);
  for (const auto& d : f.declines) EXPECT_NE(d.shape, osm::kFusedBackwardId) << d.sentence;
}

// Random training steps (mask, fill, lengths, batch, heads, layers, f32/f64, the two-pass or a fold
// of any block size): the fused backward applies once per layer and every output stays within the
// differential tolerance of the composed step, NaN exactly where it has NaN.
RC_GTEST_PROP(OnlineSoftmaxBackwardProperty, AgreesWithTheComposedStepOnRandomSteps, ()) {
  AttentionSpec spec;
  spec.train = true;
  spec.batch = *rc::gen::inRange(1, 3);
  spec.heads = *rc::gen::inRange(1, 3);
  spec.sq = *rc::gen::inRange(1, 10);
  spec.sk = *rc::gen::inRange(1, 10);
  spec.layers = *rc::gen::inRange(1, 3);
  spec.d = *rc::gen::inRange(1, 5);
  spec.e = spec.layers > 1 ? spec.d : *rc::gen::inRange(1, 5);
  if (spec.layers > 1) spec.sk = spec.sq;  // a layer's output feeds the next as q, k and v
  const int mask = *rc::gen::inRange(0, 4);
  const std::int64_t cut = *rc::gen::inRange<std::int64_t>(0, spec.sk + 1);
  spec.mask = mask == 0   ? "none"
              : mask == 1 ? "causal"
              : mask == 2 ? fmt::format("padding:{}", cut)
                          : fmt::format("prefix:{}", cut);
  spec.mask_fill = *rc::gen::element<std::string>("-inf", "-1e4", "nan", "inf");
  spec.precision = *rc::gen::element(Prec::F32, Prec::F64);
  const std::int64_t block = *rc::gen::inRange<std::int64_t>(0, 12);
  Routine composed = build_attention(spec);
  RewriteResult res = run_tier(composed, backward_on(block));
  RC_ASSERT(well_formed(res.routine));
  RC_ASSERT(count_shape(res, osm::kFusedBackwardId) == spec.layers);
  TensorMap in = testref::make_inputs(composed, *rc::gen::inRange<std::uint64_t>(1, 1000));
  TensorMap want = interpret(composed, in), got = interpret(res.routine, in);
  // The differential tolerance plus an absolute floor: with two keys and one query, say, the score
  // gradients cancel to almost nothing (Σ_t ds_t = 0 over the reals) and both steps' rounding is
  // then of the inputs' size, not of the gradient's (docs/bounds.md §8); a wrong gradient is off
  // by far more than either.
  const bool f64 = spec.precision == Prec::F64;
  const double tol = f64 ? 1e-12 : 1e-5, floor = f64 ? 1e-13 : 1e-6;
  for (const auto& [node, t] : want) {
    const std::vector<double>& g = got.at(node).data;
    double rms = 0;
    int n = 0;
    for (double w : t.data) {
      if (!std::isfinite(w)) continue;
      rms += w * w;
      ++n;
    }
    rms = n ? std::sqrt(rms / n) : 0;
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      const double w = t.data[i];
      RC_ASSERT(std::isnan(w) == std::isnan(g[i]));
      if (!std::isfinite(w) || !std::isfinite(g[i])) {
        RC_ASSERT(std::isnan(w) || w == g[i]);
        continue;
      }
      RC_ASSERT(std::abs(g[i] - w) <= tol * (std::abs(w) + rms) + floor);
    }
  }
}

// tests/lit/online_softmax/backward-decline-*.fp: with only the fused backward selected, the
// routine is left exactly as it was and the one decline carries the file's code.
TEST(OnlineSoftmaxBackward, EveryGoldenDeclineLeavesTheRoutineAsItWas) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(lit_path("")))
    if (e.path().filename().string().rfind("backward-decline-", 0) == 0)
      files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 11u);
  static const std::regex re(R"(\[([a-z-]+)\]:)");
  TierOptions only;
  only.only = {osm::kFusedBackwardId};
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const std::string text = read_text_file(lit_path(f));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, re));
    Routine r = lit_routine(f);
    RewriteResult res = run_tier(r, backward_on(0), only);
    EXPECT_TRUE(equal(res.routine, r));
    EXPECT_TRUE(res.applications.empty());
    ASSERT_EQ(res.declines.size(), 1u);
    EXPECT_EQ(res.declines[0].code, m[1].str()) << res.declines[0].sentence;
    EXPECT_EQ(res.declines[0].shape, osm::kFusedBackwardId);
  }
}

}  // namespace
}  // namespace fp
