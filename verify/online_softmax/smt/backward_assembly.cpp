// The assembly of the fused backward's bound (docs/bounds.md §8) checked step by step by Z3 over the
// reals: every ring identity the derivation rewrites with, every product and triangle bound it
// takes, and every closing that combines them into Ec_t, Ef_t, the row dot's ε_D, the perturbed
// forward's Ef'_t and dV's bound (§8.1). The rules of summing perturbed terms they rest on (a sum's
// step, a contraction's pair term) are the engine's perturbation calculus
// (verify/smt/perturbation_calculus.cpp). Each step's hypotheses are the rounding model
// (|δ| <= u, |η| <= ω), the earlier steps' conclusions and the γ calculus's rules
// (verify/smt/gamma_calculus.cpp) as facts about free variables; its query asserts them with the
// negated conclusion, so unsat proves the step for every value of every variable. What stays by
// hand is only the bookkeeping of which step feeds which: the sentences below and §8.
#include <z3++.h>

#include <string>

#include "verify/online_softmax/smt/queries.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt {

namespace {

// `GN` stands for the index the composed closing needs (γ_{n+4}); the mutant puts γ_{n+2}.
const detail::RealStep kSteps[] = {
    {"composed.identity",
     "ng - g* = e·θ2·(a* + lg*) + e(1 + θ2)(a*·δ1 + η1 + lg - lg*) + η6 (a ring identity)",
     R"smt((declare-const ast Real) (declare-const d1 Real) (declare-const h1 Real) (declare-const lg Real) (declare-const lgs Real)
(declare-const d5 Real) (declare-const d6 Real) (declare-const e Real) (declare-const h6 Real)
(define-fun T () Real (- (* (+ 1 d5) (+ 1 d6)) 1))
(define-fun ng () Real (+ (* (+ (* ast (+ 1 d1)) h1 lg) (+ 1 d5) e (+ 1 d6)) h6))
(assert (not (= (- ng (* e (+ ast lgs))) (+ (* e T (+ ast lgs)) (* e (+ 1 T) (+ (* ast d1) h1 (- lg lgs))) h6)))))smt"},
    {"composed.reference",
     "|e·θ2·(a* + lg*)| <= γ_2·(P*·A + P*·Σ_A)",
     R"smt((declare-const g2 Real) (declare-const T Real) (declare-const e Real) (declare-const l Real) (declare-const ast Real) (declare-const lgs Real)
(declare-const P Real) (declare-const A Real) (declare-const SA Real)
(assert (and (> g2 0) (<= (ab T) g2) (>= e 0) (<= e 1) (>= l 1) (= (* P l) e) (= A (ab (* ast l))) (>= SA 0) (<= (* l (ab lgs)) SA)))
(assert (> (ab (* e T (+ ast lgs))) (* g2 (+ (* P A) (* P SA))))))smt"},
    {"composed.roundings",
     "|e(1 + θ2)(a*·δ1 + η1 + lg - lg*)| <= (1 + γ_2)(u·P*·A + ω + γ_{n+2}·P*·Σ_A + U), given lg's sum bound",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g2 Real) (declare-const gn2 Real) (declare-const U Real)
(declare-const T Real) (declare-const e Real) (declare-const l Real) (declare-const ast Real) (declare-const d1 Real) (declare-const h1 Real) (declare-const Dl Real)
(declare-const P Real) (declare-const A Real) (declare-const SA Real)
(assert (and (> u 0) (> w 0) (> g2 0) (> gn2 0) (>= U 0) (<= (ab T) g2) (>= e 0) (<= e 1) (>= l 1) (= (* P l) e) (= A (ab (* ast l))) (>= SA 0)))
(assert (and (<= (ab d1) u) (<= (ab h1) w) (<= (ab Dl) (+ (/ (* gn2 SA) l) U))))
(assert (> (ab (* e (+ 1 T) (+ (* ast d1) h1 Dl))) (* (+ 1 g2) (+ (* u P A) w (* gn2 P SA) U)))))smt"},
    {"composed.close",
     "the three parts within Ec_t = P*(γ_3·A + γ_{n+4}·Σ_A) + (1 + γ_2)(ω + U) + ω, given the γ calculus's coefficient rules",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g2 Real) (declare-const g3 Real) (declare-const gn2 Real) (declare-const gn4 Real) (declare-const U Real)
(declare-const X1 Real) (declare-const X2 Real) (declare-const h6 Real) (declare-const P Real) (declare-const A Real) (declare-const SA Real)
(assert (and (> u 0) (> w 0) (> g2 0) (>= U 0) (>= P 0) (>= A 0) (>= SA 0)))
(assert (<= (+ g2 (* u (+ 1 g2))) g3))
(assert (<= (+ g2 (* (+ 1 g2) gn2)) gn4))
(assert (<= (ab X1) (* g2 (+ (* P A) (* P SA)))))
(assert (<= (ab X2) (* (+ 1 g2) (+ (* u P A) w (* gn2 P SA) U))))
(assert (<= (ab h6) w))
(assert (> (ab (+ X1 X2 h6)) (+ (* P (+ (* g3 A) (* GN SA))) (* (+ 1 g2) (+ w U)) w))))smt"},
    {"composed.sum-term",
     "fl(dP·fl(-e / fl(l·l))) = -(dP·e / l²)(1 + θ)(1 + δ4) + dP·η3(1 + δ4) + η4, θ the quotient's (a ring identity)",
     R"smt((declare-const dp Real) (declare-const e Real) (declare-const l Real) (declare-const d2 Real) (declare-const d3 Real) (declare-const d4 Real)
(declare-const h3 Real) (declare-const h4 Real) (declare-const q Real)
(assert (and (>= l 1) (= (* q (+ 1 d2)) (+ 1 d3)) (> (+ 1 d2) 0)))
(define-fun w () Real (+ (/ (* (- e) (+ 1 d3)) (* l l (+ 1 d2))) h3))
(assert (not (= (+ (* dp w (+ 1 d4)) h4) (+ (* (/ (* (- dp) e) (* l l)) q (+ 1 d4)) (* dp h3 (+ 1 d4)) h4)))))smt"},
    {"fused.identity",
     "ds - g* = P*·θ4·(dP - D) + P*·(D* - D) + η8(1 + θ3)(dP - D) + η9(1 + δ10) + η10 (a ring identity)",
     R"smt((declare-const P Real) (declare-const d7 Real) (declare-const d8 Real) (declare-const d9 Real) (declare-const d10 Real)
(declare-const h8 Real) (declare-const h9 Real) (declare-const h10 Real) (declare-const dp Real) (declare-const D Real) (declare-const Ds Real)
(define-fun T4 () Real (- (* (+ 1 d8) (+ 1 d7) (+ 1 d9) (+ 1 d10)) 1))
(define-fun T3 () Real (- (* (+ 1 d7) (+ 1 d9) (+ 1 d10)) 1))
(define-fun ds () Real (+ (* (+ (* P (+ 1 d8)) h8) (- dp D) (+ 1 d7) (+ 1 d9) (+ 1 d10)) (* h9 (+ 1 d10)) h10))
(assert (not (= (- ds (* P (- dp Ds))) (+ (* P T4 (- dp D)) (* P (- Ds D)) (* h8 (- dp D) (+ 1 T3)) (* h9 (+ 1 d10)) h10)))))smt"},
    {"fused.rescaled",
     "|P*·θ4·(dP - D)| <= P*·γ_4·r",
     R"smt((declare-const g4 Real) (declare-const P Real) (declare-const T4 Real) (declare-const X Real) (declare-const r Real)
(assert (and (>= P 0) (<= (ab T4) g4) (<= (ab X) r)))
(assert (> (ab (* P T4 X)) (* P g4 r))))smt"},
    {"fused.row-dot",
     "|P*·(D* - D)| <= P*·(κ_D + ε_D)",
     R"smt((declare-const P Real) (declare-const Y Real) (declare-const K Real) (declare-const eD Real)
(assert (and (>= P 0) (<= (ab Y) (+ K eD))))
(assert (> (ab (* P Y)) (* P (+ K eD)))))smt"},
    {"fused.underflow",
     "|η8(1 + θ3)(dP - D)| <= (1 + γ_3)·ω·r and |η9(1 + δ10)| <= (1 + u)·ω",
     R"smt((declare-const g3 Real) (declare-const u Real) (declare-const w Real) (declare-const h8 Real) (declare-const h9 Real) (declare-const d10 Real) (declare-const T3 Real) (declare-const X Real) (declare-const r Real)
(assert (and (<= (ab T3) g3) (<= (ab X) r) (<= (ab h8) w) (<= (ab h9) w) (<= (ab d10) u)))
(assert (or (> (ab (* h8 X (+ 1 T3))) (* (+ 1 g3) w r)) (> (ab (* h9 (+ 1 d10))) (* (+ 1 u) w)))))smt"},
    {"fused.close",
     "the five parts within Ef_t = P*(γ_4·r + κ_D + ε_D) + (1 + γ_3)·ω·r + (1 + u)·ω + ω",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g3 Real) (declare-const g4 Real) (declare-const P Real) (declare-const r Real) (declare-const K Real) (declare-const eD Real)
