// The fused backward's per-cell bound (verify/bounds/backward_bound.h, docs/bounds.md §8).

#include "verify/bounds/backward_bound.h"

#include <mpfr.h>

#include <cmath>
#include <limits>

#include "core/numerics.h"
#include "verify/bounds/bound_formula.h"
#include "verify/bounds/mpfr_up.h"

namespace fp::verify {

namespace {

// The exact sums need enough bits to hold a sum of products of two values of the precision
// exactly (exponent span plus significands).
int exact_bits(Prec p) {
  return p == Prec::F64 ? 4400 : 800;
}

Up up(double x) {
  return Up(static_cast<long double>(x));
}
Up up_abs(double x) {
  return up(std::fabs(x));
}

// γ_k(u) = k·u / (1 - k·u), rounded up; +inf when k·u >= 1 (no bound).
Up gamma_up(std::int64_t k, double u) {
  if (k <= 0) return up(0);
  const Up ku = up(static_cast<double>(k)) * up(u);
  if (!ku.below_one()) return up(std::numeric_limits<double>::infinity());
  return ku / ku.one_minus_down();
}

// Σ x_i·y_i exactly (at exact_bits(p)), into `out`.
void exact_dot(Up& out, const std::vector<double>& x, const std::vector<double>& y, int bits) {
  Up t(Up::Bits{bits});
  for (std::size_t i = 0; i < x.size(); ++i) {
    mpfr_set_d(t.raw(), x[i], MPFR_RNDN);
    mpfr_mul_d(t.raw(), t.raw(), y[i], MPFR_RNDN);       // exact: the precision holds the product
    mpfr_add(out.raw(), out.raw(), t.raw(), MPFR_RNDN);  // exact: the precision spans the sum
  }
}

bool all_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

double gamma_bound(std::int64_t k, double u) {
  return gamma_up(k, u).to_double_up();
}

BackwardPairBounds backward_pair_bounds(const BackwardRow& row, Prec p) {
  BackwardPairBounds out;
  const std::size_t n = row.e.size(), E = row.o.size();
  // l >= 1 (the max's term exp(0) = 1 enters every forward form exactly) and l·l finite at p.
  if (!std::isfinite(row.l) || row.l < 1 || row.l * row.l > max_finite(p) || !all_finite(row.e) ||
      !all_finite(row.dp) || !all_finite(row.o) || !all_finite(row.dout)) {
    out.finite = false;
    return out;
  }
  for (double e : row.e)
    if (e > 1 || e < 0) {
      out.finite = false;
      return out;
    }
  const Up one = up(1), u = up(unit_roundoff(p)), w = up(underflow_error(p));
  const auto N = static_cast<std::int64_t>(n), EE = static_cast<std::int64_t>(E);
  // |φ| = |l / l_tgt - 1| <= ρ / (1 - ρ), ρ = l_err / l (a target l that may reach 0 has no bound).
  if (!(row.l_err >= 0) || !(row.o_err >= 0) || !std::isfinite(row.l_err) || !std::isfinite(row.o_err)) {
    out.finite = false;
    return out;
  }
  const Up rho = up(row.l_err) / up(row.l);
  if (!rho.below_one()) {
    out.finite = false;
    return out;
  }
  const Up phi = rho / rho.one_minus_down(), kappa_o = up(row.o_err);
  out.phi = phi.to_double_up();
  // P*_t = e_t / l, Σ_A = Σ_t P*_t·A_t, N_A = Σ_t A_t.
  std::vector<Up> pstar;
  Up sigma_a = up(0), n_a = up(0);
  for (std::size_t t = 0; t < n; ++t) {
    pstar.push_back(up(row.e[t]) / up(row.l));
    sigma_a = sigma_a + pstar.back() * up_abs(row.dp[t]);
    n_a = n_a + up_abs(row.dp[t]);
  }
  // D_x = Σ_e dO_e·O_e exactly, κ_D = |D_x·l - Σ_t e_t·dP_t| / l, W = Σ_e |dO_e·O_e|.
  const int bits = exact_bits(p);
  Up dx(Up::Bits{bits}), edp(Up::Bits{bits}), dxl(Up::Bits{2 * bits});
  exact_dot(dx, row.dout, row.o, bits);
  exact_dot(edp, row.e, row.dp, bits);
  mpfr_mul_d(dxl.raw(), dx.raw(), row.l, MPFR_RNDN);     // exact at twice the bits
  mpfr_sub(dxl.raw(), dxl.raw(), edp.raw(), MPFR_RNDN);  // exact: both operands fit the span
  mpfr_abs(dxl.raw(), dxl.raw(), MPFR_RNDN);
  Up kappa;
  mpfr_div_d(kappa.raw(), dxl.raw(), row.l, MPFR_RNDU);
  Up abs_dx;
  mpfr_abs(abs_dx.raw(), dx.raw(), MPFR_RNDU);
  Up wsum = up(0);
  for (std::size_t e = 0; e < E; ++e) wsum = wsum + up_abs(row.dout[e]) * up_abs(row.o[e]);
  // The target's row dot reads O_tgt: |D'_x| <= |D_x| + κ_O, W' <= W + κ_O.
  abs_dx = abs_dx + kappa_o;
  wsum = wsum + kappa_o;
  const Up g2 = gamma_up(2, unit_roundoff(p)), g3 = gamma_up(3, unit_roundoff(p)),
           g4 = gamma_up(4, unit_roundoff(p));
  const Up gn4 = gamma_up(N + 4, unit_roundoff(p)), gn1 = gamma_up(N - 1, unit_roundoff(p));
  const Up gE = gamma_up(EE, unit_roundoff(p)), gE1 = gamma_up(EE - 1, unit_roundoff(p));
  // U = (1 + γ_{n-1})·ω·((1 + u)·N_A + n).
  const Up U = (one + gn1) * w * ((one + u) * n_a + up(static_cast<double>(N)));
  // The row dot, and its one rounding to p where it is stored narrower than it is summed.
  const Up eps_sum = gE * wsum + (one + gE1) * up(static_cast<double>(EE)) * w;
  const Up eps_d = (one + u) * eps_sum + u * abs_dx + w;
  const Up abs_c = (one + g2) * (w + U) + w;
  out.composed.resize(n);
  out.fused.resize(n);
  out.magnitude.resize(n);
  for (std::size_t t = 0; t < n; ++t) {
    const Up A = up_abs(row.dp[t]);
    const Up& P = pstar[t];
    out.composed[t] = (P * (g3 * A + gn4 * sigma_a) + abs_c).to_double_up();
    const Up r = A + abs_dx + eps_d;  // >= |dP_t - D| (abs_dx includes κ_O)
    // p's rounding (against l_tgt: the factor 1 + φ), the subtraction's, the product's and a final
    // rounding to p (ds carried wider); D' is off D* by κ_D + κ_O + ε'_D.
    out.fused[t] =
        (P * ((g4 + phi * (one + g4)) * r + kappa + kappa_o + eps_d) + (one + g3) * w * r + (one + u) * w + w)
            .to_double_up();
    out.magnitude[t] = (P * (A + sigma_a)).to_double_up();
  }
  return out;
}

std::vector<double> backward_dv_coefficients(const BackwardPairBounds& row_bounds, const BackwardRow& row,
                                             std::int64_t terms, Prec p) {
  const Up one = up(1), two = up(2), u = up(unit_roundoff(p)), w = up(underflow_error(p));
  const Up g2 = gamma_up(2, unit_roundoff(p)), gm = gamma_up(terms, unit_roundoff(p)),
           phi = up(row_bounds.phi);
  const Up eta = two * (two + u) * w;  // two p's (or two products') underflow terms of two roundings each
  std::vector<double> out;
  out.reserve(row.e.size());
  for (double e : row.e) {
    const Up P = up(e) / up(row.l);
    const Up delta = P * (phi * (one + g2) + two * g2) + eta;
    const Up pi = P * (two + phi) * (one + g2) + eta;
    out.push_back((delta + g2 * pi + gm * pi * (one + g2)).to_double_up());
  }
  return out;
}

double backward_dv_tail(std::int64_t terms, Prec p) {
  const Up one = up(1), two = up(2), u = up(unit_roundoff(p)), w = up(underflow_error(p));
  return (up(static_cast<double>(terms)) * two * (two + u) * w * (one + gamma_up(terms, unit_roundoff(p))) +
          two * (one + u) * w)
      .to_double_up();
}

double backward_pair_term(const BackwardPairBounds& pairs, std::size_t t, double scale, std::int64_t terms,
                          Prec p) {
  const Up one = up(1), u = up(unit_roundoff(p)), w = up(underflow_error(p)), c = up_abs(scale);
  const Up gm = gamma_up(terms, unit_roundoff(p));
  const Up both = up(pairs.composed[t]) + up(pairs.fused[t]), g = up(pairs.magnitude[t]), two = up(2);
  // |c|(Ec + Ef)(1 + u) + 2u|c|·G + 2ω + γ_m·(|c|(2G + Ec + Ef)(1 + u) + 2ω)
  return (c * both * (one + u) + two * u * c * g + two * w +
          gm * (c * (two * g + both) * (one + u) + two * w))
      .to_double_up();
}

double backward_contraction_bound(const std::vector<double>& pair_terms, const std::vector<double>& operand,
                                  Prec p) {
  const auto m = static_cast<std::int64_t>(pair_terms.size());
  Up sum = up(0);
  for (std::size_t i = 0; i < pair_terms.size(); ++i) sum = sum + up_abs(operand[i]) * up(pair_terms[i]);
  const Up tail =
      up(2.0 * static_cast<double>(m)) * up(underflow_error(p)) * (up(1) + gamma_up(m - 1, unit_roundoff(p)));
  return (sum + tail).to_double_up();
}

}  // namespace fp::verify
