// The fused backward's per-cell bound (verify/online_softmax/bounds/backward_bound.h, docs/bounds.md §8).

#include "verify/online_softmax/bounds/backward_bound.h"

#include <mpfr.h>

#include <cmath>
#include <limits>

#include "core/numerics.h"
#include "verify/bounds/mpfr_up.h"
#include "verify/bounds/rounding_model.h"
#include "verify/bounds/upward_double.h"

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

// Σ x_i·y_i exactly (at exact_bits(p)), into `out`.
void exact_dot(Up& out, const std::vector<double>& x, const std::vector<double>& y, int bits) {
  Up t(Up::Bits{bits});
  for (std::size_t i = 0; i < x.size(); ++i) {
    mpfr_set_d(t.raw(), x[i], MPFR_RNDN);
    mpfr_mul_d(t.raw(), t.raw(), y[i], MPFR_RNDN);  // exact: the precision holds the product
    mpfr_add(out.raw(), out.raw(), t.raw(), MPFR_RNDN);  // exact: the precision spans the sum
  }
}

bool all_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

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
  // (sizes as integers for the γ indices)
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
  const double phi = (rho / rho.one_minus_down()).to_double_up();
  out.phi = phi;
  // D_x = Σ_e dO_e·O_e exactly, κ_D = |D_x·l - Σ_t e_t·dP_t| / l (MPFR: the sums held exactly).
  const int bits = exact_bits(p);
  Up dx(Up::Bits{bits}), edp(Up::Bits{bits}), dxl(Up::Bits{2 * bits});
  exact_dot(dx, row.dout, row.o, bits);
  exact_dot(edp, row.e, row.dp, bits);
  mpfr_mul_d(dxl.raw(), dx.raw(), row.l, MPFR_RNDN);     // exact at twice the bits
  mpfr_sub(dxl.raw(), dxl.raw(), edp.raw(), MPFR_RNDN);  // exact: both operands fit the span
  mpfr_abs(dxl.raw(), dxl.raw(), MPFR_RNDN);
  Up kappa_up, abs_dx_up;
  mpfr_div_d(kappa_up.raw(), dxl.raw(), row.l, MPFR_RNDU);
  mpfr_abs(abs_dx_up.raw(), dx.raw(), MPFR_RNDU);
  const double kappa = kappa_up.to_double_up(), up_u = unit_roundoff(p);
  const double g2 = gamma_bound(2, up_u), g3 = gamma_bound(3, up_u), g4 = gamma_bound(4, up_u);
  const double gn4 = gamma_bound(N + 4, up_u), gn1 = gamma_bound(N - 1, up_u);
  const double gE = gamma_bound(EE, up_u), gE1 = gamma_bound(EE - 1, up_u);
  // Everything below adds and multiplies nonnegative values (and divides by l >= 1), each operation
  // rounded upward (UpDouble): each result is at or above the formula's value, as MPFR rounding up
  // would give.
  using D = UpDouble;
  const D u = up_u, w = underflow_error(p), kappa_o = row.o_err;
  // P*_t = e_t / l, Σ_A = Σ_t P*_t·A_t, N_A = Σ_t A_t, W = Σ_e |dO_e·O_e|.
  std::vector<D> pstar;
  pstar.reserve(n);
  D sigma_a = 0, n_a = 0, wsum = 0;
  for (std::size_t t = 0; t < n; ++t) {
    pstar.push_back(D(row.e[t]) / row.l);
    sigma_a += pstar[t] * std::fabs(row.dp[t]);
    n_a += std::fabs(row.dp[t]);
  }
  for (std::size_t e = 0; e < E; ++e) wsum += D(std::fabs(row.dout[e])) * std::fabs(row.o[e]);
  // The target's row dot reads O_tgt: |D'_x| <= |D_x| + κ_O, W' <= W + κ_O.
  const D abs_dx = D(abs_dx_up.to_double_up()) + kappa_o;
  wsum += kappa_o;
  // U = (1 + γ_{n-1})·ω·((1 + u)·N_A + n).
  const D U = (1 + D(gn1)) * w * ((1 + u) * n_a + static_cast<double>(N));
  // The row dot, and its one rounding to p where it is stored narrower than it is summed.
  const D eps_sum = D(gE) * wsum + (1 + D(gE1)) * static_cast<double>(EE) * w;
  const D eps_d = (1 + u) * eps_sum + u * abs_dx + w;
  const D abs_c = (1 + D(g2)) * (w + U) + w;
  out.composed.resize(n);
  out.fused.resize(n);
  out.magnitude.resize(n);
  for (std::size_t t = 0; t < n; ++t) {
    const D A = std::fabs(row.dp[t]), P = pstar[t];
    out.composed[t] = (P * (D(g3) * A + D(gn4) * sigma_a) + abs_c).value();
    const D r = A + abs_dx + eps_d;  // >= |dP_t - D| (abs_dx includes κ_O)
    // p's rounding (against l_tgt: the factor 1 + φ), the subtraction's, the product's and a final
    // rounding to p (ds carried wider); D' is off D* by κ_D + κ_O + ε'_D.
    out.fused[t] = (P * ((D(g4) + D(phi) * (1 + D(g4))) * r + kappa + kappa_o + eps_d) + (1 + D(g3)) * w * r +
                    (1 + u) * w + w)
                       .value();
    out.magnitude[t] = (P * (A + sigma_a)).value();
  }
  return out;
}