(declare-const t1 Real) (declare-const t2 Real) (declare-const t3 Real) (declare-const t4 Real) (declare-const t5 Real)
(assert (and (<= (ab t1) (* P g4 r)) (<= (ab t2) (* P (+ K eD))) (<= (ab t3) (* (+ 1 g3) w r)) (<= (ab t4) (* (+ 1 u) w)) (<= (ab t5) w)))
(assert (> (ab (+ t1 t2 t3 t4 t5)) (+ (* P (+ (* g4 r) K eD)) (* (+ 1 g3) w r) (* (+ 1 u) w) w))))smt"},
    {"fused.row-dot-narrowed",
     "a row dot within ε of D_x, rounded to p once more: within (1 + u)·ε + u·|D_x| + ω",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const Dq Real) (declare-const Dx Real) (declare-const es Real) (declare-const d Real) (declare-const h Real)
(assert (and (> u 0) (> w 0) (<= (ab d) u) (<= (ab h) w) (<= (ab (- Dq Dx)) es)))
(assert (> (ab (- (+ (* Dq (+ 1 d)) h) Dx)) (+ (* (+ 1 u) es) (* u (ab Dx)) w))))smt"},
    {"perturbed.phi",
     "§8.1: l >= 1, |l_tgt - l| <= δ with ρ = δ / l < 1: φ = l / l_tgt - 1 has |φ| <= ρ / (1 - ρ)",
     R"smt((declare-const l Real) (declare-const lt Real) (declare-const dl Real) (declare-const rho Real)
(assert (and (>= l 1) (>= dl 0) (<= (ab (- lt l)) dl) (= (* rho l) dl) (< rho 1)))
(assert (> (ab (- (/ l lt) 1)) (/ rho (- 1 rho)))))smt"},
    {"perturbed.identity",
     "§8.1: with p' = P*(1 + φ)(1 + δ8) + η8, ds' - g* = P*·((1 + φ)(1 + θ4) - 1)(dP - D') + P*(D* - D') + η8(1 + θ3)(dP - D') + η9(1 + δ10) + η10 (a ring identity)",
     R"smt((declare-const P Real) (declare-const phi Real) (declare-const d7 Real) (declare-const d8 Real) (declare-const d9 Real) (declare-const d10 Real)
(declare-const h8 Real) (declare-const h9 Real) (declare-const h10 Real) (declare-const dp Real) (declare-const D Real) (declare-const Ds Real)
(define-fun T4 () Real (- (* (+ 1 phi) (+ 1 d8) (+ 1 d7) (+ 1 d9) (+ 1 d10)) 1))
(define-fun T3 () Real (- (* (+ 1 d7) (+ 1 d9) (+ 1 d10)) 1))
(define-fun ds () Real (+ (* (+ (* P (+ 1 phi) (+ 1 d8)) h8) (- dp D) (+ 1 d7) (+ 1 d9) (+ 1 d10)) (* h9 (+ 1 d10)) h10))
(assert (not (= (- ds (* P (- dp Ds))) (+ (* P T4 (- dp D)) (* P (- Ds D)) (* h8 (- dp D) (+ 1 T3)) (* h9 (+ 1 d10)) h10)))))smt"},
    {"perturbed.rescaled",
     "§8.1: |P*·((1 + φ)(1 + θ4) - 1)·(dP - D')| <= P*·(γ_4 + |φ|(1 + γ_4))·r'",
     R"smt((declare-const g4 Real) (declare-const P Real) (declare-const phi Real) (declare-const T4 Real) (declare-const X Real) (declare-const r Real)
(assert (and (>= P 0) (<= (ab T4) g4) (<= (ab X) r)))
(assert (> (ab (* P (- (* (+ 1 phi) (+ 1 T4)) 1) X)) (* P (+ g4 (* (ab phi) (+ 1 g4))) r))))smt"},
    {"perturbed.row-dot",
     "§8.1: |D* - D'| <= κ_D + κ_O + ε'_D, and one term of the target's row dot: |dO·O'| <= |dO·O| + |dO|·|O' - O|",
     R"smt((declare-const Ds Real) (declare-const Dx Real) (declare-const Dxt Real) (declare-const Dt Real) (declare-const K Real) (declare-const KO Real) (declare-const eD Real)
(declare-const g Real) (declare-const o Real) (declare-const ot Real)
(assert (and (<= (ab (- Dx Ds)) K) (<= (ab (- Dxt Dx)) KO) (<= (ab (- Dt Dxt)) eD)))
(assert (or (> (ab (- Ds Dt)) (+ K KO eD)) (> (ab (* g ot)) (+ (ab (* g o)) (* (ab g) (ab (- ot o))))))))smt"},
    {"perturbed.close",
     "§8.1: the five parts within Ef'_t = P*((γ_4 + |φ|(1 + γ_4))·r' + κ_D + κ_O + ε'_D) + (1 + γ_3)·ω·r' + (1 + u)·ω + ω",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g3 Real) (declare-const g4 Real) (declare-const f Real) (declare-const P Real) (declare-const r Real) (declare-const K Real) (declare-const KO Real) (declare-const eD Real)
