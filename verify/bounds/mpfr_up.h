#pragma once
// Upper bounds in MPFR (internal to the bounds/ folders of verify/ and of its members' proof
// folders): a 256-bit number whose every sum, product and quotient rounds up, and a divisor's
// 1 - x rounds down, so a formula over positive inputs evaluates to at least its exact value
// (docs/bounds.md §5).

#include <mpfr.h>

#include <cstdint>

#include "core/ir.h"

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

// Frees MPFR's caches of this thread on scope exit.
struct Mpfr {
  mpfr_t v;
  explicit Mpfr(int bits) { mpfr_init2(v, bits); }
  ~Mpfr() { mpfr_clear(v); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
};

// |a - ref| + ref_error, rounded up: the observed error never below the truth, whatever the
// sign of the difference (ref_error bounds the reference's own rounding).
inline void error_up(mpfr_t out, double a, const mpfr_t ref, const mpfr_t ref_error) {
  mpfr_set_d(out, a, MPFR_RNDN);  // exact: out has at least 53 bits
  if (mpfr_cmp(out, ref) >= 0)
    mpfr_sub(out, out, ref, MPFR_RNDU);
  else
    mpfr_sub(out, ref, out, MPFR_RNDU);
  mpfr_add(out, out, ref_error, MPFR_RNDU);
}

// The rounding model's terms as Up values (verify/bounds/rounding_model.h gives them as doubles):
// the underflow term of the bound's model, 2^lead + 2^tail exactly; γ_k(u) = k·u / (1 - k·u)
// rounded up, +inf when k·u >= 1.
Up model_underflow_up(Prec p);
Up gamma_up(std::int64_t k, double u);

}  // namespace fp::verify
