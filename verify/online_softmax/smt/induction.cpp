// The normalizer bound for every n, by induction over the reals (docs/bounds.md §5 "(a)
// induction"). The queries are fixed-size: the step count k is a real variable K >= 1, and the
// k-dependent parts of the bound enter through their closed forms in K (γ_{k-1} = (K-1)u/(1 -
// (K-1)u)) or through a variable linked to the next step's by the recurrence the closed form
// satisfies (1 + φ_{k+1} = (1 + φ_k)(1 + ε_t)(1 + u_t)^2, whose solution from 1 + φ_1 = 1 + ε_t
// is the formula's (1 + ε_t)^k (1 + u_t)^(2(k-1))).
//
// Frames. d_j = M - x_j >= 0 is key j's distance below the row maximum; the scan works relative
// to its running maximum F_k, D_j = F_k - x_j. Instead of one perturbation per key (which no
// fixed-size statement can hold), the invariants carry the sums
//   U = Σ_j exp(-(1 - u)·D_j)   and   Λ = Σ_j exp(-(1 + u)·D_j),
// which bound every term from above and below whatever rounding hit its argument (exp is
// monotone and fl(y) = y(1 + a), |a| <= u, y = -D <= 0), and which a rescale by exp(-Δ) maps
// exactly: U' = U·exp(-(1 - u)Δ) + 1 (every D grows by Δ; the new maximum enters as exp(0) = 1).
// That is the paper argument's telescoping of the argument perturbations (docs/bounds.md §3),
// in a form with one variable per sum. At k = n the sums are taken at the final maximum, and
// the argument-rounding lemma, summed over the keys by its own induction, gives
// U <= S + J·α(u), Λ >= S - J·α(u) with J <= n - 1 keys below the maximum.
//
// Rounding model (core/ir.h SEMANTICS; docs/bounds.md §1): an addition of non-negative values
// rounds relatively (fl(a + b) in [(a + b)(1 - u), (a + b)(1 + u)]: a sum in the subnormal range is
// exact); a product may also underflow (absolute error <= ω_t); an exponential is the exact
// exponential of the rounded argument times (1 + h), |h| <= ε_p, plus an absolute error <= ω_p +
// ω_64 when the result is subnormal, and is never negative. exp(0) = 1 exactly and a product by
// exactly 1 is exact (a step that does not raise the maximum computes no effective rescale).
// Keys at -inf contribute exactly 0 on both sides (their sums' terms are 0).
#include <fmt/format.h>
#include <z3++.h>

#include <cmath>
#include <functional>

#include "verify/online_softmax/smt/induction_model.h"
#include "verify/online_softmax/smt/queries.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt {

const char* induction_mutant_name(InductionMutant m) {
  switch (m) {
    case InductionMutant::None:
      return "none";
    case InductionMutant::DropAlpha:
      return "drop-alpha";
    case InductionMutant::DropGamma:
      return "drop-gamma";
    case InductionMutant::DropRounding:
      return "drop-rounding";
    case InductionMutant::MissingRescale:
      return "missing-rescale";
  }
  return "none";
}

using namespace induction_model;

