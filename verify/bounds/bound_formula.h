#pragma once
// The rounding-bound formulas of docs/bounds.md, evaluated. Every quantity is a relative bound on
// the difference between the rewritten routine's value and the original's, as a function of the
// key count n, the unit roundoffs of the storage and state precisions and the error of exp at
// each precision (exp_error: the measured fp_exp32 figure at f32/f16/bf16, the assumed fp_exp64
// figure at f64). Values are computed in long double and rounded up, so an evaluated bound is never
// below the formula's exact value.

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

// The normalizer l = Σ exp(x_t - m) over n keys: composed at the storage precision against the
// online scan carried at the state precision (rewrites/online_softmax/normalizer_scan.h).
struct NormalizerBound {
  Prec storage = Prec::F32;
  Prec state = Prec::F32;
  std::int64_t n = 0;
  std::int64_t block = 0;  // the fold's block size (fold_bound); 0: the scan (normalizer_bound)
  double exp_ulp = 0.52;  // fp_exp64's assumed error (binary64 ulps): used where a precision is f64
  bool defined = false;
  std::string undefined_reason;
  double b_src = 0;  // |l_src - S| <= b_src·S, S the exact sum
  double b_tgt = 0;  // |l_tgt - S| <= b_tgt·S
  double rel = 0;    // |l_tgt - l_src| <= rel·|l_src|
};
NormalizerBound normalizer_bound(Prec storage, Prec state, std::int64_t n, double exp_ulp);

// The block fold's l (rewrites/online_softmax/block_fold.h) over n keys in K = ceil(n/b) blocks of
// b cells against the same composed sum (docs/bounds.md §7): B_src as above; the fold's side from
// the invariant proved by verify/smt/fold_induction.cpp, evaluated by its recurrences
//   P_1 = (1 + γ_{b-1}(u_t))(1 + ε_t),  A_1 = (1 + γ_{b-1}(u_t))·b·ω_t,
//   P_{k+1} = P_k(1 + ε_t)(1 + u_t)²,  A_{k+1} = (1 + u_t)²(P_k·k·b·ω_t + A_k(1 + ε_t + ω_t))
//                                                + (1 + u_t)·ω_t·(1 + (1 + γ_{b-1}(u_t))·b),
//   B_tgt = (1 + ρ)·[P_K(1 + (n-1)·α(u_t)) + A_K] - 1,
// at 256 bits, every step rounded up. `b` is the fold's block size min(B, n).
NormalizerBound fold_bound(Prec storage, Prec state, std::int64_t n, std::int64_t b, double exp_ulp);
std::string fold_formula_text();

// The block fold's output O against the composed (p / l)·v, per output cell (docs/bounds.md §7 "O",
// the invariant verify/smt/fold_output_induction.cpp proves): |O_fold - O_src| <= rel_z·Z +
// rel_v·V + abs with Z = Σ_j |P̂_j·v_j| (the source's probabilities) and V = Σ_j |v_j|; in one
// magnitude, rel_z·Σ_j (|P̂_j| + kappa)·|v_j| + abs with kappa = rel_v / rel_z. The numerator at
// the state precision, O stored at the storage precision. MPFR, every step rounded up.
struct FoldOutputBound {
  bool defined = false;
  std::string undefined_reason;
  double rel_z = 0, rel_v = 0, abs = 0, kappa = 0;
};
FoldOutputBound fold_output_bound(Prec storage, Prec state, std::int64_t n, std::int64_t b, double exp_ulp);

// The symbolic formula (one paragraph) and the instantiated values.
std::string normalizer_formula_text();
std::string normalizer_instantiated_text(const NormalizerBound& b);
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