(declare-const t1 Real) (declare-const t2 Real) (declare-const t3 Real) (declare-const t4 Real) (declare-const t5 Real)
(assert (and (<= (ab t1) (* P (+ g4 (* f (+ 1 g4))) r)) (<= (ab t2) (* P (+ K KO eD))) (<= (ab t3) (* (+ 1 g3) w r)) (<= (ab t4) (* (+ 1 u) w)) (<= (ab t5) w)))
(assert (> (ab (+ t1 t2 t3 t4 t5)) (+ (* P (+ (* (+ g4 (* f (+ 1 g4))) r) K KO eD)) (* (+ 1 g3) w r) (* (+ 1 u) w) w))))smt"},
    {"dv.two-roundings",
     "§8.1: a value rounded at q then at p (u_q <= u, ω_q <= ω) is x(1 + θ2) + η with |θ2| <= γ_2, |η| <= (2 + u)ω, given γ_2 >= 2u + u²",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g2 Real) (declare-const x Real) (declare-const d1 Real) (declare-const d2 Real) (declare-const h1 Real) (declare-const h2 Real)
(assert (and (> u 0) (> w 0) (<= (ab d1) u) (<= (ab d2) u) (<= (ab h1) w) (<= (ab h2) w) (>= g2 (+ (* 2 u) (* u u)))))
(assert (or (> (ab (- (* (+ 1 d1) (+ 1 d2)) 1)) g2) (> (ab (+ (* h1 (+ 1 d2)) h2)) (* (+ 2 u) w)))))smt"},
    {"dv.probs-identity",
     "§8.1: p = P*(1 + θ) + η, p' = P*(1 + φ)(1 + θ') + η': p' - p = P*(φ(1 + θ') + θ' - θ) + η' - η (a ring identity)",
     R"smt((declare-const P Real) (declare-const phi Real) (declare-const T Real) (declare-const Tt Real) (declare-const h Real) (declare-const ht Real)
(assert (not (= (- (+ (* P (+ 1 phi) (+ 1 Tt)) ht) (+ (* P (+ 1 T)) h)) (+ (* P (- (+ (* phi (+ 1 Tt)) Tt) T)) (- ht h))))))smt"},
    {"dv.probs-factor",
     "§8.1: |φ(1 + θ') + θ' - θ| <= |φ|(1 + γ_2) + 2γ_2 for |θ|, |θ'| <= γ_2",
     R"smt((declare-const g2 Real) (declare-const phi Real) (declare-const T Real) (declare-const Tt Real)
(assert (and (<= (ab T) g2) (<= (ab Tt) g2)))
(assert (> (ab (- (+ (* phi (+ 1 Tt)) Tt) T)) (+ (* (ab phi) (+ 1 g2)) (* 2 g2)))))smt"},
    {"dv.probs-close",
     "§8.1: |p' - p| <= Δ = P*(|φ|(1 + γ_2) + 2γ_2) + 2(2 + u)ω, given the identity and the factor's bound",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const P Real) (declare-const Z Real) (declare-const B Real) (declare-const h Real) (declare-const ht Real)