void induction_model::composed_sum_queries(QueryRunner& r, const std::string& prefix, const std::string& what,
                                           const std::function<Consts(Query&)>& consts, int gshift) {
  r.run(prefix + ".base", fmt::format("{} invariant holds after its first key", what), [&](Query& Q) {
    Consts c = consts(Q);
    z3::expr K = Q.c().real_val(1);
    z3::expr G = Q.c().real_val(0);  // γ_0 = 0: one key, no rounded addition
    auto [gp, gm] = key_terms(Q, "gp", "gm");
    z3::expr e = computed_exp(Q, "e", gm, gp, c);
    return composed_upper(e, G, gp, K, c) && composed_lower(e, G, gm, K, c);
  });
  for (const bool upper : {true, false}) {
    r.run(fmt::format("{}.step-{}", prefix, upper ? "upper" : "lower"),
          fmt::format("{} {} invariant after k keys implies it after k + 1, for every real k >= 1 with k·u < 1",
                      what, upper ? "upper" : "lower"),
          [&](Query& Q) {
            Consts c = consts(Q);
            z3::expr K = Q.var("k");
            Q.assume(K >= 1);
            z3::expr G = gamma_var(Q, "G", max0(K - gshift), c.u), G1 = gamma_var(Q, "G1", max0(K + 1 - gshift), c.u);
            z3::expr S = Q.var("S"), Vp = Q.var("Vp"), Vm = Q.var("Vm");
            Q.assume(0 <= Vm && Vm <= Vp && Vp <= K);
            Q.assume(upper ? composed_upper(S, G, Vp, K, c) : S >= 0 && composed_lower(S, G, Vm, K, c));
            auto [gp, gm] = key_terms(Q, "gp", "gm");
            z3::expr e = computed_exp(Q, "e", gm, gp, c);
            z3::expr S1 = Q.var("S1");
            Q.assume(S1 >= (S + e) * (1 - c.u) && S1 <= (S + e) * (1 + c.u));
            return (Vm + gm <= Vp + gp && Vp + gp <= K + 1) &&
                   (upper ? composed_upper(S1, G1, Vp + gp, K + 1, c)
                          : S1 >= 0 && composed_lower(S1, G1, Vm + gm, K + 1, c));
          });
  }
}

