// Every comparison of an error against a bound decides like the exact inequality, and rounds
// against the claim where it must round (issue 9: bound checks rounded the wrong way).

#include <gmp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/numerics.h"
#include "core/random_inputs.h"
#include "verify/compare.h"
#include "verify/engine.h"
#include "verify/error_bound.h"

namespace fp::verify {
namespace {

// The inequality |t - s| <= rel·mag + abs in rationals, independently of error_fraction.
bool holds(double s, double t, double rel, double mag, double abs) {
  mpq_t d, a, x;
  mpq_inits(d, a, x, nullptr);
  mpq_set_d(d, t);
  mpq_set_d(x, s);
  mpq_sub(d, d, x);
  mpq_abs(d, d);
  mpq_set_d(a, rel);
  mpq_set_d(x, mag);
  mpq_mul(a, a, x);
  mpq_set_d(x, abs);
  mpq_add(a, a, x);
  const bool ok = mpq_cmp(d, a) <= 0;
  mpq_clears(d, a, x, nullptr);
  return ok;
}

// "d.ddd[e±x]" exactly, as mantissa / 10^k.
void decimal_to_mpq(mpq_t out, const std::string& text) {
  std::string digits;
  long exp10 = 0;
  bool frac = false;
  std::size_t i = 0;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.') {
      frac = true;
      continue;
    }
    digits += text[i];
    if (frac) --exp10;
  }
  if (i < text.size()) exp10 += std::stol(text.substr(i + 1));
  mpz_t num, den;
  mpz_inits(num, den, nullptr);
  mpz_set_str(num, digits.c_str(), 10);
  mpz_ui_pow_ui(den, 10, static_cast<unsigned long>(std::labs(exp10)));
  if (exp10 >= 0) {
    mpz_mul(num, num, den);
    mpz_set_ui(den, 1);
  }
  mpq_set_num(out, num);
  mpq_set_den(out, den);
  mpq_canonicalize(out);
  mpz_clears(num, den, nullptr);
}

TEST(ErrorBound, ClaimJustBelowTheErrorIsAViolation) {
  // The f16 reproduction: a = 0.0625, target 0.06256103515625 (2^-10 relative).
  const double s = 0.0625, t = 0.06256103515625;
  EXPECT_GT(error_fraction(s, t, 0.00097656, s, 0), 1.0);
  EXPECT_LE(error_fraction(s, t, std::ldexp(1.0, -10), s, 0), 1.0);  // equality holds
  // The f32 twin at 2^-13, one f32 ulp up: 2^-23 relative against 1.1920928955e-07.
  const double s32 = std::ldexp(1.0, -13), t32 = s32 + std::ldexp(1.0, -36);
  EXPECT_GT(error_fraction(s32, t32, 1.1920928955e-07, s32, 0), 1.0);
  EXPECT_LE(error_fraction(s32, t32, std::ldexp(1.0, -23), s32, 0), 1.0);
}

TEST(ErrorBound, NegativeDifferenceIsNotRoundedDown) {
  // Target -2^-40 where the source is 0.8125: the error exceeds |s| by 2^-40.
  EXPECT_GT(error_fraction(0.8125, -std::ldexp(1.0, -40), 1.0, 0.8125, 0), 1.0);
  EXPECT_LE(error_fraction(0.8125, -0.0, 1.0, 0.8125, 0), 1.0);
}

TEST(ErrorBound, AgreesWithTheExactInequalityNearTheBoundary) {
  SplitMix64 rng(2026);
  int checked = 0;
  for (int k = 0; k < 200000; ++k) {
    const double s = std::ldexp(rng.unit() + 0.5, static_cast<int>(rng.range(-60, 60))) * (rng.unit() < 0.5 ? -1 : 1);
    double t = s;
    const int steps = static_cast<int>(rng.range(1, 9));
    for (int i = 0; i < steps; ++i) t = std::nextafter(t, rng.unit() < 0.5 ? INFINITY : -INFINITY);
    if (t == s) continue;
    // rel at the observed error, give or take an ulp or two: the hardest place to decide.
    double rel = std::fabs((t - s) / s);
    for (int i = static_cast<int>(rng.range(-2, 2)); i != 0; i += i > 0 ? -1 : 1)
      rel = std::nextafter(rel, i > 0 ? INFINITY : 0.0);
    const double abs = rng.unit() < 0.2 ? std::ldexp(1.0, -1074) * static_cast<double>(rng.range(0, 3)) : 0.0;
    const double r = error_fraction(s, t, rel, std::fabs(s), abs);
    ASSERT_EQ(r <= 1.0, holds(s, t, rel, std::fabs(s), abs))
        << std::hexfloat << "s=" << s << " t=" << t << " rel=" << rel << " abs=" << abs << " r=" << r;
    ++checked;
  }
  EXPECT_GT(checked, 100000);
}

