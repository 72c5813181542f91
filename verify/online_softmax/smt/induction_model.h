#pragma once
// The model shared by the induction queries of verify/online_softmax/smt/induction.cpp (the online scan) and
// verify/online_softmax/smt/fold_induction.cpp (the block fold): exact powers of two as rationals, one query in
// its own context, the computed exponential, the sum terms of a key and the composed sum's
// invariant (docs/bounds.md §5 "(a) induction").
#include <fmt/format.h>
#include <z3++.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "verify/online_softmax/smt/queries.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt::induction_model {

// Decimal digits of 2^k.
inline std::string pow2_digits(int k) {
  std::string digits = "1";
  for (int i = 0; i < k; ++i) {
    int carry = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
      const int d = (*it - '0') * 2 + carry;
      *it = static_cast<char>('0' + d % 10);
      carry = d / 10;
    }
    if (carry) digits.insert(digits.begin(), static_cast<char>('0' + carry));
  }
  return digits;
}

// 2^-k exactly (k up to a few thousand: 2^-1075 is below every double).
inline z3::expr pow2_exact(z3::context& c, int k) {
  return c.real_val(("1/" + pow2_digits(k)).c_str());
}

// 2^-a + 2^-b (a <= b) as one numeral: (2^(b-a) + 1) / 2^b.
inline z3::expr pow2_sum(z3::context& c, int a, int b) {
  if (a == b) return pow2_exact(c, a - 1);
  std::string num = pow2_digits(b - a);
  int i = static_cast<int>(num.size()) - 1;
  while (num[static_cast<std::size_t>(i)] == '9') num[static_cast<std::size_t>(i--)] = '0';
  num[static_cast<std::size_t>(i)] =
      static_cast<char>(num[static_cast<std::size_t>(i)] + 1);  // 2^j never ends in 9s
  return c.real_val((num + "/" + pow2_digits(b)).c_str());
}

// One query: the hypotheses and the negated goal in a fresh context.
class Query {
 public:
  explicit Query(const SmtLimits& limits) : s_(c_) { detail::apply_limits(c_, s_, limits); }
  z3::context& c() { return c_; }
  z3::expr var(const char* name) { return c_.real_const(name); }
  z3::expr num(double v) { return detail::real_of(c_, v); }
  z3::expr pow2(int k) { return pow2_exact(c_, k); }
  void assume(const z3::expr& e) { s_.add(e); }
  SmtOutcome refute(const z3::expr& goal, const SmtLimits& limits) {
    s_.add(!goal);
    return detail::run_check(s_, limits);
  }

 private:
  z3::context c_;
  z3::solver s_;
};

inline z3::expr max0(const z3::expr& v) {
  return z3::ite(v >= 0, v, v.ctx().real_val(0));
}

// The constants of one recurrence: unit roundoff, exp error, exp's and an operation's
// underflow terms.
struct Consts {
  z3::expr u, eps, om, om_op;
};


// γ_j(u) = j·u/(1 - j·u) as a variable, for j·u < 1.
inline z3::expr gamma_var(Query& Q, const char* name, const z3::expr& j, const z3::expr& u) {
  z3::expr g = Q.var(name);
  Q.assume(j * u < 1 && g * (1 - j * u) == j * u);
  return g;
}

// An exponential computed at precision c of an argument whose exact value bounds it in
// [lo, hi] (0 <= lo <= hi <= 1): never negative, within (1 ± ε) and the underflow term.
inline z3::expr computed_exp(Query& Q, const char* name, const z3::expr& lo, const z3::expr& hi, const Consts& c) {
  z3::expr e = Q.var(name);
  Q.assume(e >= 0 && e >= (1 - c.eps) * lo - c.om && e <= (1 + c.eps) * hi + c.om);
  return e;
}

// A new key's two sum terms: exp(-(1 - u)D) and exp(-(1 + u)D) for D >= 0 (or both 0 for a key
// at -inf): 0 <= gm <= gp <= 1.
inline std::pair<z3::expr, z3::expr> key_terms(Query& Q, const char* gp_name, const char* gm_name) {
  z3::expr gp = Q.var(gp_name), gm = Q.var(gm_name);
  Q.assume(0 <= gm && gm <= gp && gp <= 1);
  return {gp, gm};
}

