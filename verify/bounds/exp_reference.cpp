// Measurements of exp against MPFR (verify/bounds/exp_reference.h).

#include "verify/bounds/exp_reference.h"

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/diagnostic.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "verify/bounds/mpfr_up.h"
#include "verify/bounds/rounding_model.h"
#include "verify/verdict.h"

namespace fp::verify {

ExpUlpMeasure measure_exp_ulp(std::int64_t samples, std::uint64_t seed) {
  ExpUlpMeasure m;
  SplitMix64 rng(seed ^ 0x657870756c70ull);
  Mpfr ref(160), x(160), diff(160), ref_err(160);
  for (std::int64_t i = 0; i < samples; ++i) {
    double v;
    switch (i % 4) {
      case 0:
        v = -745.0 + 1454.0 * rng.unit();
        break;
      case 1:
        v = static_cast<float>(-104.0 + 193.0 * rng.unit());
        break;
      case 2:
        v = 2.0 * rng.unit() - 1.0;
        break;
      default:
        v = (rng.unit() < 0.5 ? -708.0 - 37.0 * rng.unit() : 700.0 + 9.7 * rng.unit());
        break;
    }
    const double got = fp_exp64(v);
    // Subnormal results carry an absolute error (the bound's underflow terms), not a relative one.
    if (!std::isfinite(got) || got < std::numeric_limits<double>::min()) continue;
    mpfr_set_d(x.v, v, MPFR_RNDN);
    mpfr_exp(ref.v, x.v, MPFR_RNDN);
    // ulp of the binary64 result's binade (subnormals: 2^-1074).
    int e = 0;
    std::frexp(got, &e);
    const int ulp_exp = std::max(e - 53, -1074);
    mpfr_abs(ref_err.v, ref.v, MPFR_RNDU);  // the reference is exp rounded once at 160 bits
    mpfr_mul_2si(ref_err.v, ref_err.v, -159, MPFR_RNDU);
    error_up(diff.v, got, ref.v, ref_err.v);
    mpfr_mul_2si(diff.v, diff.v, -ulp_exp, MPFR_RNDU);  // in ulps (exact), before leaving MPFR
    m.record(mpfr_get_d(diff.v, MPFR_RNDU), v);
  }
  mpfr_free_cache();
  return m;
}

namespace {

// exp(x) at 128 bits, rounded to nearest, and a bound on its own rounding error (rounded up).
void exact_exp(mpfr_t ref, mpfr_t ref_err, double x) {
  Mpfr xv(64);
  mpfr_set_d(xv.v, x, MPFR_RNDN);  // exact: x is a value of at most 24 bits
  mpfr_exp(ref, xv.v, MPFR_RNDN);
  mpfr_abs(ref_err, ref, MPFR_RNDU);
  mpfr_mul_2si(ref_err, ref_err, -127, MPFR_RNDU);
}

struct NarrowFormat {
  int bits, emin, emax;
};
NarrowFormat narrow_format(Prec p) {
  switch (p) {
    case Prec::F32:
      return {24, -126, 127};
    case Prec::F16:
      return {11, -14, 15};
    case Prec::BF16:
      return {8, -126, 127};
    default:
      break;
  }
  FP_INTERNAL_CHECK(false, "exp error at {}: not a narrow float precision", prec_name(p));
}

// Whether the exact value e (> 0) rounds to +inf at p: e >= (2 - 2^-bits)·2^emax.
bool rounds_to_inf(const mpfr_t e, NarrowFormat f) {
  Mpfr t(64);
  mpfr_set_d(t.v, std::ldexp(2.0 - std::ldexp(1.0, -f.bits), f.emax), MPFR_RNDN);  // exact
  return mpfr_cmp(e, t.v) >= 0;
}

}  // namespace

double exp_narrow_ulp_error(Prec p, double x, double got) {
  const NarrowFormat f = narrow_format(p);
  FP_INTERNAL_CHECK(std::isfinite(x), "exp error of a non-finite input");
  Mpfr ref(128), ref_err(128), diff(160);
  exact_exp(ref.v, ref_err.v, x);
  if (std::isinf(got)) {
    if (got > 0 && rounds_to_inf(ref.v, f)) return 0;
    got = std::ldexp(1.0, f.emax + 1);
  }
  error_up(diff.v, got, ref.v, ref_err.v);
  // ref >= 2^(e-1) (ref = m·2^e, m in [1/2, 1)); the exact value may lie a little below ref, in the
  // binade below, whose ulp is half as large: take the lower binade when ref - ref_err crosses it.
  long e = mpfr_get_exp(ref.v) - 1;
  {
    Mpfr lo(160);
    mpfr_sub(lo.v, ref.v, ref_err.v, MPFR_RNDD);
    if (mpfr_get_exp(lo.v) - 1 < e) e = mpfr_get_exp(lo.v) - 1;
  }
  const long ulp_exp = std::max(e, static_cast<long>(f.emin)) - (f.bits - 1);
  mpfr_mul_2si(diff.v, diff.v, -ulp_exp, MPFR_RNDU);
  return mpfr_get_d(diff.v, MPFR_RNDU);
}

bool exp_narrow_within_bound(Prec p, double x, double got) {
  const NarrowFormat f = narrow_format(p);
  FP_INTERNAL_CHECK(std::isfinite(x), "exp error of a non-finite input");
  Mpfr ref(128), ref_err(128), diff(160), allowed(160);
  exact_exp(ref.v, ref_err.v, x);
  if (std::isinf(got)) return got > 0 && rounds_to_inf(ref.v, f);
  if (std::isnan(got) || got < 0) return false;
  error_up(diff.v, got, ref.v, ref_err.v);
  // allowed = ε·(ref - ref_err) + Ω, rounded down.
  mpfr_sub(allowed.v, ref.v, ref_err.v, MPFR_RNDD);
  mpfr_mul_d(allowed.v, allowed.v, exp_error(p, Limits{}.exp_ulp), MPFR_RNDD);
  mpfr_add_d(allowed.v, allowed.v, exp_underflow_error(p), MPFR_RNDD);
  return mpfr_cmp(diff.v, allowed.v) <= 0;
}

ExpUlpMeasure measure_exp32_ulp(std::int64_t samples, std::uint64_t seed) {
  ExpUlpMeasure m;
  SplitMix64 rng(seed ^ 0x6578703332756cull);
  for (std::int64_t i = 0; i < samples; ++i) {
    float v;
    switch (i % 4) {
      case 0:
        v = static_cast<float>(-104.0 + 193.0 * rng.unit());
        break;
      case 1:
        v = static_cast<float>(2.0 * rng.unit() - 1.0);
        break;
      case 2:
        v = static_cast<float>(-104.0 + 17.0 * rng.unit());  // subnormal and tiny normal results
        break;
      default:
        v = static_cast<float>(80.0 + 8.8 * rng.unit());  // near overflow
        break;
    }
    m.record(exp_narrow_ulp_error(Prec::F32, v, fp_exp32(v)), v);
  }
  mpfr_free_cache();
  return m;
}

}  // namespace fp::verify
