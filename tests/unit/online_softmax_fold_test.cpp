// Online softmax, shape 4 (the block fold, rewrites/online_softmax/block_fold.h): the fold against
// the composed attention on the interpreter across block sizes B in {1, 3, 4, 16, sk, 2·sk}
// (tails and single blocks), sq != sk both ways, masks (none, causal, padding, a prefix), fills
// (-inf, a finite -1e4, NaN, +inf: NaN exactly where the composed form has NaN), f64/f32/f16/bf16
// and stacked layers; the compiled C executor bitwise against the interpreter on the fold; a
// training step (fold forward, composed backward) with every gradient within 1e-5 of the composed
// step; the fold's shape (no square buffer left, one scan per layer); idempotence, gate-off
// identity; and one negative test per decline.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "attention_reference.h"
#include "compiled_expect.h"
#include "core/interpreter.h"
#include "core/numerics.h"
#include "exec/c_executor.h"
#include "frontend/attention.h"
#include "jit_test_options.h"
#include "online_softmax_fixtures.h"
#include "rewrites/online_softmax/block_fold.h"
#include "tensor_expect.h"

namespace fp {
namespace {

using namespace ostest;

Config fold_on(std::int64_t block) {
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_block", std::to_string(block));
  return c;
}

using Case = BlockedCase;

std::string name(const Case& c) { return blocked_case_name(c); }

int fold_count(const RewriteResult& r) { return count_shape(r, osm::kBlockFoldId); }

// Composed and folded on the same inputs; every output within `tol` (attention_reference.h close:
// relative to the larger of the cell and the tensor's rms, NaN and infinities exact).
void differential(const Case& c, double tol) {
  SCOPED_TRACE(name(c));
  Routine composed = build_attention(spec_of(c));
  RewriteResult res = run_tier(composed, fold_on(c.block));
  ASSERT_TRUE(well_formed(res.routine));
  EXPECT_EQ(fold_count(res), c.layers);
  expect_outputs_close(composed, res.routine, 11 + static_cast<std::uint64_t>(c.sq * 31 + c.sk), tol);
}

TEST(OnlineSoftmaxFold, ForwardF32AcrossBlocksMasksAndShapes) {
  for (const std::string mask : {"none", "causal", "padding:2", "prefix:1"})
    for (auto [sq, sk] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {7, 4}, {1, 9}})
      for (std::int64_t b : {std::int64_t{1}, std::int64_t{3}, std::int64_t{4}, std::int64_t{16}, sk, 2 * sk}) {
        Case c;
        c.mask = mask;
        c.sq = sq;
        c.sk = sk;
        c.block = b;
        differential(c, 1e-5);
      }
}

TEST(OnlineSoftmaxFold, FillsKeepTheComposedNaNsAndFullyMaskedRows) {
  // Padding 9 of 9 keys: every row fully masked (NaN rows in the composed form for -inf fills).
  for (const std::string fill : {"-inf", "-1e4", "nan", "inf"})
    for (const std::string mask : {"causal", "padding:9", "padding:4"}) {
      Case c;
      c.mask = mask;
      c.fill = fill;
      c.sq = 4;
      c.sk = 9;
      c.block = 4;
      differential(c, 1e-5);
    }
}

TEST(OnlineSoftmaxFold, EveryPrecisionAndStackedLayers) {
  for (Prec p : {Prec::F64, Prec::F16, Prec::BF16}) {
    Case c;
    c.prec = p;
    c.mask = "causal";
    differential(c, p == Prec::F64 ? 1e-12 : (p == Prec::F16 ? 4e-3 : 3e-2));
  }
  for (int layers : {2, 3}) {
    Case c;
    c.layers = layers;
    c.block = 2;
    differential(c, 1e-5);
  }
}

// The training step: fold forward, composed backward, every gradient within 1e-5 of the composed
// step's (f32), the backward reading the row state the fold stores.
TEST(OnlineSoftmaxFold, TrainingStepGradientsMatchTheComposedStep) {
  for (const std::string mask : {"none", "causal"})
    for (std::int64_t b : {std::int64_t{2}, std::int64_t{4}, std::int64_t{16}}) {
      Case c;
      c.mask = mask;
      c.train = true;
      c.block = b;
      differential(c, 1e-5);
    }
}

TEST(OnlineSoftmaxFold, LeavesNoSquareBufferAndIsIdempotent) {
  Case c;
  c.mask = "causal";
  c.sq = 6;
  c.sk = 10;
  Routine composed = build_attention(spec_of(c));
  RewriteResult res = run_tier(composed, fold_on(4));
  for (const Node& n : res.routine.nodes) EXPECT_NE(n.dims.back(), 10) << n.name << " is a [seq, seq] buffer";
  EXPECT_EQ(count_kind(res.routine, StmtKind::Scan), 1);
  RewriteResult again = run_tier(res.routine, fold_on(4));
  EXPECT_TRUE(again.applications.empty());
  EXPECT_TRUE(equal(again.routine, res.routine));
  // Gate off, or B = 0: the fold never applies.
  Config off;
  EXPECT_TRUE(equal(run_tier(composed, off).routine, composed));
  EXPECT_EQ(fold_count(run_tier(composed, fold_on(0))), 0);
  // auto: the sweep's block size, 64 (one block here), the same as forcing it.
  Config autob;
  autob.set("online_softmax", "true");
  autob.set("online_softmax_block", "auto");
  EXPECT_TRUE(equal(run_tier(composed, autob).routine, run_tier(composed, fold_on(osm::kAutoFoldBlock)).routine));
  EXPECT_EQ(fold_count(run_tier(composed, autob)), 1);
  EXPECT_EQ(osm::kAutoFoldBlock, 64);
  // All four keys on: the fixpoint is the same fold.
  Config all = fold_on(4);
  all.set("online_softmax_backward", "true");
  RewriteResult both = run_tier(composed, all);
  EXPECT_EQ(fold_count(both), 1);
  EXPECT_TRUE(equal(run_tier(both.routine, all).routine, both.routine));
}

// The compiled C executor runs the fold bitwise equal to the interpreter (tails, NaN fills,
// training steps, f64 and f16).
TEST(OnlineSoftmaxFold, CompiledCIsBitwiseTheInterpreter) {
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (Case c : {Case{"causal", "-inf", 5, 7, 3}, Case{"none", "nan", 4, 9, 4}, Case{"padding:9", "-inf", 3, 9, 2},
                 Case{"causal", "-inf", 6, 6, 16, Prec::F64}, Case{"causal", "-inf", 5, 7, 2, Prec::F16},
                 Case{"causal", "-inf", 5, 7, 3, Prec::F32, true}}) {
    rs.push_back(run_tier(build_attention(spec_of(c)), fold_on(c.block)).routine);
    names.push_back(name(c));
  }
  testing::expect_compiled_bitwise(rs, names);
}

// ---- skipped key blocks (block_fold.h, "SKIPS") -------------------------------------------------

// The fold with every skip undone: each `if live { computed block }` followed by `if live == 0 {
// skip }` becomes the computed block alone (the reference the skip must equal bit for bit).
std::vector<StmtP> unskip(const std::vector<StmtP>& body, int& undone) {
  std::vector<StmtP> out;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const StmtP& st = body[i];
    if (st->kind == StmtKind::If && i + 1 < body.size() && body[i + 1]->kind == StmtKind::If &&
        equal(body[i + 1]->value, binary(BinOp::Eq, st->value, constant(0.0, Prec::I32), Prec::I32))) {
      for (const auto& b : unskip(st->body, undone)) out.push_back(b);
      ++i;
      ++undone;
      continue;
    }
    if (st->body.empty()) {
      out.push_back(st);
      continue;
    }
    auto copy = std::make_shared<Stmt>(*st);
    copy->body = unskip(st->body, undone);
    out.push_back(copy);
  }
  return out;
}
Routine unskipped(const Routine& r, int& undone) {
  Routine u = r;
  u.body = seq(unskip(r.body->body, undone));
  return u;
}

