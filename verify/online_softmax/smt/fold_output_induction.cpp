// The block fold's output bound for every (n, b), by induction over the reals (docs/bounds.md §7
// "O, machine-checked"). One value column: the fold's numerator U (state precision t) takes, per
// block, a rescale U ← fl(U·α̂) and, per cell, an addition U ← fl(U + fl(T·v)); O = fl(U / L) at t,
// then stored at the storage precision s. Model quantities (exact reals): g_j = the exact
// exponential of key j's rounded arguments along its path (its T's exact value times the exact
// values of the later rescales), X = Σ g_j·v_j, Y = Σ g_j·|v_j| and V = Σ |v_j| over the keys so far.
// Invariant after any prefix of steps:
//   |U - X| <= φ·Y + a·V + c,   |X| <= Y <= V,   1 + φ >= (1 + u)(1 + ε),  a, c >= 0,
// with, per rescale,  1 + φ' = (1 + φ)(1 + u)(1 + ε),  a' = a·k + (1 + u)ω(1 + φ),  c' = c·k + ω,
//                      k = (1 + u)(1 + ε) + (1 + u)ω;
// and per addition,   1 + φ' = (1 + φ)(1 + u),  a' = a(1 + u) + (1 + u)²ω,  c' = (c + ω)(1 + u).
// The rounding model is symmetric (fl(-z) = -fl(z)), so each step is proved for U >= 0 (rescale)
// or v >= 0 (addition) and holds for the mirrored signs. At the end (the row maximum M finite,
// w_j = exp(x_j - M), S = Σ w_j >= 1, W = Σ w_j v_j, Aa = Σ w_j|v_j| / S), the argument-rounding
// lemma gives |X - W| <= α(u)·V and Y <= S·Aa + α(u)·V, and with |L - S| <= B_fold·S:
//   |O - W/S| <= cA·Aa + cV·V + cabs   (o.closing.*; the coefficients are fold_output_bound's).
// The composed side: each probability P̂_j = fl_s(ê_j / l̂) is within cAs·p_j + cVs of p_j = w_j/S
// (src.o.key), and the recursive sum of fl_s(P̂_j·v_j) within γ_k(u_s)·Σ|P̂_j v_j| + k(1 + γ_k)ω_s
// of Σ P̂_j v_j (src.o.dot-base, src.o.dot-step); o.pair closes |O_fold - O_src|. Several steps go
// in more than one query (nlsat decides the parts, not the whole).
#include <fmt/format.h>
#include <z3++.h>

#include "verify/online_softmax/smt/induction_model.h"
#include "verify/online_softmax/smt/queries.h"

