// The block fold's normalizer bound for every (n, b), by induction over the reals (docs/bounds.md
// §7 "The induction"). The fold (rewrites/online_softmax/block_fold.h) processes a row in K blocks
// of b cells (a tail block padded with -inf cells, whose terms are exactly 0); block k computes,
// at the state precision t, against the floored running maximum F_k after the block:
//   R_k = fl(…fl(0 + T_j0) + … + T_j(b-1)),  T_j = exp.t(fl(x_j - F_k))    (the block sum)
//   L_k = fl(fl(L_{k-1}·α_k) + R_k),          α_k = exp.t(fl(F_{k-1} - F_k)) (α_k = exp(0) = 1
//                                             exactly, and the product exact, when F does not rise)
// and L_1 = R_1 (the first block's 0·α = 0 and 0 + R are exact).
//
// The queries are fixed-size: the block count k and the block size b are real variables. The
// block sum is the composed sum of b keys at the state precision, so its invariant (the composed
// sum's, verify/online_softmax/smt/induction_model.h) is proved by the same three queries at t (block.*). The
// fold's invariant after k blocks (N cells so far; U, Λ the sums of the induction model at the
// running maximum) is the scan's with a free underflow term A:
//   0 <= Λ <= U <= N,  0 <= L <= P·U + A,  P <= 2 ⇒ L >= (2 - P)Λ - A,
//   P >= (1 + G_b)(1 + ε_t),  A >= 0,         G_b = γ_{b-1}(u_t),
// with P_1 = (1 + G_b)(1 + ε_t), A_1 = (1 + G_b)·b·ω and from block to block
//   P' = P(1 + ε_t)(1 + u_t)²,
//   A' = (1 + u_t)²(P·N·ω + A(1 + ε_t + ω)) + (1 + u_t)·ω·(1 + (1 + G_b)·b).
// Closing: at the last block (n keys, U and Λ at the row maximum, the summed argument-rounding
// lemma of the scan's induction) |L - S| <= (P(1 + (n - 1)α(u_t)) + A - 1)·S for every P >= 1,
// A >= 0. verify/online_softmax/bounds/induction_instance.cpp evaluates P_K and A_K by their recurrences at the
// obligation's (n, b) with MPFR, rounded up; the scan's queries supply the composed side, the
// lemma, the final store and REL's closing.
#include <fmt/format.h>
#include <z3++.h>

#include "verify/online_softmax/smt/induction_model.h"
#include "verify/online_softmax/smt/queries.h"