// Inputs with the values hostile where a skip could show: ±inf, NaN, -0 and subnormals among v,
// some of them in masked keys, and large scores (α underflowing to 0 flushes U to ±0).
TensorMap hostile_inputs(const Routine& r, std::uint64_t seed) {
  TensorMap in = testref::make_inputs(r, seed);
  const double specials[] = {INFINITY, -INFINITY, NAN, -0.0, 0.0, -1e-40, 1e-40, -3.0};
  for (auto& [name, t] : in) {
    for (std::int64_t c = 0; c < t.size(); ++c) {
      const std::uint64_t h = (seed * 1000003u + static_cast<std::uint64_t>(c) * 7919u) % 23u;
      const auto cell = static_cast<std::size_t>(c);
      if (name == "v" && h < 8) t.data[cell] = round_to(t.prec, specials[h]);
      if (name == "q" && h == 9) t.data[cell] = 40.0;
    }
  }
  return in;
}

// Skipping a fully masked block leaves every output bit for bit as computing it, NaN, infinities
// and signed zeros included; the skip is emitted only for a monotone -inf mask.
TEST(OnlineSoftmaxFold, SkippedBlocksAreBitForBitTheComputedOnes) {
  int checked = 0;
  for (Case c : {Case{"causal", "-inf", 12, 12, 4}, Case{"causal", "-inf", 5, 13, 3}, Case{"causal", "-inf", 9, 9, 2, Prec::F16},
                 Case{"padding:5", "-inf", 4, 11, 2}, Case{"prefix:2", "-inf", 10, 10, 3}, Case{"causal", "-inf", 8, 8, 4, Prec::F64},
                 Case{"causal", "-inf", 8, 11, 4, Prec::F32, true}, Case{"causal", "-inf", 7, 7, 1}}) {
    SCOPED_TRACE(name(c));
    const Routine folded = run_tier(build_attention(spec_of(c)), fold_on(c.block)).routine;
    int undone = 0;
    const Routine reference = unskipped(folded, undone);
    EXPECT_EQ(undone, 1) << "the fold emits one skip";
    ASSERT_TRUE(well_formed(reference));
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      const TensorMap in = hostile_inputs(folded, seed);
      EXPECT_TRUE(testing::bitwise_equal(interpret(reference, in), interpret(folded, in)));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24);
  // No skip without a mask, under a finite or NaN fill, or a mask whose live keys are not a prefix.
  for (Case c : {Case{"none", "-inf", 6, 6, 2}, Case{"causal", "-1e4", 6, 6, 2}, Case{"causal", "nan", 6, 6, 2}}) {
    SCOPED_TRACE(name(c));
    int undone = 0;
    unskipped(run_tier(build_attention(spec_of(c)), fold_on(c.block)).routine, undone);
    EXPECT_EQ(undone, 0);
  }
}