std::vector<InductionStep> prove_normalizer_induction(const InductionQuery& q, const SmtLimits& limits) {
  const InductionMutant mut = q.mutant;
  QueryRunner runner(limits, fmt::format("normalizer bound by induction (u_s = 2^-{}, u_t = 2^-{}, mutant {})",
                                        q.storage_bits, q.state_bits, induction_mutant_name(mut)));
  auto run = [&](const std::string& name, const std::string& statement,
                 const std::function<z3::expr(Query&)>& build) { runner.run(name, statement, build); };
  auto src_consts = [&](Query& Q) { return storage_consts(Q, q, false); };
  auto tgt_consts = [&](Query& Q) { return state_consts(Q, q); };
  // ---- (a) the composed sum: Ŝ_k = fl(Ŝ_{k-1} + ê_k), Ŝ_1 = ê_1 (0 + ê is exact) ------------
  // Invariant after k >= 1 keys (G = γ_{k-1}(u_s); Vp, Vm the sums U, Λ at the row maximum):
  //   0 <= Ŝ <= (1 + G)((1 + ε_s)Vp + k·ω),   G <= 1 ⇒ Ŝ >= (1 - G)((1 - ε_s)Vm - k·ω).
  // (DropGamma: G = γ_{k-2}.)
  const int gshift = mut == InductionMutant::DropGamma ? 2 : 1;
  composed_sum_queries(runner, "src", "the composed sum's", src_consts, gshift);

  // ---- (b) the scan: L_k = fl(fl(L_{k-1}·R̂) + 1) on a new maximum (R̂ = exp.t(fl(F_{k-1} - F_k))),
  // L_k = fl(L_{k-1} + exp.t(fl(x_k - F_k))) otherwise; L_1 = 1 (or 0 for a key at -inf).
  // Invariant after k >= 1 keys (P = 1 + φ_k, A_k = k(k + 2)P²ω, U and Λ at the running maximum):
  //   0 <= Λ <= U <= k,  0 <= L <= P·U + A_k,  P <= 2 ⇒ L >= (2 - P)Λ - A_k.
  auto step_factor = [&](Query& Q, const Consts& c) {
    (void)Q;
    return mut == InductionMutant::DropRounding ? (1 + c.eps) * (1 + c.u)
                                                : (1 + c.eps) * (1 + c.u) * (1 + c.u);
  };
  auto tgt_upper = [](const z3::expr& L, const z3::expr& P, const z3::expr& U, const z3::expr& A) {
    return L >= 0 && L <= P * U + A;
  };
  auto tgt_lower = [](const z3::expr& L, const z3::expr& P, const z3::expr& Lam, const z3::expr& A) {
    return z3::implies(P <= 2, L >= (2 - P) * Lam - A);
  };
  auto under = [](const z3::expr& K, const z3::expr& P, const Consts& c) {
    return K * (K + 2) * P * P * c.om;
  };
  run("tgt.base", "the scan's invariant holds after its first key (L_1 = exp(0) = 1, or 0 at -inf)",
      [&](Query& Q) {
        Consts c = tgt_consts(Q);
        z3::expr K = Q.c().real_val(1), P = 1 + c.eps;
        z3::expr L = Q.var("L"), U = Q.var("U");
        Q.assume((L == 1 && U == 1) || (L == 0 && U == 0));
        z3::expr A = under(K, P, c);
        return U <= K && tgt_upper(L, P, U, A) && tgt_lower(L, P, U, A);
      });
  // On a new maximum the lower side goes in two queries (nlsat does not decide it in one): first
  // a lower bound on the rounded product fl(L·R̂) alone, then the step from that bound.
  auto rescaled_lower = [](const z3::expr& P, const z3::expr& Lam, const z3::expr& A, const z3::expr& Rlo,
                           const Consts& c) {
    return ((2 - P) * Lam * ((1 - c.eps) * Rlo - c.om) - A * (1 + c.eps + c.om)) * (1 - c.u) - c.om_op;
  };
  if (mut != InductionMutant::MissingRescale)
    run("tgt.step-rise-lower.product",
        "on a new maximum, the scan's lower invariant after k keys bounds the rescaled product fl(L·R̂) from "
        "below "
        "(where 1 + φ_{k+1} <= 2)",
        [&](Query& Q) {
          Consts c = tgt_consts(Q);
          z3::expr K = Q.var("k"), P = Q.var("P");
          Q.assume(K >= 1 && P >= 1);
          z3::expr P1 = P * step_factor(Q, c);
          Q.assume(P1 <= 2);
          z3::expr A = under(K, P, c);
          z3::expr L = Q.var("L"), Lam = Q.var("Lam");
          Q.assume(0 <= Lam && Lam <= K && L >= 0 && tgt_lower(L, P, Lam, A));
          z3::expr Rup = Q.var("Rup"), Rlo = Q.var("Rlo");
          Q.assume(0 <= Rlo && Rlo <= Rup && Rup <= 1);
          z3::expr R = computed_exp(Q, "R", Rlo, Rup, c);
          z3::expr m = Q.var("m");
          Q.assume(m >= 0 && m >= L * R * (1 - c.u) - c.om_op && m <= L * R * (1 + c.u) + c.om_op);
          return m >= rescaled_lower(P, Lam, A, Rlo, c);
        });
  for (const bool rise : {true, false})
    for (const bool upper : {true, false}) {
      const std::string name =
          fmt::format("tgt.step-{}-{}", rise ? "rise" : "keep", upper ? "upper" : "lower");
      run(name,
          fmt::format(
              "the scan's {} invariant after k keys implies it after k + 1 when key k + 1 {}, for every "
              "real k >= 1",
              upper ? "upper" : "lower", rise ? "raises the maximum (a rescale)" : "does not"),
          [&](Query& Q) {
            Consts c = tgt_consts(Q);
            z3::expr K = Q.var("k"), P = Q.var("P");
            Q.assume(K >= 1 && P >= 1);
            z3::expr P1 = P * step_factor(Q, c);
            z3::expr A = under(K, P, c), A1 = under(K + 1, P1, c);
            z3::expr L = Q.var("L"), U = Q.var("U"), Lam = Q.var("Lam");
            Q.assume(0 <= Lam && Lam <= U && U <= K);
            // (On a new maximum the lower side reads L only through the product's bound.)
            if (upper)
              Q.assume(tgt_upper(L, P, U, A));
            else if (!rise || mut == InductionMutant::MissingRescale)
              Q.assume(L >= 0 && tgt_lower(L, P, Lam, A));
            z3::expr L1 = Q.var("L1"), U1 = Q.var("U1"), Lam1 = Q.var("Lam1");
            if (rise) {
              // Every D grows by Δ > 0: the sums scale by exp(-(1 ∓ u)Δ) in (0, 1]; the new key is
              // the maximum, its term exp(0) = 1 exactly.
              z3::expr Rup = Q.var("Rup"), Rlo = Q.var("Rlo");
              Q.assume(0 <= Rlo && Rlo <= Rup && Rup <= 1);
              Q.assume(U1 == U * Rup + 1 && Lam1 == Lam * Rlo + 1);
              if (mut == InductionMutant::MissingRescale) {
                Q.assume(L1 == Q.var("r") && Q.var("r") >= (L + 1) * (1 - c.u) &&
                         Q.var("r") <= (L + 1) * (1 + c.u));
              } else {
                z3::expr m = Q.var("m");
                if (upper) {
                  z3::expr R = computed_exp(Q, "R", Rlo, Rup, c);
                  Q.assume(m >= 0 && m >= L * R * (1 - c.u) - c.om_op && m <= L * R * (1 + c.u) + c.om_op);
                } else {
                  // The product's lower bound, proved by tgt.step-rise-lower.product.
                  Q.assume(m >= 0 && z3::implies(P1 <= 2, m >= rescaled_lower(P, Lam, A, Rlo, c)));
                }
                Q.assume(L1 >= (m + 1) * (1 - c.u) && L1 <= (m + 1) * (1 + c.u));
              }
            } else {
              auto [gp, gm] = key_terms(Q, "gp", "gm");
              z3::expr e = computed_exp(Q, "e", gm, gp, c);
              Q.assume(U1 == U + gp && Lam1 == Lam + gm);
              Q.assume(L1 >= (L + e) * (1 - c.u) && L1 <= (L + e) * (1 + c.u));
            }
            return (0 <= Lam1 && Lam1 <= U1 && U1 <= K + 1) &&
                   (upper ? tgt_upper(L1, P1, U1, A1) : L1 >= 0 && tgt_lower(L1, P1, Lam1, A1));
          });
    }

  // ---- (c) the argument-rounding lemma, summed: over the keys at the row maximum,
  // Vp = Σ exp(-(1 - u)d_j) <= S + J·α(u), Vm = Σ exp(-(1 + u)d_j) >= S - J·α(u), S = Σ exp(-d_j),
  // J the number of keys with d_j > 0 (base: no key, all 0). The exponentials are positive reals
  // related only by what exp satisfies: exp(a)exp(b) = exp(a + b), 1 + s <= exp(s), and
  // e·y·exp(-y) <= 1 for y >= 0 (1 + s <= exp(s) at s = y - 1), e in [2.71828182, 2.71828183].
  for (const bool storage_side : {true, false}) {
    const int bits = storage_side ? q.storage_bits : q.state_bits;
    run(storage_side ? "lemma.src" : "lemma.tgt",
        fmt::format(
            "the argument-rounding lemma summed over the keys: one more key keeps Σexp(-(1-u)d) <= S + "
            "J·α(u) and Σexp(-(1+u)d) >= S - J·α(u), u = 2^-{}",
            bits),
        [&](Query& Q) {
          z3::expr u = Q.pow2(bits);
          z3::expr alpha = alpha_of(Q, u);
          z3::expr Vp = Q.var("Vp"), Vm = Q.var("Vm"), S = Q.var("S"), J = Q.var("J");
          Q.assume(J >= 0 && Vp <= S + J * alpha && Vm >= S - J * alpha);
          const KeyExps k = key_exps(Q, u);
          z3::expr J1 = z3::ite(k.finite && k.d > 0, J + 1, J);
          return Vp + k.gp <= S + k.W + J1 * alpha && Vm + k.gm >= S + k.W - J1 * alpha;
        });
  }

  // ---- (d) closing: the invariants at k = n give B_src, B_tgt (symbolic n), then REL ---------
  // n is a real N >= 1; S >= 1 (the maximum contributes exp(0) = 1); J <= n - 1 (the maximum has
  // d = 0).
  const bool drop_alpha = mut == InductionMutant::DropAlpha;
  run("src.closing",
      "the composed sum's invariant at k = n, the summed lemma and S >= 1 give |l_src - S| <= B_src(n)·S for "
      "every real n >= 1 with (n - 1)·u_s < 1",
      [&](Query& Q) {
        Consts c = src_consts(Q);
        z3::expr N = Q.var("n");
        Q.assume(N >= 1);
        z3::expr G = gamma_var(Q, "G", max0(N - gshift), c.u);
        z3::expr alpha = c.u / (Q.c().real_val("271828182/100000000") * (1 - c.u));
        z3::expr S = Q.var("S"), Sh = Q.var("l_src"), Vp = Q.var("Vp"), Vm = Q.var("Vm"), J = Q.var("J");
        Q.assume(S >= 1 && J >= 0 && J <= N - 1 && Vm >= 0 && Vm <= Vp);
        Q.assume(Vp <= S + J * alpha && Vm >= S - J * alpha);
        Q.assume(composed_upper(Sh, G, Vp, N, c) && composed_lower(Sh, G, Vm, N, c));
        z3::expr B =
            (1 + G) * ((1 + c.eps) * (1 + (drop_alpha ? Q.c().real_val(0) : (N - 1) * alpha)) + N * c.om) - 1;
        return Sh - S <= B * S && S - Sh <= B * S;
      });
  run("tgt.closing",
      "the scan's invariant at k = n, the summed lemma and S >= 1 give |L_n - S| <= B_scan(n)·S, B_scan = "
      "(1 + φ)(1 + (n-1)·α(u_t)) + n(n+2)(1 + φ)²·ω - 1, for every real n >= 1 and every 1 + φ >= 1",
      [&](Query& Q) {
        Consts c = tgt_consts(Q);
        z3::expr N = Q.var("n"), P = Q.var("P");
        Q.assume(N >= 1 && P >= 1);
        z3::expr alpha = c.u / (Q.c().real_val("271828182/100000000") * (1 - c.u));
        z3::expr S = Q.var("S"), L = Q.var("L"), U = Q.var("U"), Lam = Q.var("Lam"), J = Q.var("J");
        Q.assume(S >= 1 && J >= 0 && J <= N - 1 && 0 <= Lam && Lam <= U);
        Q.assume(U <= S + J * alpha && Lam >= S - J * alpha);
        z3::expr A = under(N, P, c);
        Q.assume(tgt_upper(L, P, U, A) && tgt_lower(L, P, Lam, A));
        z3::expr B = P * (1 + (drop_alpha ? Q.c().real_val(0) : (N - 1) * alpha)) + A - 1;
        return L - S <= B * S && S - L <= B * S;
      });
  // B_tgt = (1 + ρ)(1 + B_scan) - 1: with storage = state (ρ = 0) the scan's result is l_tgt.
  if (q.final_store)
    run("tgt.store",
        "the final store at the storage precision: |L - S| <= B_scan·S and S >= 1 give |l_tgt - S| <= ((1 + "
        "u_s)(1 + B_scan) - 1)·S, in the normal range and below it",
        [&](Query& Q) {
          z3::expr S = Q.var("S"), L = Q.var("L"), Bp = Q.var("B_scan"), l = Q.var("l_tgt");
          z3::expr rho = Q.pow2(q.storage_bits), nmin = Q.num(q.storage_min_normal);
          Q.assume(S >= 1 && Bp >= 0 && L >= 0 && L - S <= Bp * S && S - L <= Bp * S);
          // Rounding to the storage precision: relative in its normal range; below it the result
          // lies in [0, smallest normal] (rounding is monotone and the smallest normal is a value).
          Q.assume((L >= nmin && l >= L * (1 - rho) && l <= L * (1 + rho)) ||
                   (L < nmin && l >= 0 && l <= nmin));
          z3::expr B = (1 + rho) * (1 + Bp) - 1;
          return l - S <= B * S && S - l <= B * S;
        });
  run("rel.closing",
      "|l_src - S| <= B_src·S, |l_tgt - S| <= B_tgt·S, B_src < 1 give |l_tgt - l_src| <= REL·l_src, REL = "
      "(B_src + B_tgt)/(1 - B_src)",
      [&](Query& Q) {
        z3::expr S = Q.var("S"), ls = Q.var("l_src"), lt = Q.var("l_tgt"), Bs = Q.var("B_src"),
                 Bt = Q.var("B_tgt");
        Q.assume(S > 0 && Bs >= 0 && Bs < 1 && Bt >= 0);
        Q.assume(ls - S <= Bs * S && S - ls <= Bs * S && lt - S <= Bt * S && S - lt <= Bt * S);
        z3::expr R = Q.var("REL");
        Q.assume(R * (1 - Bs) == Bs + Bt);
        return lt - ls <= R * ls && ls - lt <= R * ls;
      });
  return runner.take();
}

}  // namespace fp::verify::smt
