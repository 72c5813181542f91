#pragma once
// Upper bounds in MPFR (internal to verify/bounds/): a 256-bit number whose every sum, product and
// quotient rounds up, and a divisor's 1 - x rounds down, so a formula over positive inputs
// evaluates to at least its exact value (docs/bounds.md §5).

#include <mpfr.h>

#include <cstdint>

namespace fp::verify {

class Up {
 public:
  Up() { mpfr_init2(v_, 256); }
  explicit Up(long double x) : Up() { mpfr_set_ld(v_, x, MPFR_RNDU); }
  // +0 at `bits` of precision: an accumulator for exact sums through raw() (the operators return
  // 256-bit results).
  struct Bits {
    int n;
  };
  explicit Up(Bits b) {
    mpfr_init2(v_, b.n);
    mpfr_set_zero(v_, 1);
  }
  ~Up() { mpfr_clear(v_); }
  Up(const Up& o) : Up() { mpfr_set(v_, o.v_, MPFR_RNDU); }
  Up& operator=(const Up& o) {
    mpfr_set(v_, o.v_, MPFR_RNDU);
    return *this;
  }
  friend Up operator+(const Up& a, const Up& b) { return op(mpfr_add, a, b); }
  friend Up operator*(const Up& a, const Up& b) { return op(mpfr_mul, a, b); }
  friend Up operator/(const Up& a, const Up& b) { return op(mpfr_div, a, b); }
  Up minus_one() const {
    Up r;
    mpfr_sub_ui(r.v_, v_, 1, MPFR_RNDU);
    return r;
  }
  // 1 - this, rounded down (for a divisor).
  Up one_minus_down() const {
    Up r;
    mpfr_ui_sub(r.v_, 1, v_, MPFR_RNDD);
    return r;
  }
  Up pow_up(std::int64_t k) const {
    Up r;
    mpfr_pow_si(r.v_, v_, static_cast<long>(k), MPFR_RNDU);
    return r;
  }
  bool below_one() const { return mpfr_cmp_ui(v_, 1) < 0; }
  mpfr_ptr raw() { return v_; }
  mpfr_srcptr raw() const { return v_; }
  double to_double_up() const { return mpfr_get_d(v_, MPFR_RNDU); }

 private:
  template <class F>
  static Up op(F f, const Up& a, const Up& b) {
    Up r;
    f(r.v_, a.v_, b.v_, MPFR_RNDU);
    return r;
  }
  mpfr_t v_;
};

}  // namespace fp::verify
