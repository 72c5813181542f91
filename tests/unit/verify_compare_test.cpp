// The one output comparison (verify/compare.h) on each basis: bitwise as the semantics define it,
// the stand-in decided rounded against agreement with its fraction <= 1 exactly when it holds, the
// certified kinds through error_fraction; the result's counts, worst fraction and first mismatch
// with both index texts; outputs of different types.

#include <gtest/gtest.h>

#include <cmath>

#include "verify/compare.h"

namespace fp::verify {
namespace {

Tensor tensor(std::vector<std::int64_t> dims, std::vector<double> data) {
  Tensor t = Tensor::zeros(Prec::F64, std::move(dims));
  t.data = std::move(data);
  return t;
}

NodeCheck check(NodeCheck::Kind kind, double rel = 0) {
  NodeCheck c;
  c.node = "o";
  c.kind = kind;
  c.rel = rel;
  return c;
}

TEST(VerifyCompare, BitwiseEqualsNaNWithNaNAndTellsTheZerosApart) {
  const Tensor a = tensor({2, 2}, {NAN, 0.0, 1.0, 2.0});
  EXPECT_TRUE(compare_output(check(NodeCheck::Kind::Bitwise), a, tensor({2, 2}, {NAN, 0.0, 1.0, 2.0})).ok());
  const OutputComparison c =
      compare_output(check(NodeCheck::Kind::Bitwise), a, tensor({2, 2}, {1.0, -0.0, 1.0, 2.0}));
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.cells, 4);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.unbounded, 2);
  EXPECT_TRUE(std::isinf(c.max_ratio()));
  ASSERT_TRUE(c.first);
  EXPECT_EQ(c.first->cell_text(), "[0,0]");
  EXPECT_EQ(c.first->why, "NaN on one side only");
  const OutputComparison z =
      compare_output(check(NodeCheck::Kind::Bitwise), a, tensor({2, 2}, {NAN, -0.0, 1.0, 2.0}));
  ASSERT_TRUE(z.first);
  EXPECT_EQ(z.first->cell_text(), "[0,1]");
  EXPECT_EQ(z.first->text(), "o[0, 1]: source 0, target -0");
  EXPECT_EQ(z.first->why, "bits differ");
}

TEST(VerifyCompare, StandInFractionIsAtMostOneExactlyWhenTheToleranceHolds) {
  // One cell, reference 1 (so the scale is 1 rounded down): the relative error rounded up.
  const double tol = 0.25;
  const Tensor a = tensor({1}, {1.0});
  const OutputComparison inside =
      compare_output(check(NodeCheck::Kind::StandIn, tol), a, tensor({1}, {1.125}));
  EXPECT_TRUE(inside.ok());
  EXPECT_GT(inside.worst, 0);
  EXPECT_LE(inside.worst, 1.0);
  const OutputComparison outside =
      compare_output(check(NodeCheck::Kind::StandIn, tol), a, tensor({1}, {2.0}));
  ASSERT_FALSE(outside.ok());
  EXPECT_GT(outside.worst, 1.0);
  EXPECT_EQ(outside.first->why.rfind("relative error 1 exceeds the bound 0.25", 0), 0u) << outside.first->why;
  // The scale of a cell is max(|reference|, rms over the finite cells): a small reference cell
  // next to large ones is judged against the rms.
  const Tensor b = tensor({3}, {1e-9, 10.0, INFINITY});
  EXPECT_TRUE(
      compare_output(check(NodeCheck::Kind::StandIn, tol), b, tensor({3}, {1.0, 10.0, INFINITY})).ok());
  const OutputComparison inf =
      compare_output(check(NodeCheck::Kind::StandIn, tol), b, tensor({3}, {1e-9, 10.0, -INFINITY}));
  ASSERT_FALSE(inf.ok());
  EXPECT_EQ(inf.first->why, "an infinity on one side only");
}

TEST(VerifyCompare, CertifiedKindsUseTheExactDecision) {
  // 0.0625 vs 0.06256103515625 with rel 0.00097656: just outside (verify_error_bound_test's case).
  NodeCheck rel = check(NodeCheck::Kind::Relative, 0.00097656);
  const OutputComparison c = compare_output(rel, tensor({1}, {0.0625}), tensor({1}, {0.06256103515625}));
  ASSERT_FALSE(c.ok());
  EXPECT_GT(c.first->ratio, 1.0);
  EXPECT_EQ(c.first->why.rfind("error 1", 0), 0u) << c.first->why;
  EXPECT_STREQ(comparison_basis_name(rel.kind), "certified");
  // Scaled: relative to the per-cell magnitude of the scale node, looked up in the source run.
  NodeCheck scaled = check(NodeCheck::Kind::Scaled, 0.5);
  scaled.scale_node = "m";
  const TensorMap src{{"o", tensor({2}, {1.0, 1.0})}, {"m", tensor({2}, {4.0, 1.0})}};
  const TensorMap tgt{{"o", tensor({2}, {2.0, 1.25})}};
  const OutputComparison s = compare_output(scaled, src, tgt);
  EXPECT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s.worst, 0.5);  // (error_fraction rounds up)
}

