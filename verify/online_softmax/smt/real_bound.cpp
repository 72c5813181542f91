// The rounding-bound certificate over the reals (docs/bounds.md, "Z3 over the reals").
//
// Variables, for one row of n keys whose running maximum rises at the steps `pattern` marks:
//   d_j = M - x_j >= 0            distance of key j below the row maximum (d = 0 at the maximum)
//   W_j = exp(-d_j)               the exact exponential of key j's shifted score
// and, for every exponential either side computes, the exact value of exp at the rounded
// argument: exp(y(1 + a)) = exp(y)·P with |a| <= u (the subtraction's rounding) and P = exp(-a·d)
// constrained only by what exp satisfies:
//   exp(s)·exp(-s) = 1,  exp(s) >= 1 + s,  e·d·exp(-d) <= 1  (1 + s <= exp(s) at s = d - 1, times
//   exp(1) = e, e in [2.71828182, 2.71828183]),  exp(a - b) = exp(a)/exp(b)  (the scan's
//   exponentials of differences of running maxima are quotients of the W's),
// and, for every term the scan rescales more than once, the same facts at the sum of its
// exponent perturbations (exp(a)·exp(b) = exp(a + b)). Then the computed exponential is that
// value times (1 + h), |h| <= ε_p, exp.p's relative error (docs/bounds.md §6: fp_exp64's at f64,
// fp_exp32's at f32, fp_exp32's then the rounding to the format at f16/bf16), every add and
// multiply rounds by (1 + δ),
// |δ| <= u, and an operation whose result is exact in floating point (exp(0) = 1, a product by
// 1) is exact here too. Underflow is not modelled (there is none in the reals); the bound's
// underflow terms are checked against MPFR instead.
#include <fmt/format.h>
#include <z3++.h>

#include <cmath>

#include "core/diagnostic.h"
#include "verify/online_softmax/smt/queries.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt {

namespace {

class RealModel {
 public:
  RealModel(z3::context& c, z3::solver& s) : c_(c), s_(s), e1_(c.real_const("e")) {
    s_.add(c_.real_val("271828182/100000000") <= e1_ && e1_ <= c_.real_val("271828183/100000000"));
  }

  z3::expr fresh(const char* prefix) { return c_.real_const(fmt::format("{}{}", prefix, ++count_).c_str()); }

  z3::expr bounded(const char* prefix, const z3::expr& u) {
    z3::expr v = fresh(prefix);
    s_.add(-u <= v && v <= u);
    return v;
  }

  // The facts every exact exponential w = exp(-d), d >= 0, satisfies.
  void exp_facts(const z3::expr& w, const z3::expr& d) {
    s_.add(w > 0 && w <= 1 && w >= 1 - d && e1_ * d * w <= 1);
    s_.add(z3::implies(d == 0, w == 1));
  }

  // P = exp(s) for a small s.
  z3::expr exp_of_small(const z3::expr& s) {
    z3::expr p = fresh("P"), pb = fresh("Pb");
    s_.add(p > 0 && pb > 0 && p * pb == 1 && p >= 1 + s && pb >= 1 - s);
    return p;
  }

  struct Perturbed {
    z3::expr value;  // exp(-d(1 + a))
    z3::expr s;      // its exponent perturbation -a·d
    z3::expr p;      // exp(s)
  };
  // exp of the rounded argument -d(1 + a), from w = exp(-d).
  Perturbed perturb(const z3::expr& w, const z3::expr& d, const z3::expr& u) {
    z3::expr a = bounded("a", u);
    z3::expr s = -(a * d);
    z3::expr p = exp_of_small(s);
    z3::expr ep = fresh("Ep");
    s_.add(ep == w * p);
    s_.add(e1_ * (d * (1 + a)) * ep <= 1);
    return {ep, s, p};
  }

  z3::expr round_exp(const z3::expr& ep, const z3::expr& eps) {
    z3::expr h = bounded("h", eps);
    z3::expr v = fresh("ev");
    s_.add(v == ep * (1 + h));
    return v;
  }

  z3::expr round(const z3::expr& x, const z3::expr& u, bool exact = false) {
    if (exact) return x;
    z3::expr d = bounded("r", u);
    z3::expr v = fresh("v");
    s_.add(v == x * (1 + d));
    return v;
  }

  const z3::expr& e() const { return e1_; }

 private:
  z3::context& c_;
  z3::solver& s_;
  z3::expr e1_;
  int count_ = 0;
};

}  // namespace

