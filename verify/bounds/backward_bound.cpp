// The fused backward's per-cell bound (verify/bounds/backward_bound.h, docs/bounds.md §8).

#include "verify/bounds/backward_bound.h"

#include <mpfr.h>

#include <cmath>
#include <limits>

#include "core/numerics.h"
#include "verify/bounds/bound_formula.h"

namespace fp::verify {

namespace {

// Every bound quantity is a nonnegative real rounded up; the exact sums need enough bits to hold a
// sum of products of two values of the precision exactly (exponent span plus significands).
constexpr int kBoundBits = 256;
int exact_bits(Prec p) {
  return p == Prec::F64 ? 4400 : 800;
}

class Real {
 public:
  explicit Real(int bits = kBoundBits) {
    mpfr_init2(v_, bits);
    mpfr_set_zero(v_, 1);
  }
  Real(double x, int bits) : Real(bits) { mpfr_set_d(v_, x, MPFR_RNDU); }
  Real(const Real&) = delete;
  Real& operator=(const Real&) = delete;
  ~Real() { mpfr_clear(v_); }
  mpfr_ptr get() { return v_; }
  mpfr_srcptr get() const { return v_; }
  double up() const { return mpfr_get_d(v_, MPFR_RNDU); }

 private:
  mpfr_t v_;
};

// out = a·b + out, rounded up (a, b, out >= 0).
void add_product_up(Real& out, double a, double b) {
  Real t;
  mpfr_set_d(t.get(), a, MPFR_RNDU);
  mpfr_mul_d(t.get(), t.get(), b, MPFR_RNDU);
  mpfr_add(out.get(), out.get(), t.get(), MPFR_RNDU);
}

// γ_k(u) = k·u / (1 - k·u), rounded up; +inf when k·u >= 1 (no bound).
double gamma(std::int64_t k, double u) {
  if (k <= 0) return 0;
  Real ku, den;
  mpfr_set_d(ku.get(), u, MPFR_RNDU);
  mpfr_mul_si(ku.get(), ku.get(), static_cast<long>(k), MPFR_RNDU);
  mpfr_set_d(den.get(), u, MPFR_RNDU);
  mpfr_mul_si(den.get(), den.get(), static_cast<long>(k), MPFR_RNDU);
  mpfr_si_sub(den.get(), 1, den.get(), MPFR_RNDD);
  if (mpfr_sgn(den.get()) <= 0) return std::numeric_limits<double>::infinity();
  mpfr_div(ku.get(), ku.get(), den.get(), MPFR_RNDU);
  return ku.up();
}

// Σ x_i·y_i exactly (at exact_bits(p)), into `out`.
void exact_dot(Real& out, const std::vector<double>& x, const std::vector<double>& y) {
  mpfr_set_zero(out.get(), 1);
  Real t(mpfr_get_prec(out.get()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    mpfr_set_d(t.get(), x[i], MPFR_RNDN);
    mpfr_mul_d(t.get(), t.get(), y[i], MPFR_RNDN);  // exact: the precision holds the product
    mpfr_add(out.get(), out.get(), t.get(), MPFR_RNDN);  // exact: the precision spans the sum
  }
}

bool all_finite(const std::vector<double>& v) {
  for (double x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

// Up-rounded double arithmetic on nonnegative finite values: each result of the IEEE operation
// rounded to nearest is at most one ulp below the exact value, so stepping up once covers it.
double up(double x) {
  return std::nextafter(x, std::numeric_limits<double>::infinity());
}
double add_up(double a, double b) {
  return up(a + b);
}
double mul_up(double a, double b) {
  return up(a * b);
}

}  // namespace

BackwardPairBounds backward_pair_bounds(const BackwardRow& row, Prec p) {
  BackwardPairBounds out;
  const std::size_t n = row.e.size(), E = row.o.size();
  // l >= 1 (the max's term exp(0) = 1 enters every forward form exactly) and l·l finite at p.
  if (!std::isfinite(row.l) || row.l < 1 || row.l * row.l > max_finite(p) || !all_finite(row.e) || !all_finite(row.dp) || !all_finite(row.o) ||
      !all_finite(row.dout)) {
    out.finite = false;
    return out;
  }
  for (double e : row.e)
    if (e > 1 || e < 0) {
      out.finite = false;
      return out;
    }
  const double u = unit_roundoff(p), w = underflow_error(p);
  const auto N = static_cast<std::int64_t>(n), EE = static_cast<std::int64_t>(E);
  // P*_t = e_t / l rounded up; Σ_A, N_A.
  std::vector<double> pstar(n);
  Real sigma_a, n_a;
  for (std::size_t t = 0; t < n; ++t) {
    Real q(row.e[t], kBoundBits);
    mpfr_div_d(q.get(), q.get(), row.l, MPFR_RNDU);
    pstar[t] = q.up();
    mpfr_mul_d(q.get(), q.get(), std::fabs(row.dp[t]), MPFR_RNDU);
    mpfr_add(sigma_a.get(), sigma_a.get(), q.get(), MPFR_RNDU);
    Real a(std::fabs(row.dp[t]), kBoundBits);
    mpfr_add(n_a.get(), n_a.get(), a.get(), MPFR_RNDU);
  }
  // D_x = Σ_e dO_e·O_e exactly, κ_D = |D_x·l - Σ_t e_t·dP_t| / l, W = Σ_e |dO_e·O_e|.
  const int bits = exact_bits(p);
  Real dx(bits), edp(bits), dxl(2 * bits);
  exact_dot(dx, row.dout, row.o);
  exact_dot(edp, row.e, row.dp);
  mpfr_mul_d(dxl.get(), dx.get(), row.l, MPFR_RNDN);  // exact at twice the bits
  mpfr_sub(dxl.get(), dxl.get(), edp.get(), MPFR_RNDN);  // exact: both operands fit the span
  mpfr_abs(dxl.get(), dxl.get(), MPFR_RNDN);
  Real kappa;
  mpfr_div_d(kappa.get(), dxl.get(), row.l, MPFR_RNDU);
  Real abs_dx;
  mpfr_abs(abs_dx.get(), dx.get(), MPFR_RNDU);
  Real wsum;
  for (std::size_t e = 0; e < E; ++e) add_product_up(wsum, std::fabs(row.dout[e]), std::fabs(row.o[e]));
  const double g2 = gamma(2, u), g3 = gamma(3, u), g4 = gamma(4, u), gn4 = gamma(N + 4, u), gn1 = gamma(N - 1, u);
  const double gE = gamma(EE, u), gE1 = gamma(EE - 1, u);
  const double SA = sigma_a.up(), NA = n_a.up(), K = kappa.up(), DX = abs_dx.up(), W = wsum.up();
  // U = (1 + γ_{n-1})·ω·((1 + u)·N_A + n); ε_D = γ_E·W + (1 + γ_{E-1})·E·ω.
  const double U = mul_up(mul_up(add_up(1, gn1), w), add_up(mul_up(add_up(1, u), NA), static_cast<double>(N)));
  // The row dot, and its one rounding to p where it is stored narrower than it is summed.
  const double eps_sum = add_up(mul_up(gE, W), mul_up(mul_up(add_up(1, gE1), static_cast<double>(EE)), w));
  const double eps_d = add_up(add_up(mul_up(add_up(1, u), eps_sum), mul_up(u, abs_dx.up())), w);
  const double abs_c = add_up(mul_up(add_up(1, g2), add_up(w, U)), w);
  out.composed.resize(n);
  out.fused.resize(n);
  out.magnitude.resize(n);
  for (std::size_t t = 0; t < n; ++t) {
    const double A = std::fabs(row.dp[t]), P = pstar[t];
    out.composed[t] = add_up(mul_up(P, add_up(mul_up(g3, A), mul_up(gn4, SA))), abs_c);
    const double r = add_up(add_up(A, DX), eps_d);  // >= |dP_t - D|
    // p's rounding, the subtraction's, the product's and a final rounding to p (ds carried wider).
    out.fused[t] = add_up(add_up(mul_up(P, add_up(add_up(mul_up(g4, r), K), eps_d)), mul_up(mul_up(add_up(1, g3), w), r)),
                          add_up(mul_up(add_up(1, u), w), w));
    out.magnitude[t] = mul_up(P, add_up(A, SA));
  }
  return out;
}

double backward_pair_term(const BackwardPairBounds& pairs, std::size_t t, double scale, std::int64_t terms, Prec p) {
  const double u = unit_roundoff(p), w = underflow_error(p), c = std::fabs(scale);
  const double gm = gamma(terms, u);
  const double ec = pairs.composed[t], ef = pairs.fused[t], g = pairs.magnitude[t];
  const double both = add_up(ec, ef);
  // |c|(Ec + Ef)(1 + u) + 2u|c|·G + 2ω + γ_m·(|c|(2G + Ec + Ef)(1 + u) + 2ω)
  double term = mul_up(mul_up(c, both), add_up(1, u));
  term = add_up(term, mul_up(mul_up(2 * u, c), g));
  term = add_up(term, 2 * w);
  const double inner = add_up(mul_up(mul_up(c, add_up(2 * g, both)), add_up(1, u)), 2 * w);
  return add_up(term, mul_up(gm, inner));
}

double backward_contraction_bound(const std::vector<double>& pair_terms, const std::vector<double>& operand, Prec p) {
  const double u = unit_roundoff(p), w = underflow_error(p);
  const auto m = static_cast<std::int64_t>(pair_terms.size());
  Real sum;
  for (std::size_t i = 0; i < pair_terms.size(); ++i) add_product_up(sum, std::fabs(operand[i]), pair_terms[i]);
  const double tail = mul_up(mul_up(2.0 * static_cast<double>(m), w), add_up(1, gamma(m - 1, u)));
  return add_up(sum.up(), tail);
}

}  // namespace fp::verify