// The compiled C runs the skip bitwise as the interpreter, in lane bands where every row agrees
// (sq = sk, B = 16) and where the rows of a band disagree on a block (bottom-right causal, B = 7),
// on hostile values.
TEST(OnlineSoftmaxFold, CompiledSkipsAreBitwiseTheInterpreter) {
  std::vector<Routine> rs;
  for (Case c : {Case{"causal", "-inf", 40, 40, 16}, Case{"causal", "-inf", 37, 45, 7}, Case{"padding:20", "-inf", 18, 41, 8},
                 Case{"causal", "-inf", 33, 33, 16, Prec::F32, true}})
    rs.push_back(run_tier(build_attention(spec_of(c)), fold_on(c.block)).routine);
  auto progs = compile_c_batch(rs, testing::jit_test_options());
  ASSERT_EQ(progs.size(), rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i)
    for (std::uint64_t seed : {1u, 2u}) {
      SCOPED_TRACE(fmt::format("routine {} seed {}", i, seed));
      const TensorMap in = hostile_inputs(rs[i], seed);
      EXPECT_TRUE(testing::bitwise_equal(interpret(rs[i], in), progs[i]->run(in)));
    }
}

// ---- declines: the two-pass form applies, with the reason code ------------------------------

std::string decline_code(const Routine& r, std::int64_t block = 4) {
  RewriteResult res = run_tier(r, fold_on(block));
  for (const auto& d : res.declines)
    if (d.shape == osm::kBlockFoldId) {
      EXPECT_FALSE(d.sentence.empty());
      EXPECT_EQ(fold_count(res), 0);
      // The two-pass form still applies to that normalizer.
      EXPECT_EQ(count_kind(res.routine, StmtKind::Scan), 1);
      return d.code;
    }
  return "(no decline)";
}

// The composed attention of the decline tests: {0} extra node declarations, {1} O's dims, {2}
// statements between the probabilities and `zero o`, {3} the value pass, {4} the score statements.
constexpr const char* kComposed = R"(routine fold_decline {{
  node q : f32[3, 2] materialized input
  node k : f32[5, 2] materialized input
  node v : f32[5, 4] materialized input
  node s : f32[3, 5] materialized
  node m : f32[3] materialized
  node n : f32[3, 5] materialized
  node e : f32[3, 5] materialized
  node l : f32[3] materialized
  node p : f32[3, 5] materialized
  {0}
  node o : f32[{1}] materialized output
  {4}
  for i in 0..2 {{ m[i] = -inf:f32 }}
  for i in 0..2 {{ for t in 0..4 {{ m[i] = max.f32(m[i], s[i, t]) }} }}
  for i in 0..2 {{ for t in 0..4 {{ n[i, t] = sub.f32(s[i, t], m[i]) }} }}
  for i in 0..2 {{ for t in 0..4 {{ e[i, t] = exp.f32(n[i, t]) }} }}
  zero l
  for i in 0..2 {{ for t in 0..4 {{ l[i] = add.f32(l[i], e[i, t]) }} }}
  for i in 0..2 {{ for t in 0..4 {{ p[i, t] = div.f32(e[i, t], l[i]) }} }}
  {2}
  zero o
  {3}
}})";

