// Online softmax, special values on a single row (hand-built routines in the text format): the
// scan normalizer against the composed form on the interpreter — a NaN score, +inf, masked
// prefixes, an all -inf row (stores NaN while the state stays 0), all scores at the lowest finite
// value (the sum equals the row length), an f16 chain (f32 state) against per-step f16, and an f64
// chain (f64 state, floored at the f64 lowest finite value).

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "core/interpreter.h"
#include "core/numerics.h"
#include "online_softmax_fixtures.h"

namespace fp {
namespace {

using namespace ostest;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kLowestF32 = -static_cast<double>(std::numeric_limits<float>::max());
const double kLowestF64 = -std::numeric_limits<double>::max();

// One row of T scores: m = max x, l = Σ exp(x - m), composed as the frontend lowers it.
Routine row_routine(Prec p, std::int64_t T) {
  const std::string P = prec_name(p);
  const std::string t = std::to_string(T - 1);
  std::string text =
      "routine row {\n"
      "  node x : " +
      P + "[1, " + std::to_string(T) +
      "] materialized input\n"
      "  node m : " +
      P +
      "[1] materialized output\n"
      "  node n : " +
      P + "[1, " + std::to_string(T) +
      "] materialized\n"
      "  node e : " +
      P + "[1, " + std::to_string(T) +
      "] materialized\n"
      "  node l : " +
      P +
      "[1] materialized output\n"
      "  for i in 0..0 {\n    m[i] = -inf:" +
      P +
      "\n  }\n"
      "  for i in 0..0 {\n    for t in 0.." +
      t + " {\n      m[i] = max." + P +
      "(m[i], x[i, t])\n    }\n  }\n"
      "  for i in 0..0 {\n    for t in 0.." +
      t + " {\n      n[i, t] = sub." + P +
      "(x[i, t], m[i])\n    }\n  }\n"
      "  for i in 0..0 {\n    for t in 0.." +
      t + " {\n      e[i, t] = exp." + P +
      "(n[i, t])\n    }\n  }\n"
      "  zero l\n"
      "  for i in 0..0 {\n    for t in 0.." +
      t + " {\n      l[i] = add." + P +
      "(l[i], e[i, t])\n    }\n  }\n"
      "}\n";
  return parse_checked(text, "row.fp");
}

struct RowResult {
  double m = 0, l = 0;
};

RowResult run_row(const Routine& r, Prec p, const std::vector<double>& x) {
  Tensor t;
  t.prec = p;
  t.dims = {1, static_cast<std::int64_t>(x.size())};
  for (double v : x) t.data.push_back(round_to(p, v));
  TensorMap out = interpret(r, {{"x", t}});
  return {out.at("m").data[0], out.at("l").data[0]};
}

// Runs composed and rewritten on the row; m must agree bitwise, NaN in l exactly where composed.
struct Both {
  RowResult composed, rewritten;
};
Both run_both(Prec p, const std::vector<double>& x) {
  Routine r = row_routine(p, static_cast<std::int64_t>(x.size()));
  RewriteResult res = rewrite(r);
  EXPECT_EQ(count_kind(res.routine, StmtKind::Scan), 1);
  Both b{run_row(r, p, x), run_row(res.routine, p, x)};
  EXPECT_TRUE(same_value(b.composed.m, b.rewritten.m)) << b.composed.m << " vs " << b.rewritten.m;
  EXPECT_EQ(std::isnan(b.composed.l), std::isnan(b.rewritten.l)) << b.composed.l << " vs " << b.rewritten.l;
  return b;
}

TEST(OnlineSoftmaxSpecialValues, NaNScorePoisonsTheRowAsComposed) {
  for (const auto& x : std::vector<std::vector<double>>{
           {0.5, kNaN, 1.0}, {kNaN, 0.5, 1.0}, {0.5, 1.0, kNaN}, {-kInf, kNaN, 2.0}}) {
    Both b = run_both(Prec::F32, x);
    EXPECT_TRUE(std::isnan(b.rewritten.m));
    EXPECT_TRUE(std::isnan(b.rewritten.l));
  }
}

TEST(OnlineSoftmaxSpecialValues, PlusInfinityScoreGivesNaNAsComposed) {
  Both b = run_both(Prec::F32, {1.0, kInf, 2.0});
  EXPECT_EQ(b.rewritten.m, kInf);
  EXPECT_TRUE(std::isnan(b.rewritten.l));
}

TEST(OnlineSoftmaxSpecialValues, MaskedPrefixesContributeNothing) {
  for (const auto& x : std::vector<std::vector<double>>{
           {-kInf, -kInf, 0.25, 1.0}, {-kInf, 0.5}, {-kInf, -kInf, -kInf, -3.0, -kInf, 2.0, -kInf}}) {
    Both b = run_both(Prec::F32, x);
    EXPECT_TRUE(std::isfinite(b.rewritten.l));
    EXPECT_NEAR(b.rewritten.l, b.composed.l, 1e-6 * b.composed.l);
  }
}

TEST(OnlineSoftmaxSpecialValues, AllMinusInfinityRowStoresNaNWhileTheStateStaysZero) {
  Both b = run_both(Prec::F32, {-kInf, -kInf, -kInf});
  EXPECT_EQ(b.rewritten.m, -kInf);
  EXPECT_TRUE(std::isnan(b.rewritten.l));
  // The carried sum stayed exactly 0 through the masked prefix: the first live score contributes
  // exp(0) = 1 onto a zero state (a NaN state would have stayed NaN).
  Both live = run_both(Prec::F32, {-kInf, -kInf, 0.5});
  EXPECT_EQ(live.rewritten.l, 1.0);
  EXPECT_EQ(live.composed.l, 1.0);
}

TEST(OnlineSoftmaxSpecialValues, AllScoresAtTheLowestFiniteValueSumToTheRowLength) {
  Both b = run_both(Prec::F32, std::vector<double>(5, kLowestF32));
  EXPECT_EQ(b.rewritten.m, kLowestF32);
  EXPECT_EQ(b.rewritten.l, 5.0);
  EXPECT_EQ(b.composed.l, 5.0);
  Both d = run_both(Prec::F64, std::vector<double>(7, kLowestF64));
  EXPECT_EQ(d.rewritten.m, kLowestF64);
  EXPECT_EQ(d.rewritten.l, 7.0);
}

// Reference Σ exp(x - max) in double from the f16-rounded scores.
double reference_sum(const std::vector<double>& x) {
  double mx = -kInf;
  for (double v : x) mx = std::max(mx, v);
  double s = 0;
  for (double v : x) s += std::exp(v - mx);
  return s;
}

TEST(OnlineSoftmaxSpecialValues, F16ChainCarriesF32StateAndRoundsOnceOnStore) {
  // 64 scores on a coarse grid: the composed form rounds the running sum to f16 at every step,
  // the scan only when it stores l.
  std::vector<double> x;
  for (int i = 0; i < 64; ++i) x.push_back(round_to(Prec::F16, std::sin(0.7 * i) * 3.0));
  Both b = run_both(Prec::F16, x);
  const double ref = reference_sum(x);
  const double ulp16 = std::ldexp(1.0, std::ilogb(ref) - 10);
  // Scan: f32 state error is far below an f16 ulp, so the stored value is the correctly rounded one
  // or its neighbour.
  EXPECT_LE(std::abs(b.rewritten.l - ref), 1.0 * ulp16) << "rewritten " << b.rewritten.l << " ref " << ref;
  // Composed: per-step f16 rounding of a 64-term sum.
  EXPECT_LE(std::abs(b.composed.l - ref), 64 * 0.5 * ulp16);
  EXPECT_LE(std::abs(b.rewritten.l - ref), std::abs(b.composed.l - ref) + ulp16);
  EXPECT_EQ(b.rewritten.l, round_to(Prec::F16, b.rewritten.l));  // stored at f16
}

TEST(OnlineSoftmaxSpecialValues, F64ChainKeepsF64StateAndMaskedPrefixesFinite) {
  std::vector<double> x = {-kInf, -kInf, 0.125, -1.5, 2.25, -kInf, 0.75};
  Both b = run_both(Prec::F64, x);
  ASSERT_TRUE(std::isfinite(b.rewritten.l));
  EXPECT_NEAR(b.rewritten.l, b.composed.l, 1e-12 * b.composed.l);
  // The f64 state is not rounded to f32: the result matches the f64 reference far below f32 ulp.
  EXPECT_NEAR(b.rewritten.l, reference_sum(x), 1e-14 * reference_sum(x));
  Routine r = rewrite(row_routine(Prec::F64, 3)).routine;
  EXPECT_NE(print_routine(r).find("-1.7976931348623157e+308:f64"), std::string::npos);
}

TEST(OnlineSoftmaxSpecialValues, OrdinaryRowsMatchWithinRounding) {
  for (Prec p : {Prec::F32, Prec::F64, Prec::BF16}) {
    std::vector<double> x;
    for (int i = 0; i < 33; ++i) x.push_back(round_to(p, std::cos(1.3 * i) * 4.0 - 0.5 * (i % 3)));
    Both b = run_both(p, x);
    const double tol = p == Prec::F64 ? 1e-13 : p == Prec::F32 ? 1e-5 : 0.05;
    EXPECT_NEAR(b.rewritten.l, b.composed.l, tol * b.composed.l) << prec_name(p);
  }
}

}  // namespace
}  // namespace fp
