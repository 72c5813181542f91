#pragma once
// The rounding model every bound of docs/bounds.md is stated in, evaluated: unit roundoffs,
// underflow terms, the error of exp at each precision (exp_error: the measured fp_exp32 figure at
// f32/f16/bf16, the assumed fp_exp64 figure at f64), Higham's γ_k, and how a relative perturbation
// travels through one rounded operation (docs/bounds.md §4). Every value is rounded up, so an
// evaluated bound is never below the formula's exact value. A member's own formulas (its proof
// folder's bounds/) are built from these.

#include <cstdint>
#include <string>

#include "core/ir.h"

namespace fp::verify {

// 2^-53, 2^-24, 2^-11, 2^-8 (f64, f32, f16, bf16).
double unit_roundoff(Prec p);
int significand_bits(Prec p);
// Half the smallest subnormal: the absolute error of a rounding in the subnormal range.
double underflow_error(Prec p);
// The relative error of exp.p for a normal result (docs/bounds.md §6), rounded up:
//   f64: η64 = exp_ulp·2^-52 (fp_exp64 within exp_ulp binary64 ulps, the --exp-ulp assumption);
//   f32: η32 = kExp32MaxUlp·2^-23 (fp_exp32 within kExp32MaxUlp ulps of the exact value's
//        binade, measured on every f32 input);
//   f16, bf16: (1 + η32)(1 + u_p) - 1 (fp_exp32, rounded once more to p).
double exp_error(Prec p, double exp_ulp);
// The absolute error of exp.p where its exact value is below p's smallest normal (the ulp is then
// the subnormal quantum): f64: 2ω_64 (fp_exp64 within 0.52 ulps of 2^-1074); f32:
// kExp32MaxUlp·2^-149; f16, bf16: ω_p + kExp32MaxUlp·2^-149·(1 + u_p). Always >= underflow_error(p),
// so it also bounds a subnormal rounding of an add or a multiply at p.
double exp_underflow_error(Prec p);

// The underflow term of the bound's model (docs/bounds.md §5 (a)): 2^lead + 2^tail with lead =
// max(log2 ω_p, -200) and tail = -148, at or above both exp_underflow_error(p) (an exponential's
// absolute error below p's normal range) and ω_p + ω_64 (a rounding there), with short exact
// rationals for the induction's queries. The formulas take it for Ω.
constexpr int kModelUnderflowTailLog2 = -148;
int model_underflow_lead_log2(Prec p);
double model_underflow(Prec p);  // 2^lead + 2^tail, rounded up to a double

// γ_k(u) = k·u / (1 - k·u) rounded up (MPFR); +inf when k·u >= 1.
double gamma_bound(std::int64_t k, double u);

// One paragraph stating the exp assumption the bounds take (--exp-ulp), for reports.
std::string exp_assumption_text(double exp_ulp);

// Downstream of a perturbed value (docs/bounds.md §4): the relative perturbation of fl(a op b)
// when a and b carry relative perturbations ra and rb and the result is rounded at p (0 when
// neither operand is perturbed: the same rounding of the same values).
double quotient_perturbation(double ra, double rb, Prec p);
double product_perturbation(double ra, double rb, Prec p);
double conversion_perturbation(double r, Prec from, Prec to);
// A sum of n products w·v accumulated at p, with w perturbed by rw: the bound on
// |o_tgt - o_src| relative to Σ |w·v|.
double dot_perturbation(double rw, std::int64_t n, Prec p);

}  // namespace fp::verify