(assert (and (> u 0) (> w 0) (>= P 0) (<= (ab Z) B) (<= (ab h) (* (+ 2 u) w)) (<= (ab ht) (* (+ 2 u) w))))
(assert (> (ab (+ (* P Z) (- ht h))) (+ (* P B) (* 2 (+ 2 u) w)))))smt"},
    {"dv.probs-magnitude",
     "§8.1: |P*(1 + φ)(1 + θ') + η'| <= P*(1 + |φ|)(1 + γ_2) + (2 + u)ω (φ = 0: p's own), so |p| + |p'| <= π = P*(2 + |φ|)(1 + γ_2) + 2(2 + u)ω",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g2 Real) (declare-const P Real) (declare-const phi Real) (declare-const Tt Real) (declare-const ht Real)
(assert (and (> u 0) (> w 0) (>= P 0) (<= (ab Tt) g2) (<= (ab ht) (* (+ 2 u) w))))
(assert (> (ab (+ (* P (+ 1 phi) (+ 1 Tt)) ht)) (+ (* P (+ 1 (ab phi)) (+ 1 g2)) (* (+ 2 u) w)))))smt"},
    {"dv.term-identity",
     "§8.1: y = p·g(1 + θ) + η, y' = p'·g(1 + θ') + η': y' - y = (p' - p)·g + p'·g·θ' - p·g·θ + η' - η (a ring identity)",
     R"smt((declare-const p Real) (declare-const pt Real) (declare-const g Real) (declare-const T Real) (declare-const Tt Real) (declare-const h Real) (declare-const ht Real)
(assert (not (= (- (+ (* pt g (+ 1 Tt)) ht) (+ (* p g (+ 1 T)) h)) (+ (* (- pt p) g) (* pt g Tt) (- (* p g T)) (- ht h))))))smt"},
    {"dv.term-parts",
     "§8.1: |(p' - p)·g| <= |g|·Δ and |p'·g·θ' - p·g·θ| <= γ_2·|g|·π",
     R"smt((declare-const g2 Real) (declare-const p Real) (declare-const pt Real) (declare-const g Real) (declare-const Dl Real) (declare-const pi Real) (declare-const T Real) (declare-const Tt Real)
(assert (and (<= (ab T) g2) (<= (ab Tt) g2) (<= (ab (- pt p)) Dl) (<= (+ (ab p) (ab pt)) pi)))
(assert (or (> (ab (* (- pt p) g)) (* (ab g) Dl)) (> (ab (- (* pt g Tt) (* p g T))) (* g2 (ab g) pi)))))smt"},
    {"dv.term-magnitude",
     "§8.1: |p·g(1 + θ) + η| <= |p|·|g|(1 + γ_2) + (2 + u)ω",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g2 Real) (declare-const p Real) (declare-const g Real) (declare-const T Real) (declare-const h Real)
