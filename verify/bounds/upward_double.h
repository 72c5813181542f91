#pragma once
// Upper-bound arithmetic in doubles, one operation at a time and without the dynamic rounding mode:
// each result is the operation rounded to nearest, then stepped to the next double toward +inf, so
// it is at or above the exact result (rounding to nearest errs by at most half a unit in the last
// place, subnormals included; +inf and NaN stay as they are). A formula over nonnegative values —
// sums, products, quotients by exact positive divisors — evaluated in UpDouble is at or above its
// exact value, a few units in the last place loose.
//
// Not fesetround(FE_UPWARD): even under -frounding-math, GCC may compute register arithmetic before
// the call that sets the mode (GCC PR 34678); BackwardBound.TheDoubleEvaluationRoundsUpward caught a
// bound evaluated to nearest that way.

#include <cmath>

namespace fp::verify {

class UpDouble {
 public:
  // Implicit: an exact value (a constant, an input, a bound already rounded up) enters as it is.
  UpDouble(double x) : v_(x) {}  // NOLINT(google-explicit-constructor)
  double value() const { return v_; }

  friend UpDouble operator+(UpDouble a, UpDouble b) { return up(a.v_ + b.v_); }
  friend UpDouble operator*(UpDouble a, UpDouble b) { return up(a.v_ * b.v_); }
  friend UpDouble operator/(UpDouble a, UpDouble b) { return up(a.v_ / b.v_); }
  UpDouble& operator+=(UpDouble b) { return *this = *this + b; }

 private:
  static UpDouble up(double x) { return UpDouble(std::nextafter(x, INFINITY)); }
  double v_;
};

}  // namespace fp::verify