const std::string kContraction =
    "zero s\n  for i in 0..2 { for t in 0..4 { for d in 0..1 { s[i, t] = add.f32(s[i, t], mul.f32(q[i, d], k[t, d])) } } }";

Routine composed_with(const std::string& nodes, const std::string& o_dims, const std::string& between,
                      const std::string& value_pass, const std::string& scores = kContraction) {
  return parse_checked(fmt::format(fmt::runtime(kComposed), nodes, o_dims, between, value_pass, scores));
}

const std::string kValuePass = "for i in 0..2 { for c in 0..3 { for t in 0..4 { o[i, c] = add.f32(o[i, c], mul.f32(p[i, t], v[t, c])) } } }";

TEST(OnlineSoftmaxFold, AppliesToTheHandWrittenComposedForm) {
  Routine r = composed_with("", "3, 4", "", kValuePass);
  RewriteResult res = run_tier(r, fold_on(2));
  EXPECT_EQ(fold_count(res), 1);
  TensorMap in = testref::make_inputs(r, 3);
  EXPECT_TRUE(testref::close(interpret(res.routine, in).at("o").data, interpret(r, in).at("o").data, 1e-5, "o"));
}

TEST(OnlineSoftmaxFold, DeclinesADropoutLikeStep) {
  Routine r = composed_with("node pd : f32[3, 5] materialized", "3, 4",
                            "for i in 0..2 { for t in 0..4 { pd[i, t] = mul.f32(p[i, t], 2:f32) } }",
                            "for i in 0..2 { for c in 0..3 { for t in 0..4 { o[i, c] = add.f32(o[i, c], "
                            "mul.f32(pd[i, t], v[t, c])) } } }");
  EXPECT_EQ(decline_code(r), "value-pass-not-direct");
}

TEST(OnlineSoftmaxFold, DeclinesAnOutputSlice) {
  Routine r = composed_with("", "3, 8", "",
                            "for i in 0..2 { for c in 0..3 { for t in 0..4 { o[i, c] = add.f32(o[i, c], "
                            "mul.f32(p[i, t], v[t, c])) } } }");
  EXPECT_EQ(decline_code(r), "output-slice");
}

TEST(OnlineSoftmaxFold, DeclinesAnInputWrittenInTheSpan) {
  Routine r = composed_with("", "3, 4", "for t in 0..4 { for c in 0..3 { v[t, c] = 1:f32 } }", kValuePass);
  EXPECT_EQ(decline_code(r), "input-written-in-span");
}

TEST(OnlineSoftmaxFold, DeclinesScoresThatAreNotAContraction) {
  Routine r = composed_with("", "3, 4", "", kValuePass,
                            "for i in 0..2 { for t in 0..4 { s[i, t] = mul.f32(q[i, 0], k[t, 1]) } }");
  EXPECT_EQ(decline_code(r), "scores-not-contraction");
}

TEST(OnlineSoftmaxFold, DeclinesARowStateReaderItCannotMove) {
  // A guarded statement reading the row state between the normalizer and the value pass.
  Routine r = composed_with("node g : f32[3] materialized output", "3, 4",
                            "for i in 0..2 { if lt.f32(0:f32, l[i]) { g[i] = m[i] } }", kValuePass);
  EXPECT_EQ(decline_code(r), "row-state-reader");
}

TEST(OnlineSoftmaxFold, DeclinesTilesTooLargeForALocal) {
  AttentionSpec s;
  s.sq = 2;
  s.sk = 3;
  s.d = 2;
  s.e = 9000;  // 9000 numerator cells per row: 72 000 bytes at the budget's 8 per cell
  EXPECT_EQ(decline_code(build_attention(s), 2), "tile-too-large");
}

TEST(OnlineSoftmaxFold, DeclinesWithoutAValuePass) {
  Routine r = composed_with("", "3, 4", "", "for i in 0..2 { for c in 0..3 { o[i, c] = v[0, c] } }");
  EXPECT_EQ(decline_code(r), "no-value-pass");
}

}  // namespace
}  // namespace fp
