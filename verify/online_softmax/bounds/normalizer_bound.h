#pragma once
// The online normalizer's and the block fold's rounding bounds (docs/bounds.md §5, §7), evaluated
// in the rounding model of verify/bounds/rounding_model.h: relative bounds on the difference
// between the rewritten routine's value and the original's, as functions of the key count n, the
// block size b, the unit roundoffs of the storage and state precisions and the error of exp.

#include <cstdint>
#include <string>

#include "core/ir.h"
#include "verify/bounds/rounding_model.h"

namespace fp::verify {

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
// the invariant proved by verify/online_softmax/smt/fold_induction.cpp, evaluated by its recurrences
//   P_1 = (1 + γ_{b-1}(u_t))(1 + ε_t),  A_1 = (1 + γ_{b-1}(u_t))·b·ω_t,
//   P_{k+1} = P_k(1 + ε_t)(1 + u_t)²,  A_{k+1} = (1 + u_t)²(P_k·k·b·ω_t + A_k(1 + ε_t + ω_t))
//                                                + (1 + u_t)·ω_t·(1 + (1 + γ_{b-1}(u_t))·b),
//   B_tgt = (1 + ρ)·[P_K(1 + (n-1)·α(u_t)) + A_K] - 1,
// at 256 bits, every step rounded up. `b` is the fold's block size min(B, n).
NormalizerBound fold_bound(Prec storage, Prec state, std::int64_t n, std::int64_t b, double exp_ulp);
std::string fold_formula_text();

// The block fold's output O against the composed (p / l)·v, per output cell (docs/bounds.md §7 "O",
// the invariant verify/online_softmax/smt/fold_output_induction.cpp proves): |O_fold - O_src| <= rel_z·Z +
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

}  // namespace fp::verify
