// The γ calculus rounding bounds are assembled with (docs/bounds.md §8), proved over the
// reals for every size: each query asserts the hypotheses and the negated conclusion, so unsat
// proves the rule for every unit roundoff 0 < u <= 2^-8 and every size with size·u < 1 (where γ is
// defined).
// γ_k = k·u / (1 - k·u) enters as a variable g with g·(1 - k·u) = k·u.
#include <z3++.h>

#include <functional>

#include "verify/smt/smt.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt {

namespace {

struct Reals {
  z3::context c;
  z3::expr u = c.real_const("u");
  z3::expr one = c.real_val(1);
  std::vector<z3::expr> facts;
  int count = 0;

  Reals() { facts.push_back(u > 0 && u <= c.real_val(1, 256)); }
  z3::expr var(const char* name) { return c.real_const(name); }
  // A size k >= lo with k·u < 1.
  z3::expr size(const char* name, int lo) {
    z3::expr k = c.real_const(name);
    facts.push_back(k >= lo && k * u < one);
    return k;
  }
  // γ_k.
  z3::expr gamma(const z3::expr& k) {
    z3::expr g = c.real_const(("g" + std::to_string(++count)).c_str());
    facts.push_back(g * (1 - k * u) == k * u);
    return g;
  }
  // |d| <= u.
  z3::expr rounding(const char* name) {
    z3::expr d = c.real_const(name);
    facts.push_back(-u <= d && d <= u);
    return d;
  }
  static z3::expr abs_le(const z3::expr& x, const z3::expr& b) { return -b <= x && x <= b; }
};

InductionStep query(const std::string& name, const std::string& statement, const SmtLimits& limits, bool mutant,
                    const std::function<z3::expr(Reals&, bool)>& negation) {
  Reals r;
  z3::solver s(r.c);
  detail::apply_limits(r.c, s, limits);
  const z3::expr neg = negation(r, mutant);
  for (const auto& f : r.facts) s.add(f);
  s.add(neg);
  return detail::run_step(s, name, statement, limits);
}

}  // namespace

std::vector<InductionStep> prove_gamma_calculus(const SmtLimits& limits, bool mutant) {
  std::vector<InductionStep> out;
  out.push_back(query("gamma.product", "γ_j + γ_k + γ_j·γ_k <= γ_{j+k}: (1 + θ_j)(1 + θ_k) = 1 + θ_{j+k}", limits,
                      mutant, [](Reals& r, bool m) {
                        z3::expr j = r.size("j", 0), k = r.size("k", 0);
                        r.facts.push_back((j + k) * r.u < r.one);
                        z3::expr gj = r.gamma(j), gk = r.gamma(k), gjk = r.gamma(m ? j + k - 1 : j + k);
                        return gj + gk + gj * gk > gjk;
                      }));
  out.push_back(query("gamma.monotone", "γ_j <= γ_k for j <= k", limits, false, [](Reals& r, bool) {
    z3::expr j = r.size("j", 0), k = r.size("k", 0);
    r.facts.push_back(j <= k);
    return r.gamma(j) > r.gamma(k);
  }));
  out.push_back(query("theta.round", "|θ_j| <= γ_j, |δ| <= u => |(1 + θ_j)(1 + δ) - 1| <= γ_{j+1}", limits, false,
                      [](Reals& r, bool) {
                        z3::expr j = r.size("j", 0);
                        r.facts.push_back((j + 1) * r.u < r.one);
                        z3::expr gj = r.gamma(j), g1 = r.gamma(j + 1), th = r.var("th"), d = r.rounding("d");
                        r.facts.push_back(Reals::abs_le(th, gj));
                        return !Reals::abs_le((1 + th) * (1 + d) - 1, g1);
                      }));
  out.push_back(query("theta.divide", "|θ_j| <= γ_j, |δ| <= u => |(1 + θ_j)/(1 + δ) - 1| <= γ_{j+1}", limits, false,
                      [](Reals& r, bool) {
                        z3::expr j = r.size("j", 0);
                        r.facts.push_back((j + 1) * r.u < r.one);
                        z3::expr gj = r.gamma(j), g1 = r.gamma(j + 1), th = r.var("th"), d = r.rounding("d"),
                                 q = r.var("q");
                        r.facts.push_back(Reals::abs_le(th, gj) && q * (1 + d) == 1 + th);
                        return !Reals::abs_le(q - 1, g1);
                      }));
  out.push_back(query("sum.term", "u + γ_{k-1}(1 + u) <= γ_k: a sum's term gains γ_k over k roundings", limits, false,
                      [](Reals& r, bool) {
                        z3::expr k = r.size("k", 1);
                        return r.u + r.gamma(k - 1) * (1 + r.u) > r.gamma(k);
                      }));
  out.push_back(query("composed.gradient", "γ_2 + u(1 + γ_2) <= γ_3 and γ_2 + (1 + γ_2)·γ_{n+2} <= γ_{n+4} (Ec_t)",
                      limits, mutant, [](Reals& r, bool m) {
                        z3::expr n = r.size("n", 1);
                        r.facts.push_back((n + 4) * r.u < r.one);
                        z3::expr g2 = r.gamma(r.c.real_val(2)), g3 = r.gamma(r.c.real_val(3)),
                                 gn2 = r.gamma(n + 2), gn4 = r.gamma(m ? n + 3 : n + 4);
                        return g2 + r.u * (1 + g2) > g3 || g2 + (1 + g2) * gn2 > gn4;
                      }));
  out.push_back(query("contraction.term", "|θ_{m-1}| <= γ_{m-1}, |δ| <= u => |(1 + δ)(1 + θ_{m-1}) - 1| <= γ_m (T_t)",
                      limits, false, [](Reals& r, bool) {
                        z3::expr m = r.size("m", 1);
                        z3::expr gm1 = r.gamma(m - 1), gm = r.gamma(m), th = r.var("th"), d = r.rounding("d");
                        r.facts.push_back(Reals::abs_le(th, gm1));
                        return !Reals::abs_le((1 + d) * (1 + th) - 1, gm);
                      }));
  if (mutant) {
    // The run that checks the queries can fail: a statement true at small sizes only must come out
    // sat (the size variables range over every size, not their least value).
    out.push_back(query("gamma.sizes-range", "γ_k <= 2·k·u for every size (false once k·u > 1/2)", limits, false,
                        [](Reals& r, bool) {
                          z3::expr k = r.size("k", 1);
                          return r.gamma(k) > 2 * k * r.u;
                        }));
  }
  return out;
}

}  // namespace fp::verify::smt