// The composed sum's invariant after K >= 1 keys (G = γ_{K-1}(u); Vp, Vm the sums U, Λ at the
// maximum the exponentials are taken against):
//   0 <= Ŝ <= (1 + G)((1 + ε)Vp + K·ω),   G <= 1 ⇒ Ŝ >= (1 - G)((1 - ε)Vm - K·ω).
inline z3::expr composed_upper(const z3::expr& S, const z3::expr& G, const z3::expr& Vp, const z3::expr& K,
                               const Consts& c) {
  return S >= 0 && S <= (1 + G) * ((1 + c.eps) * Vp + K * c.om);
}
inline z3::expr composed_lower(const z3::expr& S, const z3::expr& G, const z3::expr& Vm, const z3::expr& K,
                               const Consts& c) {
  return z3::implies(G <= 1, S >= (1 - G) * ((1 - c.eps) * Vm - K * c.om));
}

// The underflow term at the storage precision, and the constants of each precision of `q`: the
// state's (a product may underflow by ω too) and the storage's (`products`: the same; else an
// operation's term is 0, the composed sum having no products).
inline z3::expr storage_underflow(Query& Q, const InductionQuery& q) {
  return pow2_sum(Q.c(), -q.omega_storage_log2, -q.omega_tail_log2);
}
inline Consts state_consts(Query& Q, const InductionQuery& q) {
  z3::expr om = pow2_sum(Q.c(), -q.omega_state_log2, -q.omega_tail_log2);
  return Consts{Q.pow2(q.state_bits), Q.num(q.eps_state), om, om};
}
inline Consts storage_consts(Query& Q, const InductionQuery& q, bool products) {
  z3::expr om = storage_underflow(Q, q);
  return Consts{Q.pow2(q.storage_bits), Q.num(q.eps_storage), om, products ? om : Q.c().real_val(0)};
}

// e's bounds as the queries take them, and α(u) = u / (e_low (1 - u)).
inline z3::expr e_low(Query& Q) { return Q.c().real_val("271828182/100000000"); }
inline z3::expr alpha_of(Query& Q, const z3::expr& u) { return u / (e_low(Q) * (1 - u)); }

// One key's exponentials for the argument-rounding lemma (docs/bounds.md §2), as positive reals
// related only by what exp satisfies: W = exp(-d), gp = exp(-(1 - u)d), gm = exp(-(1 + u)d),
// E = exp(-u·d) with W = gp·E, gm = W·E, 1 - u·d <= E, and e·y·exp(-y) <= 1 (e in [2.71828182,
// 2.71828183]); or all 0 for a key at -inf. `finite` tells which.
struct KeyExps {
  z3::expr d, W, gp, gm, finite;
};
inline KeyExps key_exps(Query& Q, const z3::expr& u) {
  z3::expr e = Q.var("e_const");
  Q.assume(e_low(Q) <= e && e <= Q.c().real_val("271828183/100000000"));
  z3::expr d = Q.var("d"), W = Q.var("W"), gp = Q.var("gp"), gm = Q.var("gm"), E = Q.var("E");
  z3::expr finite = d >= 0 && W > 0 && gp > 0 && gm > 0 && E > 0 && E <= 1 && W == gp * E && gm == W * E &&
                    E >= 1 - u * d && e * ((1 - u) * d) * gp <= 1 && e * d * W <= 1 &&
                    z3::implies(d == 0, E == 1 && W == 1);
  z3::expr at_minus_inf = W == 0 && gp == 0 && gm == 0;
  Q.assume(finite || at_minus_inf);
  return KeyExps{d, W, gp, gm, finite};
}

// Runs named queries into a list of steps: each in a fresh context, the statement and the
// parameters in the dumped file's comment.
class QueryRunner {
 public:
  QueryRunner(const SmtLimits& limits, std::string what) : limits_(limits), what_(std::move(what)) {}
  void run(const std::string& name, const std::string& statement, const std::function<z3::expr(Query&)>& build) {
    SmtLimits lim = limits_;
    if (!limits_.dump_path.empty()) lim.dump_path = fmt::format("{}-{}.smt2", limits_.dump_path, name);
    lim.comment = fmt::format("flashproof verify: {}, {}: {} (unsat = proved)", what_, name, statement);
    Query Q(lim);
    z3::expr goal = build(Q);
    steps_.push_back(InductionStep{name, statement, Q.refute(goal, lim)});
  }
  std::vector<InductionStep> take() { return std::move(steps_); }

 private:
  SmtLimits limits_;
  std::string what_;
  std::vector<InductionStep> steps_;
};

// The composed sum Ŝ_k = fl(Ŝ_{k-1} + ê_k), Ŝ_1 = ê_1 (0 + ê is exact): its invariant after the
// first key and from k to k + 1 keys for every real k >= 1 with k·u < 1, as queries
// PREFIX.base, PREFIX.step-upper, PREFIX.step-lower. `gshift` 2 is the DropGamma mutant.
void composed_sum_queries(QueryRunner& r, const std::string& prefix, const std::string& what,
                          const std::function<Consts(Query&)>& consts, int gshift);

}  // namespace fp::verify::smt::induction_model