(assert (and (> u 0) (> w 0) (<= (ab T) g2) (<= (ab h) (* (+ 2 u) w))))
(assert (> (ab (+ (* p g (+ 1 T)) h)) (+ (* (ab p) (ab g) (+ 1 g2)) (* (+ 2 u) w)))))smt"},
    {"dv.term",
     "§8.1: |y' - y| <= |g|(Δ + γ_2·π) + 2(2 + u)ω and |y| + |y'| <= |g|·π(1 + γ_2) + 2(2 + u)ω, given the parts",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g2 Real) (declare-const p Real) (declare-const pt Real) (declare-const g Real) (declare-const Dl Real) (declare-const pi Real)
(declare-const t1 Real) (declare-const t2 Real) (declare-const h Real) (declare-const ht Real) (declare-const y Real) (declare-const yt Real)
(assert (and (> u 0) (> w 0) (>= g2 0) (<= (+ (ab p) (ab pt)) pi) (<= (ab t1) (* (ab g) Dl)) (<= (ab t2) (* g2 (ab g) pi))
             (<= (ab h) (* (+ 2 u) w)) (<= (ab ht) (* (+ 2 u) w))
             (<= (ab y) (+ (* (ab p) (ab g) (+ 1 g2)) (* (+ 2 u) w))) (<= (ab yt) (+ (* (ab pt) (ab g) (+ 1 g2)) (* (+ 2 u) w)))))