TEST(VerifyCompare, OutputsOfDifferentTypesAreOneMismatchOverEveryCell) {
  const OutputComparison c = compare_output(check(NodeCheck::Kind::Bitwise), tensor({2, 2}, {0, 0, 0, 0}),
                                            tensor({4}, {0, 0, 0, 0}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.mismatches, 4);
  EXPECT_EQ(c.first->cell_text(), "[]");
  EXPECT_EQ(c.first->why, "the two outputs have different types");
}

TEST(VerifyCompare, CompareOutputsReturnsTheFirstFailingNodeAndEveryNodesWorst) {
  const TensorMap src{{"a", tensor({2}, {1.0, 1.0})}, {"b", tensor({1}, {1.0})}};
  const TensorMap tgt{{"a", tensor({2}, {1.0, 1.5})}, {"b", tensor({1}, {3.0})}};
  NodeCheck a = check(NodeCheck::Kind::Relative, 1.0), b = check(NodeCheck::Kind::Relative, 1.0);
  a.node = "a";
  b.node = "b";
  std::map<std::string, double> worst;
  const std::optional<Mismatch> m = compare_outputs({a, b}, src, tgt, &worst);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->text(), "b[0]: source 1, target 3 (2x the allowed error)");
  EXPECT_DOUBLE_EQ(worst.at("a"), 0.5);
  EXPECT_DOUBLE_EQ(worst.at("b"), 2.0);
  EXPECT_EQ(compare_outputs({a, b}, src, tgt)->text(), m->text());
}

// The block fold's partial numerators reach l·Σ|p·v| (1 <= l <= n) and may overflow, with either
// sign, where the composed O does not: with a headroom of n keys a one-sided infinity whose scale
// times n reaches the f32 threshold is outside the no-overflow hypothesis (within the bound);
// without headroom, or with a scale too small to overflow even times n, it is a violation.
TEST(VerifyCompare, FoldNumeratorHeadroomExcusesOnlyOverflowsItCouldCause) {
  NodeCheck c = check(NodeCheck::Kind::Scaled, 1e-6);
  c.overflow_tolerant = true;
  c.prec = Prec::F32;
  const Tensor src = tensor({1}, {-4.55e37}), tgt = tensor({1}, {INFINITY});
  const Tensor big = tensor({1}, {1.0e38}), small = tensor({1}, {1.0e36});
  EXPECT_FALSE(compare_output(c, src, tgt, &big).ok());  // no headroom: the signs differ
  c.overflow_headroom = 6;
  EXPECT_TRUE(compare_output(c, src, tgt, &big).ok());    // 6e38 reaches the f32 threshold
  EXPECT_FALSE(compare_output(c, src, tgt, &small).ok());  // 6e36 does not
  // An overflowed partial numerator becomes NaN as easily as ±inf: inf − inf when partial sums of
  // both signs overflow, inf·0 when a rescale underflows to 0 (found by `flashproof fuzz rewrite`:
  // f32, finite source 3.4e38 and -0.25 against NaN). Excused only where an overflow could happen.
  EXPECT_TRUE(compare_output(c, src, tensor({1}, {NAN}), &big).ok());
  EXPECT_FALSE(compare_output(c, src, tensor({1}, {NAN}), &small).ok());
  EXPECT_TRUE(compare_output(c, tensor({1}, {NAN}), src, &big).ok());
  c.overflow_headroom = 1;
  EXPECT_FALSE(compare_output(c, src, tensor({1}, {NAN}), &big).ok());  // no intermediate to overflow
}

// Without headroom, a one-sided overflow is excused only with the finite side's sign: a source at
// -max that the target turns into +inf crossed the whole range, which no rounding of a bounded
// difference does, however near the threshold the source is.
TEST(VerifyCompare, AnOverflowOfTheOtherSignIsAViolationEvenAtTheThreshold) {
  NodeCheck c = check(NodeCheck::Kind::Scaled, 1e-6);
  c.overflow_tolerant = true;
  c.prec = Prec::F32;
  const double max32 = 3.4028234663852886e38;
  EXPECT_TRUE(std::isinf(cell_ratio(c, -max32, INFINITY, max32)));
  EXPECT_TRUE(std::isinf(cell_ratio(c, max32, -INFINITY, max32)));
  EXPECT_EQ(cell_ratio(c, max32, INFINITY, max32), 1);  // the same sign: within the bound's hypothesis
}

// What a bound carried from a check may assume of a cell: rel·|s| (or rel·scale) + abs rounded up,
// and nothing (+inf) where the check would excuse an overflow, at a non-finite cell, or for a check
// that is not a bound.
TEST(VerifyCompare, CertifiedCellErrorIsABoundOnlyWhereTheCheckIsOne) {
  NodeCheck rel;
  rel.kind = NodeCheck::Kind::Relative;
  rel.rel = 1e-6;
  rel.abs = 1e-30;
  rel.prec = Prec::F32;
  const double e = certified_cell_error(rel, 2.0, 0);
  EXPECT_GE(e, 2e-6 + 1e-30);
  EXPECT_LE(e, 2e-6 * (1 + 1e-12));
  NodeCheck scaled = rel;
  scaled.kind = NodeCheck::Kind::Scaled;
  EXPECT_GE(certified_cell_error(scaled, 2.0, 8.0), 8e-6);
  EXPECT_TRUE(std::isinf(certified_cell_error(rel, NAN, 0)));
  EXPECT_TRUE(std::isinf(certified_cell_error(rel, INFINITY, 0)));
  NodeCheck tolerant = scaled;
  tolerant.overflow_tolerant = true;
  EXPECT_TRUE(std::isfinite(certified_cell_error(tolerant, 1.0, 1.0)));
  EXPECT_TRUE(std::isinf(certified_cell_error(tolerant, 3.3e38, 1e44)));  // may overflow f32 there
  tolerant.overflow_headroom = 1e6;
  EXPECT_TRUE(std::isinf(certified_cell_error(tolerant, 1e33, 1e30)));  // an intermediate may
  NodeCheck stand_in = rel;
  stand_in.kind = NodeCheck::Kind::StandIn;
  EXPECT_TRUE(std::isinf(certified_cell_error(stand_in, 1.0, 1.0)));
}

}  // namespace
}  // namespace fp::verify