SmtOutcome check_real_bound(const RealBoundQuery& q, const SmtLimits& limits) {
  FP_INTERNAL_CHECK(q.n >= 1 && static_cast<int>(q.pattern.size()) == q.n - 1, "bad pattern '{}' for n = {}",
                    q.pattern, q.n);
  z3::context c;
  z3::solver s(c);
  detail::apply_limits(c, s, limits);
  RealModel m(c, s);
  auto pow2 = [&](int k) { return detail::real_of(c, std::ldexp(1.0, -k)); };
  const z3::expr up = pow2(q.storage_bits), uq = pow2(q.state_bits);
  const z3::expr ep = detail::real_of(c, q.storage_exp_eps), eq = detail::real_of(c, q.state_exp_eps);

  const int n = q.n;
  std::vector<int> rec{0};
  for (int t = 1; t < n; ++t)
    rec.push_back(q.pattern[static_cast<std::size_t>(t - 1)] == '1' ? t : rec.back());
  const int mpos = rec.back();
  std::vector<z3::expr> d, w;
  for (int j = 0; j < n; ++j) {
    d.push_back(c.real_const(fmt::format("d{}", j).c_str()));
    w.push_back(c.real_const(fmt::format("W{}", j).c_str()));
    s.add(d[j] >= 0);
    m.exp_facts(w[j], d[j]);
  }
  s.add(d[mpos] == 0);
  for (int t = 1; t < n; ++t) {
    // A new maximum is strictly above the running one; otherwise at most equal.
    if (rec[t] == t)
      s.add(d[t] < d[rec[t - 1]]);
    else
      s.add(d[t] >= d[rec[t - 1]]);
  }

  // Composed: e_j = exp.p(x_j - M) (exactly 1 at the maximum), summed left to right at p.
  z3::expr acc = c.real_val(0);
  for (int j = 0; j < n; ++j) {
    z3::expr e = j == mpos ? c.real_val(1) : m.round_exp(m.perturb(w[j], d[j], up).value, ep);
    acc = j == 0 ? e : m.round(acc + e, up);
  }
  z3::expr lsrc = c.real_const("l_src");
  s.add(lsrc == acc);

  // Scan at q: term_t = exp(x_t - F_t), rescale_t = exp(F_{t-1} - F_t), F the running maximum.
  std::vector<std::vector<std::pair<z3::expr, z3::expr>>> perts(static_cast<std::size_t>(n));
  z3::expr L = c.real_val(0);
  for (int t = 0; t < n; ++t) {
    const int f = rec[t];
    z3::expr term = c.real_val(1);
    if (t != f) {
      z3::expr et = m.fresh("Et");
      z3::expr dist = d[t] - d[f];
      s.add(et * w[f] == w[t]);
      m.exp_facts(et, dist);
      auto pt = m.perturb(et, dist, uq);
      perts[t].emplace_back(pt.s, pt.p);
      term = m.round_exp(pt.value, eq);
    }
    if (t == 0) {
      L = term;
      continue;
    }
    z3::expr prod = L;
    if (rec[t] != rec[t - 1]) {
      z3::expr rt = m.fresh("Rt");
      z3::expr dist = d[rec[t - 1]] - d[rec[t]];
      s.add(rt * w[rec[t]] == w[rec[t - 1]]);
      m.exp_facts(rt, dist);
      auto pr = m.perturb(rt, dist, uq);
      for (int j = 0; j < t; ++j) perts[j].emplace_back(pr.s, pr.p);
      prod = m.round(L * m.round_exp(pr.value, eq), uq);
    }
    L = m.round(prod + term, uq);
  }
  // exp(a)·exp(b) = exp(a + b) for every term rescaled more than once, with the facts at the sum.
  for (int j = 0; j < n; ++j) {
    const auto& ps = perts[j];
    if (ps.size() < 2) continue;
    z3::expr sum = ps[0].first, prod = ps[0].second;
    for (std::size_t k = 1; k < ps.size(); ++k) {
      sum = sum + ps[k].first;
      prod = prod * ps[k].second;
    }
    z3::expr qv = m.exp_of_small(sum);
    s.add(qv == prod);
    s.add(m.e() * (d[j] - sum) * (w[j] * qv) <= 1);
  }
  z3::expr ltgt = c.real_const("l_tgt");
  s.add(ltgt == m.round(L, up, q.storage_bits == q.state_bits));
  z3::expr diff = z3::ite(ltgt >= lsrc, ltgt - lsrc, lsrc - ltgt);
  s.add(diff > detail::real_of(c, q.rel) * lsrc);
  SmtLimits lim = limits;
  lim.comment = fmt::format(
      "flashproof verify: rounding bound over the reals, n = {}, maxima pattern '{}', u_storage = 2^-{}, "
      "u_state = "
      "2^-{}, exp error {:.17g} / {:.17g}, rel = {:.17g} (unsat = no assignment exceeds the bound)",
      q.n, q.pattern, q.storage_bits, q.state_bits, q.storage_exp_eps, q.state_exp_eps, q.rel);
  return detail::run_check(s, lim);
}

}  // namespace fp::verify::smt