std::vector<double> backward_dv_coefficients(const BackwardPairBounds& row_bounds, const BackwardRow& row,
                                             std::int64_t terms, Prec p) {
  using D = UpDouble;
  const D g2 = gamma_bound(2, unit_roundoff(p)), gm = gamma_bound(terms, unit_roundoff(p));
  const D u = unit_roundoff(p), w = underflow_error(p), phi = row_bounds.phi;
  const D eta = 2 * (2 + u) * w;  // two p's (or two products') underflow terms of two roundings each
  std::vector<double> out;
  out.reserve(row.e.size());
  for (double e : row.e) {
    const D P = D(e) / row.l;
    const D delta = P * (phi * (1 + g2) + 2 * g2) + eta;
    const D pi = P * (2 + phi) * (1 + g2) + eta;
    out.push_back((delta + g2 * pi + gm * pi * (1 + g2)).value());
  }
  return out;
}

double backward_dv_tail(std::int64_t terms, Prec p) {
  using D = UpDouble;
  const D gm = gamma_bound(terms, unit_roundoff(p));
  const D u = unit_roundoff(p), w = underflow_error(p);
  return (D(static_cast<double>(terms)) * 2 * (2 + u) * w * (1 + gm) + 2 * (1 + u) * w).value();
}

double backward_pair_term(const BackwardPairBounds& pairs, std::size_t t, double scale, std::int64_t terms,
                          Prec p) {
  using D = UpDouble;
  const D gm = gamma_bound(terms, unit_roundoff(p));
  const D u = unit_roundoff(p), w = underflow_error(p), c = std::fabs(scale);
  const D both = D(pairs.composed[t]) + pairs.fused[t], g = pairs.magnitude[t];
  // |c|(Ec + Ef)(1 + u) + 2u|c|·G + 2ω + γ_m·(|c|(2G + Ec + Ef)(1 + u) + 2ω)
  return (c * both * (1 + u) + 2 * u * c * g + 2 * w + gm * (c * (2 * g + both) * (1 + u) + 2 * w)).value();
}

double backward_contraction_bound(const std::vector<double>& pair_terms, const std::vector<double>& operand,
                                  Prec p) {
  const auto m = static_cast<std::int64_t>(pair_terms.size());
  Up sum = up(0);
  for (std::size_t i = 0; i < pair_terms.size(); ++i) sum = sum + up_abs(operand[i]) * up(pair_terms[i]);
  return (sum + up(backward_contraction_tail(m, p))).to_double_up();
}

double backward_contraction_tail(std::int64_t terms, Prec p) {
  return (up(2.0 * static_cast<double>(terms)) * up(underflow_error(p)) *
          (up(1) + gamma_up(terms - 1, unit_roundoff(p))))
      .to_double_up();
}

}  // namespace fp::verify