(assert (or (> (ab (+ t1 t2 (- ht h))) (+ (* (ab g) (+ Dl (* g2 pi))) (* 2 (+ 2 u) w)))
            (> (+ (ab y) (ab yt)) (+ (* (ab g) pi (+ 1 g2)) (* 2 (+ 2 u) w))))))smt"},
    {"dv.close",
     "§8.1: a term of the dV sum within |g|·a_t + 2(2 + u)ω(1 + γ_m), a_t = Δ + γ_2·π + γ_m·π(1 + γ_2): |y' - y| + γ_m(|y| + |y'|) given dv.term",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const g2 Real) (declare-const gm Real) (declare-const g Real) (declare-const Dl Real) (declare-const pi Real) (declare-const X Real) (declare-const Y Real)
(assert (and (> u 0) (> w 0) (>= g2 0) (>= gm 0) (>= Dl 0) (>= pi 0)))
(assert (<= X (+ (* (ab g) (+ Dl (* g2 pi))) (* 2 (+ 2 u) w))))
(assert (<= Y (+ (* (ab g) pi (+ 1 g2)) (* 2 (+ 2 u) w))))
(assert (> (+ X (* gm Y)) (+ (* (ab g) (+ Dl (* g2 pi) (* gm pi (+ 1 g2)))) (* 2 (+ 2 u) w (+ 1 gm))))))smt"},
};

}  // namespace

std::vector<InductionStep> prove_backward_assembly(const SmtLimits& limits, bool mutant) {
  std::vector<InductionStep> out;
  for (const detail::RealStep& st : kSteps) {
    std::string text = st.smt;
    for (std::size_t at; (at = text.find("GN")) != std::string::npos;) text.replace(at, 2, mutant ? "gn2" : "gn4");
    out.push_back(detail::run_real_step(st, text, limits));
  }
  return out;
}

}  // namespace fp::verify::smt
