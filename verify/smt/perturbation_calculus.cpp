// The rules of summing perturbed products (docs/bounds.md §8, §8.1), checked step by step by Z3
// over the reals: one step of a left-to-right sum of perturbed terms (the induction behind every
// sum's bound, for every length), a scaled pair, a contraction's term, and a product with one
// perturbed factor (the carried bound of verify/accumulation_bound.h). Each step's hypotheses are
// the rounding model (|δ| <= u, |η| <= ω) and the γ calculus's rules (verify/smt/gamma_calculus.cpp)
// as facts about free variables; its query asserts them with the negated conclusion, so unsat
// proves the step for every value of every variable.
#include <z3++.h>

#include <string>

#include "verify/smt/smt.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt {

namespace {

// `TWO_W` stands for carried.close's two underflow terms; the mutant keeps one.
const detail::RealStep kSteps[] = {
    {"carried.identity",
     "a product with one perturbed factor (verify/accumulation_bound.h): y = a·b(1 + δ) + η, y' = a'·b(1 + δ') + η': y' - y = (a' - a)·b + a'·b·δ' - a·b·δ + η' - η (a ring identity)",
     R"smt((declare-const a Real) (declare-const at Real) (declare-const b Real) (declare-const d Real) (declare-const dt Real) (declare-const h Real) (declare-const ht Real)
(assert (not (= (- (+ (* at b (+ 1 dt)) ht) (+ (* a b (+ 1 d)) h)) (+ (* (- at a) b) (* at b dt) (- (* a b d)) (- ht h))))))smt"},
    {"carried.parts",
     "|(a' - a)·b| <= |b|·E, |a'·b·δ' - a·b·δ| <= u·|b|(2|a| + E) and |a·b(1 + δ) + η| <= |a|·|b|(1 + u) + ω, for |a' - a| <= E",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const a Real) (declare-const at Real) (declare-const b Real) (declare-const E Real) (declare-const d Real) (declare-const dt Real) (declare-const h Real)
(assert (and (> u 0) (> w 0) (<= (ab d) u) (<= (ab dt) u) (<= (ab h) w) (<= (ab (- at a)) E)))
(assert (or (> (ab (* (- at a) b)) (* (ab b) E))
            (> (ab (- (* at b dt) (* a b d))) (* u (ab b) (+ (* 2 (ab a)) E)))
            (> (ab (+ (* a b (+ 1 d)) h)) (+ (* (ab a) (ab b) (+ 1 u)) w)))))smt"},
    {"carried.monotone",
     "|a'| <= |a| + E gives |a'|·|b|(1 + u) + ω <= (|a| + E)·|b|(1 + u) + ω (the perturbed product's magnitude)",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const a Real) (declare-const at Real) (declare-const b Real) (declare-const E Real)
(assert (and (> u 0) (> w 0) (<= (ab (- at a)) E)))
(assert (> (+ (* (ab at) (ab b) (+ 1 u)) w) (+ (* (+ (ab a) E) (ab b) (+ 1 u)) w))))smt"},
    {"carried.close",
     "|y' - y| <= |b|·E + u|b|(2|a| + E) + 2ω and |y| + |y'| <= |b|(2|a| + E)(1 + u) + 2ω, given the parts",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const A Real) (declare-const B Real) (declare-const E Real)
(declare-const t1 Real) (declare-const t2 Real) (declare-const h Real) (declare-const ht Real) (declare-const y Real) (declare-const yt Real)
(assert (and (> u 0) (> w 0) (>= E 0) (>= A 0) (>= B 0) (<= (ab t1) (* B E)) (<= (ab t2) (* u B (+ (* 2 A) E)))
             (<= (ab h) w) (<= (ab ht) w) (<= (ab y) (+ (* A B (+ 1 u)) w)) (<= (ab yt) (+ (* (+ A E) B (+ 1 u)) w))))