namespace fp::verify::smt {

using namespace induction_model;

namespace {

// |z| as a variable: z's absolute value (a disjunction nlsat splits on).
z3::expr abs_var(Query& Q, const char* name, const z3::expr& z) {
  z3::expr a = Q.var(name);
  Q.assume(a >= z && a >= -z && (a == z || a == -z));
  return a;
}

// fl(z) at unit roundoff u with an absolute term om: within u·|z| + om of z.
z3::expr rounded(Query& Q, const char* name, const z3::expr& z, const z3::expr& zabs, const z3::expr& u,
                 const z3::expr& om) {
  z3::expr r = Q.var(name);
  Q.assume(r >= z - u * zabs - om && r <= z + u * zabs + om);
  return r;
}

struct OutputInvariant {
  z3::expr U, X, Y, V, phi, a, c;
};

OutputInvariant output_invariant(Query& Q, const Consts& c) {
  OutputInvariant s{Q.var("U"), Q.var("X"), Q.var("Y"), Q.var("V"), Q.var("phi"), Q.var("a"), Q.var("c")};
  Q.assume(s.X <= s.Y && -s.X <= s.Y && s.Y <= s.V);
  Q.assume(1 + s.phi >= (1 + c.u) * (1 + c.eps) && s.a >= 0 && s.c >= 0);
  Q.assume(s.U - s.X <= s.phi * s.Y + s.a * s.V + s.c && s.X - s.U <= s.phi * s.Y + s.a * s.V + s.c);
  return s;
}

z3::expr within(const z3::expr& U, const z3::expr& X, const z3::expr& E) {
  return U - X <= E && X - U <= E;
}

}  // namespace

std::vector<InductionStep> prove_fold_output_induction(const InductionQuery& q, const SmtLimits& limits) {
  const InductionMutant mut = q.mutant;
  QueryRunner runner(limits, fmt::format("block-fold output bound by induction (u_s = 2^-{}, u_t = 2^-{}, mutant {})",
                                         q.storage_bits, q.state_bits, induction_mutant_name(mut)));
  auto tconsts = [&](Query& Q) { return state_consts(Q, q); };
  auto sconsts = [&](Query& Q) { return storage_consts(Q, q, true); };
  const bool drop_rounding = mut == InductionMutant::DropRounding;

  for (const bool storage_side : {true, false})
    runner.run(storage_side ? "o.lemma-key.src" : "o.lemma-key.tgt",
               "one key's exponential of its rounded argument, g in [exp(-(1+u)d), exp(-(1-u)d)], is within α(u) "
               "of exp(-d) (so |X - W| <= α·V and Y <= S·Aa + α·V, summed with the weights |v_j|)",
               [&](Query& Q) {
                 z3::expr u = storage_side ? Q.pow2(q.storage_bits) : Q.pow2(q.state_bits);
                 const KeyExps k = key_exps(Q, u);
                 z3::expr g = Q.var("g");
                 Q.assume(k.gm <= g && g <= k.gp);
                 return within(g, k.W, alpha_of(Q, u));
               });
  runner.run("o.rescale",
             "a rescale U' = fl(U·α̂) keeps the output invariant with 1 + φ' = (1 + φ)(1 + u)(1 + ε) (U >= 0; "
             "the mirrored sign by symmetry)",
             [&](Query& Q) {
               Consts c = tconsts(Q);
               OutputInvariant s = output_invariant(Q, c);
               Q.assume(s.U >= 0);
               z3::expr R = Q.var("R");
               Q.assume(0 <= R && R <= 1);
               z3::expr al = computed_exp(Q, "alpha", R, R, c);
               z3::expr m = rounded(Q, "m", s.U * al, s.U * al, c.u, c.om);
               z3::expr k = (1 + c.u) * (1 + c.eps) + (1 + c.u) * c.om;
               z3::expr phi1 = (1 + s.phi) * (1 + c.u) * (1 + c.eps) - 1;
               z3::expr a1 = s.a * k + (1 + c.u) * c.om * (1 + s.phi), c1 = s.c * k + c.om;
               return within(m, s.X * R, phi1 * s.Y * R + a1 * s.V + c1);
             });
  // The addition in three queries (nlsat does not decide it in one): the rounded product's error,
  // then the step for a non-negative and for a negative sum z = U + fl(T·v).
  // (tv = T°·v: the steps see the product only, one variable.)
  auto product_error = [](const z3::expr& tv, const z3::expr& v, const Consts& c) {
    return (c.u * (1 + c.eps) + c.eps) * tv + (1 + c.u) * c.om * v + c.om;
  };
  runner.run("o.add.product",
             "an addition's rounded product fl(T·v) is within (u(1 + ε) + ε)·T°·v + (1 + u)ω·v + ω of T°·v (v >= 0; "
             "the mirrored sign by symmetry)",
             [&](Query& Q) {
               Consts c = tconsts(Q);
               z3::expr T0 = Q.var("T0"), v = Q.var("v");
               Q.assume(0 <= T0 && T0 <= 1 && v >= 0);
               z3::expr T = computed_exp(Q, "T", T0, T0, c);
               z3::expr pi = rounded(Q, "pi", T * v, T * v, c.u, c.om);
               return within(pi, T0 * v, product_error(T0 * v, v, c));
             });
  // (The non-negative sum splits once more on U's sign.)
  for (const int kase : {0, 1, 2}) {
    const bool nonneg = kase < 2;
    runner.run(kase == 0 ? "o.add.step-nonneg-u" : kase == 1 ? "o.add.step-nonneg-v" : "o.add.step-neg",
               fmt::format("an addition U' = fl(U + π) keeps the output invariant with 1 + φ' = (1 + φ)(1 + u), for "
                           "a {} sum{} (π the rounded product, within o.add.product's error of T°·v, v >= 0)",
                           nonneg ? "non-negative" : "negative",
                           kase == 0 ? " and U >= 0" : kase == 1 ? " and U < 0" : ""),
               [&](Query& Q) {
                 Consts c = tconsts(Q);
                 OutputInvariant s = output_invariant(Q, c);
                 z3::expr tv = Q.var("tv"), v = Q.var("v"), pi = Q.var("pi");
                 Q.assume(0 <= tv && tv <= v && within(pi, tv, product_error(tv, v, c)));
                 z3::expr z = s.U + pi;
                 Q.assume(nonneg ? z >= 0 : z < 0);
                 if (kase == 0) Q.assume(s.U >= 0);
                 if (kase == 1) Q.assume(s.U < 0);
                 // With U < 0 <= z, |z| <= π: the rounding is bounded through π (nlsat does not find it).
                 z3::expr zabs = kase == 1 ? pi : nonneg ? z : -z;
                 z3::expr U1 = rounded(Q, "U1", z, zabs, c.u, Q.c().real_val(0));
                 // (DropRounding: φ does not grow by the addition's rounding.)
                 z3::expr phi1 = drop_rounding ? s.phi : (1 + s.phi) * (1 + c.u) - 1;
                 z3::expr a1 = s.a * (1 + c.u) + (1 + c.u) * (1 + c.u) * c.om, c1 = (s.c + c.om) * (1 + c.u);
                 return 1 + phi1 >= (1 + c.u) * (1 + c.eps) &&
                        within(U1, s.X + tv, phi1 * (s.Y + tv) + a1 * (s.V + v) + c1);
               });
  }
  // The closing in three queries: the numerator against W, the quotient by L against W/S, the
  // roundings of the division and the store.
  runner.run("o.closing.numerator",
             "after the last block, the invariant and the summed lemma (|X - W| <= α·V, Y <= S·Aa + α·V) give "
             "|U - W| <= S·N, N = φ·Aa + (φα + a + α)·V + c (S >= 1)",
             [&](Query& Q) {
               Consts c = tconsts(Q);
               OutputInvariant s = output_invariant(Q, c);
               z3::expr alpha = alpha_of(Q, c.u);
               z3::expr S = Q.var("S"), W = Q.var("W"), Aa = Q.var("Aa");
               Q.assume(S >= 1 && Aa >= 0 && within(s.X, W, alpha * s.V) && s.Y <= S * Aa + alpha * s.V);
               z3::expr N = s.phi * Aa + (s.phi * alpha + s.a + alpha) * s.V + s.c;
               return within(s.U, W, S * N);
             });
  runner.run("o.closing.quotient",
             "|U - W| <= S·N, |W| <= S·Aa and |L - S| <= B_fold·S (B_fold < 1, S >= 1) give |U/L - W/S| <= (N + "
             "B_fold·Aa)/(1 - B_fold)",
             [&](Query& Q) {
               z3::expr U = Q.var("U"), W = Q.var("W"), S = Q.var("S"), L = Q.var("L"), N = Q.var("N"),
                        Aa = Q.var("Aa"), Bf = Q.var("Bf"), quo = Q.var("quo"), Wn = Q.var("Wn");
               Q.assume(S >= 1 && N >= 0 && Aa >= 0 && Bf >= 0 && Bf < 1);
               Q.assume(within(U, W, S * N) && W <= S * Aa && -W <= S * Aa && within(L, S, Bf * S));
               Q.assume(quo * L == U && Wn * S == W);
               return within(quo, Wn, (N + Bf * Aa) / (1 - Bf));
             });
  runner.run("o.closing.rounding",
             "|U/L - W/S| <= E and |W/S| <= Aa give, through O1 = fl_t(U/L) and O = fl_s(O1), |O - W/S| <= "
             "E(1 + u)(1 + ρ) + (u(1 + ρ) + ρ)·Aa + ω(1 + ρ) + ω_s",
             [&](Query& Q) {
               Consts c = tconsts(Q);
               z3::expr quo = Q.var("quo"), Wn = Q.var("Wn"), E = Q.var("E"), Aa = Q.var("Aa");
               Q.assume(E >= 0 && Aa >= 0 && Wn <= Aa && -Wn <= Aa && within(quo, Wn, E));
               z3::expr O1 = rounded(Q, "O1", quo, abs_var(Q, "quoabs", quo), c.u, c.om);
               z3::expr rho = q.final_store ? Q.pow2(q.storage_bits) : Q.c().real_val(0);
               z3::expr oms = q.final_store ? storage_underflow(Q, q)
                                            : Q.c().real_val(0);
               z3::expr O = rounded(Q, "O", O1, abs_var(Q, "O1abs", O1), rho, oms);
               return within(O, Wn, E * (1 + c.u) * (1 + rho) + (c.u * (1 + rho) + rho) * Aa + c.om * (1 + rho) + oms);
             });
  runner.run("src.o.key",
             "a composed probability P̂ = fl_s(ê / l̂) is within cAs·p + cVs of p = w/S (ê = exp.s of the rounded "
             "argument, the lemma |g - w| <= α(u_s), |l̂ - S| <= B_src·S, S >= 1)",
             [&](Query& Q) {
               Consts c = sconsts(Q);
               z3::expr alpha = alpha_of(Q, c.u);
               z3::expr w = Q.var("w"), g = Q.var("g"), S = Q.var("S"), l = Q.var("l"), Bs = Q.var("Bs");
               Q.assume(0 <= w && w <= 1 && 0 <= g && g <= 1 && within(g, w, alpha) && S >= 1 && w <= S);
               Q.assume(Bs >= 0 && Bs < 1 && within(l, S, Bs * S));
               z3::expr e = computed_exp(Q, "e", g, g, c);
               z3::expr quo = Q.var("quo");
               Q.assume(quo * l == e);
               z3::expr P = rounded(Q, "P", quo, quo, c.u, c.om);
               z3::expr p = Q.var("p");
               Q.assume(p * S == w);
               z3::expr cAs = (c.eps + Bs) / (1 - Bs) * (1 + c.u) + c.u;
               z3::expr cVs = ((1 + c.eps) * alpha + c.om) * (1 + c.u) / (1 - Bs) + c.om;
               return within(P, p, cAs * p + cVs);
             });
  // The composed value pass: O_k = fl_s(O_{k-1} + fl_s(P̂_k·v_k)) from O_0 = 0 (the first addition
  // exact): |O_k - Z_k| <= G_k·Zabs_k + k(1 + G_k)ω_s, G_k = γ_k(u_s), Z = Σ P̂·v, Zabs = Σ|P̂·v|.
  auto dot_inv = [](const z3::expr& O, const z3::expr& Z, const z3::expr& Za, const z3::expr& G,
                    const z3::expr& K, const Consts& c) {
    return within(O, Z, G * Za + K * (1 + G) * c.om);
  };
  runner.run("src.o.dot-base", "the composed value pass's invariant after its first product", [&](Query& Q) {
    Consts c = sconsts(Q);
    z3::expr P = Q.var("P"), v = Q.var("v");
    Q.assume(v >= 0);  // the mirrored sign by symmetry
    z3::expr pv = rounded(Q, "pv", P * v, abs_var(Q, "pvabs", P * v), c.u, c.om);
    z3::expr G = gamma_var(Q, "G", Q.c().real_val(1), c.u);
    return dot_inv(pv, P * v, abs_var(Q, "Zabs", P * v), G, Q.c().real_val(1), c);
  });
  runner.run("src.o.dot-step",
             "the composed value pass's invariant after k products implies it after k + 1, for every real k >= 1 "
             "with (k + 1)·u_s < 1",
             [&](Query& Q) {
               Consts c = sconsts(Q);
               z3::expr K = Q.var("k");
               Q.assume(K >= 1);
               z3::expr G = gamma_var(Q, "G", K, c.u), G1 = gamma_var(Q, "G1", K + 1, c.u);
               z3::expr O = Q.var("O"), Z = Q.var("Z"), Za = Q.var("Za");
               Q.assume(Za >= 0 && Z <= Za && -Z <= Za && dot_inv(O, Z, Za, G, K, c));
               z3::expr P = Q.var("P"), v = Q.var("v");
               Q.assume(v >= 0);
               z3::expr pva = abs_var(Q, "pvabs", P * v);
               z3::expr pv = rounded(Q, "pv", P * v, pva, c.u, c.om);
               z3::expr z = O + pv;
               z3::expr O1 = rounded(Q, "O1", z, abs_var(Q, "zabs", z), c.u, Q.c().real_val(0));
               return dot_inv(O1, Z + P * v, Za + pva, G1, K + 1, c);
             });
  runner.run("o.pair",
             "the fold's |O_f - W/S| <= cA·Aa + cV·V + cabs, the composed |Σ P̂v - W/S| <= cAs·Aa + cVs·V and "
             "|O_s - Σ P̂v| <= G·Z + dabs (Z = Σ|P̂v|), and Aa·(1 - cAs) <= Z + cVs·V give |O_f - O_s| <= relZ·Z + "
             "relV·V + cabs + dabs",
             [&](Query& Q) {
               z3::expr Of = Q.var("Of"), Os = Q.var("Os"), Wn = Q.var("Wn"), Sp = Q.var("SPv");
               z3::expr Aa = Q.var("Aa"), V = Q.var("V"), Z = Q.var("Z");
               z3::expr cA = Q.var("cA"), cV = Q.var("cV"), cabs = Q.var("cabs"), cAs = Q.var("cAs"),
                        cVs = Q.var("cVs"), G = Q.var("G"), dabs = Q.var("dabs");
               Q.assume(Aa >= 0 && V >= 0 && Z >= 0 && cA >= 0 && cV >= 0 && cabs >= 0 && cAs >= 0 && cAs < 1 &&
                        cVs >= 0 && G >= 0 && dabs >= 0);
               Q.assume(within(Of, Wn, cA * Aa + cV * V + cabs) && within(Sp, Wn, cAs * Aa + cVs * V) &&
                        within(Os, Sp, G * Z + dabs) && Aa * (1 - cAs) <= Z + cVs * V);
               z3::expr relZ = (cA + cAs) / (1 - cAs) + G, relV = (cA + cAs) * cVs / (1 - cAs) + cV + cVs;
               return within(Of, Os, relZ * Z + relV * V + cabs + dabs);
             });
  return runner.take();
}

}  // namespace fp::verify::smt