namespace fp::verify::smt {

using namespace induction_model;

namespace {

z3::expr fold_upper(const z3::expr& L, const z3::expr& P, const z3::expr& U, const z3::expr& A) {
  return L >= 0 && L <= P * U + A;
}
z3::expr fold_lower(const z3::expr& L, const z3::expr& P, const z3::expr& Lam, const z3::expr& A) {
  return z3::implies(P <= 2, L >= (2 - P) * Lam - A);
}

// One block in the invariant's own form (proved by fold.base from the composed sum's
// invariant): its b cells, sums Ub, Λb against the running maximum after it, and its sum R with
//   0 <= R <= Q·Ub + W,  Q <= 2 ⇒ R >= (2 - Q)Λb - W,  Q = (1 + γ_{b-1})(1 + ε) >= 1, W = (1 + γ_{b-1})·b·ω.
struct Block {
  z3::expr b, Q, W, Ub, Lb, R;
};
Block block_in_invariant_form(Query& Q) {
  z3::expr b = Q.var("b"), q = Q.var("Q"), W = Q.var("W");
  z3::expr Ub = Q.var("Ub"), Lb = Q.var("Lamb"), R = Q.var("R");
  Q.assume(b >= 1 && q >= 1 && W >= 0 && 0 <= Lb && Lb <= Ub && Ub <= b);
  Q.assume(fold_upper(R, q, Ub, W) && fold_lower(R, q, Lb, W));
  return Block{b, q, W, Ub, Lb, R};
}

z3::expr a_next(const z3::expr& P, const z3::expr& N, const z3::expr& A, const Block& B, const Consts& c) {
  return (1 + c.u) * (1 + c.u) * (P * N * c.om + A * (1 + c.eps + c.om)) + (1 + c.u) * (c.om + B.W);
}

}  // namespace

std::vector<InductionStep> prove_fold_induction(const InductionQuery& q, const SmtLimits& limits) {
  const InductionMutant mut = q.mutant;
  QueryRunner runner(limits, fmt::format("block-fold bound by induction (u_t = 2^-{}, mutant {})", q.state_bits,
                                         induction_mutant_name(mut)));
  auto consts = [&](Query& Q) { return state_consts(Q, q); };
  const bool drop_gamma = mut == InductionMutant::DropGamma;
  composed_sum_queries(runner, "block", "a block's sum (the composed sum of its cells at the state precision):",
                       consts, 1);

  runner.run("fold.base",
             "a block's sum satisfies the fold's invariant with P = Q = (1 + γ_{b-1}(u_t))(1 + ε_t) and A = W = "
             "(1 + γ_{b-1}(u_t))·b·ω, for every real b >= 1 (so does L_1 = R_1)",
             [&](Query& Q) {
               Consts c = consts(Q);
               z3::expr b = Q.var("b");
               Q.assume(b >= 1 && b * c.u < 1);
               z3::expr G = gamma_var(Q, "Gb", b - 1, c.u);
               z3::expr Ub = Q.var("Ub"), Lb = Q.var("Lamb"), R = Q.var("R");
               Q.assume(0 <= Lb && Lb <= Ub && Ub <= b);
               Q.assume(composed_upper(R, G, Ub, b, c) && composed_lower(R, G, Lb, b, c));
               z3::expr Gc = drop_gamma ? Q.c().real_val(0) : G;  // the mutant's P_1 lacks γ
               z3::expr P = (1 + Gc) * (1 + c.eps), A = (1 + G) * b * c.om;
               return P >= 1 && fold_upper(R, P, Ub, A) && fold_lower(R, P, Lb, A);
             });
  // On a new maximum the lower side goes in two queries, as the scan's: first a lower bound on
  // the rounded product fl(L·α̂) alone, then the step from that bound.
  auto rescaled_lower = [](const z3::expr& P, const z3::expr& Lam, const z3::expr& A, const z3::expr& Rlo,
                           const Consts& c) {
    return ((2 - P) * Lam * ((1 - c.eps) * Rlo - c.om) - A * (1 + c.eps + c.om)) * (1 - c.u) - c.om_op;
  };
  auto step_factor = [](const Consts& c) { return (1 + c.eps) * (1 + c.u) * (1 + c.u); };
  auto rescaled_upper = [](const z3::expr& P, const z3::expr& U, const z3::expr& N, const z3::expr& A,
                           const z3::expr& Rup, const Consts& c) {
    return (1 + c.u) * (1 + c.eps) * P * U * Rup + (1 + c.u) * (P * N * c.om + A * (1 + c.eps + c.om)) + c.om_op;
  };
  if (mut != InductionMutant::MissingRescale)
    runner.run("fold.step-rise-upper.product",
               "on a raised maximum, the fold's upper invariant after k blocks bounds the rescaled product "
               "fl(L·α̂) from above",
               [&](Query& Q) {
                 Consts c = consts(Q);
                 z3::expr N = Q.var("N"), P = Q.var("P"), A = Q.var("A");
                 Q.assume(N >= 1 && P >= 1 && A >= 0);
                 z3::expr L = Q.var("L"), U = Q.var("U");
                 Q.assume(0 <= U && U <= N && fold_upper(L, P, U, A));
                 z3::expr Rup = Q.var("Rup"), Rlo = Q.var("Rlo");
                 Q.assume(0 <= Rlo && Rlo <= Rup && Rup <= 1);
                 z3::expr al = computed_exp(Q, "alpha", Rlo, Rup, c);
                 z3::expr m = Q.var("m");
                 Q.assume(m >= 0 && m <= L * al * (1 + c.u) + c.om_op);
                 return m <= rescaled_upper(P, U, N, A, Rup, c);
               });
  if (mut != InductionMutant::MissingRescale)
    runner.run("fold.step-rise-lower.product",
               "on a raised maximum, the fold's lower invariant after k blocks bounds the rescaled product "
               "fl(L·α̂) from below (where P' <= 2)",
               [&](Query& Q) {
                 Consts c = consts(Q);
                 z3::expr N = Q.var("N"), P = Q.var("P"), A = Q.var("A");
                 Q.assume(N >= 1 && P >= 1 && A >= 0);
                 Q.assume(P * step_factor(c) <= 2);
                 z3::expr L = Q.var("L"), Lam = Q.var("Lam");
                 Q.assume(0 <= Lam && Lam <= N && L >= 0 && fold_lower(L, P, Lam, A));
                 z3::expr Rup = Q.var("Rup"), Rlo = Q.var("Rlo");
                 Q.assume(0 <= Rlo && Rlo <= Rup && Rup <= 1);
                 z3::expr al = computed_exp(Q, "alpha", Rlo, Rup, c);
                 z3::expr m = Q.var("m");
                 Q.assume(m >= 0 && m >= L * al * (1 - c.u) - c.om_op && m <= L * al * (1 + c.u) + c.om_op);
                 return m >= rescaled_lower(P, Lam, A, Rlo, c);
               });
  for (const bool rise : {true, false})
    for (const bool upper : {true, false}) {
      const std::string name = fmt::format("fold.step-{}-{}", rise ? "rise" : "keep", upper ? "upper" : "lower");
      runner.run(
          name,
          fmt::format("the fold's {} invariant after k blocks implies it after k + 1 when block k + 1 {}, for every "
                      "real k >= 1 and b >= 1",
                      upper ? "upper" : "lower", rise ? "raises the maximum (a rescale)" : "does not"),
          [&](Query& Q) {
            Consts c = consts(Q);
            Block B = block_in_invariant_form(Q);
            z3::expr N = Q.var("N"), P = Q.var("P"), A = Q.var("A");
            Q.assume(N >= 1 && P >= B.Q && A >= 0);
            z3::expr P1 = P * step_factor(c), A1 = a_next(P, N, A, B, c);
            z3::expr L = Q.var("L"), U = Q.var("U"), Lam = Q.var("Lam");
            Q.assume(0 <= Lam && Lam <= U && U <= N);
            if (upper)
              Q.assume(fold_upper(L, P, U, A));
            else if (!rise || mut == InductionMutant::MissingRescale)
              Q.assume(L >= 0 && fold_lower(L, P, Lam, A));
            z3::expr L1 = Q.var("L1"), U1 = Q.var("U1"), Lam1 = Q.var("Lam1");
            if (rise) {
              // Every earlier D grows by Δ > 0: the sums scale by exp(-(1 ∓ u)Δ) in [0, 1]; the
              // block's own sums are taken against the new maximum.
              z3::expr Rup = Q.var("Rup"), Rlo = Q.var("Rlo");
              Q.assume(0 <= Rlo && Rlo <= Rup && Rup <= 1);
              Q.assume(U1 == U * Rup + B.Ub && Lam1 == Lam * Rlo + B.Lb);
              if (mut == InductionMutant::MissingRescale) {
                Q.assume(L1 >= (L + B.R) * (1 - c.u) && L1 <= (L + B.R) * (1 + c.u));
              } else {
                z3::expr m = Q.var("m");
                if (upper) {
                  // The product's upper bound, proved by fold.step-rise-upper.product.
                  Q.assume(m >= 0 && m <= rescaled_upper(P, U, N, A, Rup, c));
                } else {
                  // The product's lower bound, proved by fold.step-rise-lower.product.
                  Q.assume(m >= 0 && z3::implies(P1 <= 2, m >= rescaled_lower(P, Lam, A, Rlo, c)));
                }
                Q.assume(L1 >= (m + B.R) * (1 - c.u) && L1 <= (m + B.R) * (1 + c.u));
              }
            } else {
              // α = exp(0) = 1 exactly and L·1 is exact.
              Q.assume(U1 == U + B.Ub && Lam1 == Lam + B.Lb);
              Q.assume(L1 >= (L + B.R) * (1 - c.u) && L1 <= (L + B.R) * (1 + c.u));
            }
            return (0 <= Lam1 && Lam1 <= U1 && U1 <= N + B.b) && P1 >= B.Q && A1 >= 0 &&
                   (upper ? fold_upper(L1, P1, U1, A1) : L1 >= 0 && fold_lower(L1, P1, Lam1, A1));
          });
    }
  runner.run("fold.closing",
             "the fold's invariant after its last block, the summed lemma and S >= 1 give |L - S| <= (P(1 + (n - "
             "1)·α(u_t)) + A - 1)·S for every real n >= 1, P >= 1 and A >= 0",
             [&](Query& Q) {
               Consts c = consts(Q);
               z3::expr N = Q.var("n"), P = Q.var("P"), A = Q.var("A");
               Q.assume(N >= 1 && P >= 1 && A >= 0);
               z3::expr alpha = alpha_of(Q, c.u);
               z3::expr S = Q.var("S"), L = Q.var("L"), U = Q.var("U"), Lam = Q.var("Lam"), J = Q.var("J");
               Q.assume(S >= 1 && J >= 0 && J <= N - 1 && 0 <= Lam && Lam <= U);
               Q.assume(U <= S + J * alpha && Lam >= S - J * alpha);
               Q.assume(fold_upper(L, P, U, A) && fold_lower(L, P, Lam, A));
               z3::expr B = P * (1 + (N - 1) * alpha) + A - 1;
               return L - S <= B * S && S - L <= B * S;
             });
  return runner.take();
}

}  // namespace fp::verify::smt
