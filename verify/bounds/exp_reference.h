#pragma once
// The exp implementations measured against MPFR: the maximum ulp error of fp_exp64 and fp_exp32 on
// sampled inputs (for reports' exp assumption, docs/bounds.md §6), and one result's error and
// whether it is inside the error model the bounds use (verify/bounds/rounding_model.h), each
// rounded against the claim.

#include <cstdint>

#include "core/ir.h"

namespace fp::verify {

// The maximum error of fp_exp64 in binary64 ulps against MPFR on `samples` inputs (random over the
// whole domain, f32 values, |x| < 1, near under/overflow), for the report's exp assumption.
struct ExpUlpMeasure {
  double max_ulp = 0;
  double worst_x = 0;
  std::int64_t samples = 0;

  // Counts one sample of error `ulp` at input `x`, keeping the worst.
  void record(double ulp, double x) {
    ++samples;
    if (ulp > max_ulp) {
      max_ulp = ulp;
      worst_x = x;
    }
  }
};
ExpUlpMeasure measure_exp_ulp(std::int64_t samples, std::uint64_t seed);

// The error of `got` as exp.p(x) (p = f32, f16 or bf16; x a finite value of p) against MPFR, in
// ulps of p at the exact value's binade (below p's normal range: ulps of p's smallest subnormal),
// never below the truth (the reference's own rounding is added). A result of +inf counts as
// 2^(emax + 1) when the exact value rounds to a finite number, and has error 0 when it does not.
double exp_narrow_ulp_error(Prec p, double x, double got);
// Whether `got` as exp.p(x) is inside the error model the bounds use (docs/bounds.md §6):
// |got - e| <= exp_error(p)·e + exp_underflow_error(p) for the exact e, or got = +inf where e
// rounds to +inf at p (overflow, outside every bound). Checked with MPFR, rounding against us.
bool exp_narrow_within_bound(Prec p, double x, double got);
// The maximum error of fp_exp32 in f32 ulps (exp_narrow_ulp_error) on `samples` random f32
// inputs (the whole domain, |x| < 1, subnormal results, near overflow), for the report.
ExpUlpMeasure measure_exp32_ulp(std::int64_t samples, std::uint64_t seed);

}  // namespace fp::verify
