#pragma once
// The fused backward's dQ and dK against the composed ones (docs/bounds.md §8), evaluated per
// cell from the source's values: a rigorous a-posteriori bound, every operation of both forms
// under the rounding model fl(a op b) = (a op b)(1 + δ) + η' (|δ| <= u; |η'| <= ω, half the
// smallest subnormal, for products and quotients only; sums are exact below the normal range),
// no overflow. The fused form may carry D and ds at a wider precision q (u_q <= u, ω_q <= ω) and
// round each to p once more: Ef_t and ε_D count those two roundings (so they also bound the form
// computed at p throughout). Both forms share, bit for bit, the forward's e_t (exps, <= 1), l (row_sum, >=
// 1), O and the backward's dP_t (= Σ_e dO_e·v_te) and p_t = fl(e_t / l); they differ in the score gradient
// before the mask and the scale:
//   composed  ng_t = fl(fl(fl(dP_t / l) + lg)·e_t),  lg = Σ_t fl(dP_t·fl(-e_t / fl(l·l))),
//   fused     ds_t = fl(p_t·fl(dP_t - D)),           D  = Σ_e fl(dO_e·O_e),
// both sums left to right from 0. Against g*_t = P*_t·(dP_t - D*), P*_t = e_t / l and
// D* = Σ_t P*_t·dP_t (exact reals of the shared values), with A_t = |dP_t|, Σ_A = Σ_t P*_t·A_t,
// N_A = Σ_t A_t, D_x = Σ_e dO_e·O_e (exact), κ_D = |D_x - D*| and W = Σ_e |dO_e·O_e|:
//   |ng_t - g*_t| <= Ec_t = P*_t(γ_3·A_t + γ_{n+4}·Σ_A) + (1 + γ_2)(ω + U) + ω,
//                         U = (1 + γ_{n-1})·ω·((1 + u)·N_A + n),
//   |ds_t - g*_t| <= Ef_t = P*_t(γ_4·r_t + κ_D + ε_D) + (1 + γ_3)·ω·r_t + (1 + u)·ω + ω,
//                         r_t = A_t + |D_x| + ε_D,
//                         ε_D = (1 + u)·(γ_E·W + (1 + γ_{E-1})·E·ω) + u·|D_x| + ω,
//   |g*_t| <= G_t = P*_t·(A_t + Σ_A).
// After the mask (the same where on both sides) and the scale c (one product on both sides), a
// contraction of the pair's values against an operand column x (k for dQ over the keys, q for dK
// over the query rows, m terms, left to right from 0, the same order on both sides) differs by at
// most
//   Σ_t |x_t|·T_t + 2m·ω·(1 + γ_{m-1}),
//   T_t = |c|(Ec_t + Ef_t)(1 + u) + 2u|c|·G_t + 2ω + γ_m·(|c|(2G_t + Ec_t + Ef_t)(1 + u) + 2ω).
// Every quantity is computed with MPFR, the sums of products exactly and everything else rounded
// up, so an evaluated bound is never below the formula's value.

#include <cstdint>
#include <vector>

#include "core/ir.h"

namespace fp::verify {

// One query row's shared values (values of the routine's precision held in doubles).
// A whole rewrite (the two-pass or fold forward with the fused backward, docs/bounds.md §8.1) also
// perturbs the forward's l and O the target's backward reads: `l_err` bounds |l_tgt - l| and
// `o_err` bounds κ_O = Σ_e |dO_e|·|O_tgt,e - O_e| (both 0: the pair of §8, where they are shared).
struct BackwardRow {
  std::vector<double> e, dp;    // per key t: exps, dP (grad_probs)
  double l = 0;                 // row_sum
  std::vector<double> o, dout;  // per value column e: the forward's O, dO
  double l_err = 0, o_err = 0;
};

// Per key t of a row: Ec_t, Ef_t and G_t above (rounded up); with a perturbed forward, Ef'_t of
// §8.1: with φ = l / l_tgt - 1 (|φ| <= (l_err / l) / (1 - l_err / l)),
//   Ef'_t = P*_t((γ_4 + |φ|(1 + γ_4))·r'_t + κ_D + κ_O + ε'_D) + (1 + γ_3)·ω·r'_t + (1 + u)·ω + ω,
//   r'_t = A_t + |D_x| + κ_O + ε'_D,  ε'_D the row dot's ε_D with W + κ_O and |D_x| + κ_O,
// and the dV coefficients below. `finite` false when a value of the
// row is not finite or l < 1 or some e_t > 1 (outside the bound's hypotheses: NaN rows are
// compared by position instead).
struct BackwardPairBounds {
  bool finite = true;
  std::vector<double> composed, fused, magnitude;
  double phi = 0;  // the bound on |φ| (0 without a perturbed l)
};
BackwardPairBounds backward_pair_bounds(const BackwardRow& row, Prec p);

// T_t above for the pairs of one contraction cell: `pairs[i]` the bounds of the i-th summed pair,
// `scale` the chain's constant c, `terms` m (the contraction's length).
double backward_pair_term(const BackwardPairBounds& pairs, std::size_t t, double scale, std::int64_t terms,
                          Prec p);

// dV under a perturbed l (§8.1): dV_te = Σ_i fl(p_it·dO_ie) on both sides in the same order, p_it
// = fl(e_it / l_i) in the source and fl(e_it / l_tgt,i) in the target (each product and p with up to
// two roundings, the sum with a final one), so
//   |dV_tgt - dV_src| <= Σ_i |dO_ie|·a_it + m·2(2 + u)ω(1 + γ_m) + 2(1 + u)ω,
//   a_t = Δ_t + γ_2·π_t + γ_m·π_t(1 + γ_2),  Δ_t = P*_t(|φ|(1 + γ_2) + 2γ_2) + 2(2 + u)ω,
//   π_t = P*_t(2 + |φ|)(1 + γ_2) + 2(2 + u)ω.
// backward_dv_coefficients gives a_t per key of one row (m the contraction's length, the query
// rows); backward_dv_tail the last two terms.
std::vector<double> backward_dv_coefficients(const BackwardPairBounds& row_bounds, const BackwardRow& row,
                                             std::int64_t terms, Prec p);
double backward_dv_tail(std::int64_t terms, Prec p);

// The contraction's tail 2m·ω·(1 + γ_{m-1}), rounded up.
double backward_contraction_tail(std::int64_t terms, Prec p);

// The cell bound Σ_i |x_i|·T_i + 2m·ω·(1 + γ_{m-1}) (T_i from backward_pair_term), rounded up.
double backward_contraction_bound(const std::vector<double>& pair_terms, const std::vector<double>& operand, Prec p);

}  // namespace fp::verify