(assert (or (> (ab (+ t1 t2 (- ht h))) (+ (* B E) (* u B (+ (* 2 A) E)) TWO_W))
            (> (+ (ab y) (ab yt)) (+ (* B (+ (* 2 A) E) (+ 1 u)) (* 2 w))))))smt"},
    {"sum.identity",
     "one step of a left-to-right sum of perturbed terms: S' - S*' = E(1 + δ) + y*ρ(1 + δ) + a(1 + δ) + δ(S* + y*) (a ring identity)",
     R"smt((declare-const E Real) (declare-const Ss Real) (declare-const ys Real) (declare-const rho Real) (declare-const a Real) (declare-const d Real)
(assert (not (= (- (* (+ Ss E (* ys (+ 1 rho)) a) (+ 1 d)) (+ Ss ys)) (+ (* E (+ 1 d)) (* ys rho (+ 1 d)) (* a (+ 1 d)) (* d (+ Ss ys)))))))smt"},
    {"sum.terms",
     "each part of the step within its bound, given |E| <= γ_{k-1+j}·A + (1 + γ_{k-1})·B and |S*| <= A",
     R"smt((declare-const u Real) (declare-const gA Real) (declare-const gB Real) (declare-const gj Real)
(declare-const E Real) (declare-const Ss Real) (declare-const A Real) (declare-const B Real) (declare-const ys Real) (declare-const rho Real) (declare-const a Real) (declare-const al Real) (declare-const d Real)
(assert (and (> u 0) (<= (ab d) u) (<= (ab E) (+ (* gA A) (* (+ 1 gB) B))) (<= (ab Ss) A) (<= (ab rho) gj) (<= (ab a) al)))
(assert (or (> (ab (* E (+ 1 d))) (* (+ 1 u) (+ (* gA A) (* (+ 1 gB) B))))
            (> (ab (* ys rho (+ 1 d))) (* (+ 1 u) gj (ab ys)))
            (> (ab (* a (+ 1 d))) (* (+ 1 u) al))
            (> (ab (* d (+ Ss ys))) (* u (+ A (ab ys)))))))smt"},
    {"sum.triangle",
     "the step's parts add within the sum of their bounds",
     R"smt((declare-const t1 Real) (declare-const t2 Real) (declare-const t3 Real) (declare-const t4 Real)
(declare-const b1 Real) (declare-const b2 Real) (declare-const b3 Real) (declare-const b4 Real)
(assert (and (<= (ab t1) b1) (<= (ab t2) b2) (<= (ab t3) b3) (<= (ab t4) b4)))
(assert (> (ab (+ t1 t2 t3 t4)) (+ b1 b2 b3 b4))))smt"},
    {"sum.close",
     "the step keeps the invariant: |S' - S*'| <= γ_{k+j}·A' + (1 + γ_k)·B', given the γ calculus's coefficient rules",
     R"smt((declare-const u Real) (declare-const gA Real) (declare-const gB Real) (declare-const gj Real) (declare-const gC Real) (declare-const gD Real)
(declare-const A Real) (declare-const B Real) (declare-const Y Real) (declare-const al Real)
(assert (and (> u 0) (>= gA 0) (>= gB 0) (>= gj 0) (>= A 0) (>= B 0) (>= Y 0) (>= al 0)))
(assert (<= (+ (* gA (+ 1 u)) u) gC))
(assert (<= (+ gj (* u (+ 1 gj))) gC))
(assert (<= (* (+ 1 gB) (+ 1 u)) (+ 1 gD)))
(assert (<= u gD))
(assert (> (+ (* (+ 1 u) (+ (* gA A) (* (+ 1 gB) B))) (* (+ 1 u) gj Y) (* (+ 1 u) al) (* u (+ A Y)))
           (+ (* gC (+ A Y)) (* (+ 1 gD) (+ B al))))))smt"},
    {"scale.link",
     "|fl(c·y) - fl(c·z)| <= |c|·|y - z| + u|c|(|y| + |z|) + 2ω",
     R"smt((declare-const u Real) (declare-const w Real) (declare-const c Real) (declare-const y Real) (declare-const z Real) (declare-const d1 Real) (declare-const d2 Real) (declare-const h1 Real) (declare-const h2 Real)
(assert (and (> u 0) (> w 0) (<= (ab d1) u) (<= (ab d2) u) (<= (ab h1) w) (<= (ab h2) w)))
(assert (> (ab (- (+ (* c y (+ 1 d1)) h1) (+ (* c z (+ 1 d2)) h2))) (+ (* (ab c) (ab (- y z))) (* u (ab c) (+ (ab y) (ab z))) (* 2 w)))))smt"},
    {"contraction.term",
     "|gs_f·x(1 + θ_f) - gs_c·x(1 + θ_c)| <= |x|(|gs_f - gs_c| + γ_m(|gs_f| + |gs_c|))",
     R"smt((declare-const gm Real) (declare-const x Real) (declare-const gf Real) (declare-const gc Real) (declare-const tf Real) (declare-const tc Real)
(assert (and (<= (ab tf) gm) (<= (ab tc) gm)))
(assert (> (ab (- (* gf x (+ 1 tf)) (* gc x (+ 1 tc)))) (* (ab x) (+ (ab (- gf gc)) (* gm (+ (ab gf) (ab gc))))))))smt"},
};

}  // namespace

std::vector<InductionStep> prove_perturbation_calculus(const SmtLimits& limits, bool mutant) {
  std::vector<InductionStep> out;
  for (const detail::RealStep& st : kSteps) {
    std::string text = st.smt;
    for (std::size_t at; (at = text.find("TWO_W")) != std::string::npos;) text.replace(at, 5, mutant ? "w" : "(* 2 w)");
    out.push_back(detail::run_real_step(st, text, limits));
  }
  return out;
}

}  // namespace fp::verify::smt
