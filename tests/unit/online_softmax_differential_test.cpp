// Online softmax, differential: the rewritten attention against the composed one on the
// interpreter — forward outputs within 1e-5 (f32) and 1e-12 (f64) across masks (causal, prefix,
// padding), rectangular sq != sk, stacked layers (one scan per layer), mask fills -inf / finite /
// NaN (NaN exactly where the composed form has NaN); training steps (composed backward, backward
// gate off) with every gradient within 1e-4 at f32; and the hoist alone, which must be bitwise.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "attention_reference.h"
#include "frontend/attention.h"
#include "core/interpreter.h"
#include "online_softmax_fixtures.h"
#include "tensor_expect.h"

namespace fp {
namespace {

using namespace ostest;

struct Case {
  std::string mask = "none";
  std::string fill = "-inf";
  std::int64_t sq = 3, sk = 3;
  int layers = 1;
  Prec prec = Prec::F32;
  bool train = false;
  double dropout = 0;
};

std::string name(const Case& c) {
  return ::testing::PrintToString(c.mask) + " fill " + c.fill + " sq " + std::to_string(c.sq) + " sk " +
         std::to_string(c.sk) + " layers " + std::to_string(c.layers) + " " + prec_name(c.prec) +
         (c.train ? " train" : "") + (c.dropout > 0 ? " dropout" : "");
}

AttentionSpec spec_of(const Case& c) {
  AttentionSpec s;
  s.batch = 1;
  s.heads = 2;
  s.sq = c.sq;
  s.sk = c.sk;
  s.d = c.layers > 1 ? 3 : 4;
  s.e = 3;
  s.mask = c.mask;
  s.mask_fill = c.fill;
  s.precision = c.prec;
  s.layers = c.layers;
  s.train = c.train;
  s.dropout = c.dropout;
  return s;
}

// Runs composed and rewritten on the same inputs and compares every output.
void differential(const Case& c, double tol) {
  SCOPED_TRACE(name(c));
  Routine composed = build_attention(spec_of(c));
  RewriteResult res = rewrite(composed);
  ASSERT_TRUE(well_formed(res.routine));
  EXPECT_EQ(count_kind(res.routine, StmtKind::Scan), c.layers);
  TensorMap in = testref::make_inputs(composed, 7 + static_cast<std::uint64_t>(c.sq * 31 + c.sk));
  TensorMap want = interpret(composed, in);
  TensorMap got = interpret(res.routine, in);
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [node, t] : want) EXPECT_TRUE(testref::close(got.at(node).data, t.data, tol, node));
}

TEST(OnlineSoftmaxDifferential, ForwardF32AcrossMasksAndShapes) {
  for (const std::string mask : {"none", "causal", "prefix:2", "padding:1"})
    for (auto [sq, sk] : {std::pair<std::int64_t, std::int64_t>{3, 3}, {2, 5}, {5, 2}}) {
      Case c;
      c.mask = mask;
      c.sq = sq;
      c.sk = sk;
      differential(c, 1e-5);
    }
}

TEST(OnlineSoftmaxDifferential, ForwardF64) {
  for (const std::string mask : {"none", "causal", "padding:2"}) {
    Case c;
    c.mask = mask;
    c.sq = 3;
    c.sk = 4;
    c.prec = Prec::F64;
    differential(c, 1e-12);
  }
}

TEST(OnlineSoftmaxDifferential, MaskFillsMinusInfFiniteAndNaN) {
  // causal with sq > sk leaves the first query rows with no visible key: under -inf those rows
  // are NaN in both forms; under NaN every masked row is NaN in both; a finite fill keeps them.
  for (const std::string fill : {"-inf", "-10000", "-1e30", "nan"})
    for (const std::string mask : {"causal", "padding:1"}) {
      Case c;
      c.mask = mask;
      c.fill = fill;
      c.sq = 4;
      c.sk = 2;
      differential(c, 1e-5);
    }
}

TEST(OnlineSoftmaxDifferential, StackedLayersOneScanEach) {
  Case c;
  c.mask = "causal";
  c.layers = 3;
  c.sq = 3;
  c.sk = 3;
  differential(c, 1e-5);
}

TEST(OnlineSoftmaxDifferential, TrainingStepGradientsWithBackwardGateOff) {
  for (const std::string mask : {"none", "causal", "padding:1"}) {
    Case c;
    c.mask = mask;
    c.train = true;
    c.sq = 3;
    c.sk = 4;
    differential(c, 1e-4);
  }
  Case two;
  two.train = true;
  two.layers = 2;
  two.mask = "causal";
  differential(two, 1e-4);
  Case drop;
  drop.train = true;
  drop.dropout = 0.25;
  differential(drop, 1e-4);
}

using testing::bitwise_equal;

TEST(OnlineSoftmaxDifferential, ValuePassHoistAloneIsBitwiseExact) {
  // With only shape 2 enabled the normalizer stays composed and every output must be bitwise
  // equal to the original (the shape's exact claim), training step included.
  for (bool train : {false, true})
    for (Prec p : {Prec::F32, Prec::F16}) {
      Case c;
      c.mask = "causal";
      c.train = train;
      c.prec = p;
      c.sq = 3;
      c.sk = 5;
      c.dropout = train ? 0.25 : 0.0;
      SCOPED_TRACE(name(c));
      Routine composed = build_attention(spec_of(c));
      RewriteResult res = rewrite(composed, TierOptions{{"online-softmax.value-pass-hoist"}, {}, false});
      ASSERT_FALSE(res.applications.empty());
      EXPECT_EQ(count_kind(res.routine, StmtKind::Scan), 0);
      ASSERT_TRUE(well_formed(res.routine));
      for (std::uint64_t seed : {1u, 2u, 3u}) {
        TensorMap in = testref::make_inputs(composed, seed);
        EXPECT_TRUE(bitwise_equal(interpret(composed, in), interpret(res.routine, in)));
      }
    }
}

}  // namespace
}  // namespace fp
