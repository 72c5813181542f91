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

using Case = AttentionCase;

std::string name(const Case& c) { return case_name(c); }

// Runs composed and rewritten on the same inputs and compares every output.
void differential(const Case& c, double tol) {
  SCOPED_TRACE(name(c));
  Routine composed = build_attention(spec_of(c));
  RewriteResult res = rewrite(composed);
  ASSERT_TRUE(well_formed(res.routine));
  EXPECT_EQ(count_kind(res.routine, StmtKind::Scan), c.layers);
  expect_outputs_close(composed, res.routine, 7 + static_cast<std::uint64_t>(c.sq * 31 + c.sk), tol);
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