TEST(ErrorBound, FractionIsRoundedUp) {
  // 1/3 is not a double: the reported fraction is not below it.
  const double r = error_fraction(1.0, 1.0 + std::ldexp(1.0, -20), 3 * std::ldexp(1.0, -20), 1.0, 0);
  mpq_t q, third;
  mpq_inits(q, third, nullptr);
  mpq_set_d(q, r);
  mpq_set_ui(third, 1, 3);
  EXPECT_GE(mpq_cmp(q, third), 0);
  mpq_clears(q, third, nullptr);
}

TEST(ErrorBound, UserBoundsAreReadRoundedDown) {
  for (const char* text : {"0.1", "0.00097656", "1.1920928955e-07", "3.3333333333333333", "1e-300"}) {
    const std::optional<double> v = parse_decimal_rounded_down(text);
    ASSERT_TRUE(v) << text;
    // v <= text < next double above v
    mpq_t a, b;
    mpq_inits(a, b, nullptr);
    mpq_set_d(a, *v);
    decimal_to_mpq(b, text);
    EXPECT_LE(mpq_cmp(a, b), 0) << text;
    mpq_set_d(a, std::nextafter(*v, INFINITY));
    EXPECT_GT(mpq_cmp(a, b), 0) << text;
    mpq_clears(a, b, nullptr);
  }
  EXPECT_EQ(*parse_decimal_rounded_down("0x1p-10"), std::ldexp(1.0, -10));
  EXPECT_FALSE(parse_decimal_rounded_down("1e-6 "));
  EXPECT_FALSE(parse_decimal_rounded_down(""));
  EXPECT_FALSE(parse_decimal_rounded_down("abc"));
  // The claim a user writes is never raised: bounded:0.1 checks against at most 0.1.
  EXPECT_LT(*parse_claim("bounded:0.1"), 0.1);
}

TEST(ErrorBound, CellRatioUsesTheExactDecision) {
  NodeCheck c;
  c.kind = NodeCheck::Kind::Relative;
  c.rel = 0.00097656;
  EXPECT_GT(cell_ratio(c, 0.0625, 0.06256103515625, 0), 1.0);
  c.kind = NodeCheck::Kind::Scaled;
  c.rel = 1;
  // A scale that overflowed f64 counts as the largest double, not as infinity (which would allow
  // any error).
  EXPECT_LE(cell_ratio(c, 1.0, 2.0, INFINITY), 1.0);
  EXPECT_TRUE(std::isinf(cell_ratio(c, 1.0, 2.0, NAN)));
  // A contraction that read a non-finite operand (its magnitude Σ|w|·|v| is ±inf or NaN): the two
  // forms' weights underflow to zero at different points, so 0·inf makes NaN on one side where the
  // other has ±inf — outside the claim (found by `flashproof fuzz rewrite`: the f16 fold's f32
  // exponential of a key whose composed f16 probability is 0, against v = inf). NaN against a
  // finite value is still a mismatch, and so is anything with a finite magnitude.
  EXPECT_EQ(cell_ratio(c, NAN, INFINITY, INFINITY), 0);
  EXPECT_EQ(cell_ratio(c, -INFINITY, NAN, NAN), 0);
  EXPECT_TRUE(std::isinf(cell_ratio(c, NAN, 2.0, INFINITY)));
  EXPECT_TRUE(std::isinf(cell_ratio(c, NAN, INFINITY, 1e300)));
  c.kind = NodeCheck::Kind::Relative;
  EXPECT_TRUE(std::isinf(cell_ratio(c, NAN, INFINITY, INFINITY)));
}

}  // namespace
}  // namespace fp::verify
