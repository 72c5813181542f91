#include "verify/bounds/rounding_model.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/numerics.h"
#include "verify/bounds/mpfr_up.h"
#include "verify/error_bound.h"

namespace fp::verify {

namespace {

using LD = long double;

// Rounds a long double bound up to a double that is not below it, plus a little slack for the
// long double evaluation's own rounding (a handful of 2^-64 relative errors).
double up(LD v) {
  return round_up_to_double(v * (1 + 1e-15L));
}

// The same for a value computed as X - 1 with X near 1 (a few operations on values in [0.5, 4]):
// the long double error of X is absolute, a few 2^-64, and the subtraction keeps it while the
// value shrinks (at f64, (1 + u)/(1 - u) - 1 ~ 2^-52 carries a ~2^-63 error, relative 2^-11):
// 2^-58 absolute covers 16 such roundings (each at most 2^-64 of a value below 4).
double up_after_cancel(LD v) {
  return up(v + 0x1p-58L);
}

LD gamma(std::int64_t k, LD u) {
  return static_cast<LD>(k) * u / (1 - static_cast<LD>(k) * u);
}
// exp_error before the final rounding up (docs/bounds.md §6). A result within U ulps of the exact
// value e, ulps of e's binade [2^k, 2^(k+1)) (2^(k-23) at f32), is within U·2^(k-23) <= U·2^-23·e.
LD eps(Prec p, double exp_ulp) {
  if (p == Prec::F64) return static_cast<LD>(exp_ulp) * std::ldexp(1.0L, -52);
  const LD eta32 = static_cast<LD>(kExp32MaxUlp) * std::ldexp(1.0L, -23);
  if (p == Prec::F32) return eta32;
  return (1 + eta32) * (1 + static_cast<LD>(unit_roundoff(p))) - 1;
}

// exp_underflow_error before the final rounding up.
LD omega_exp(Prec p) {
  const LD w32 = static_cast<LD>(kExp32MaxUlp) * std::ldexp(1.0L, -149);
  switch (p) {
    case Prec::F64:
      return 2 * static_cast<LD>(underflow_error(Prec::F64));
    case Prec::F32:
      return w32;
    case Prec::F16:
    case Prec::BF16:
      return static_cast<LD>(underflow_error(p)) + w32 * (1 + static_cast<LD>(unit_roundoff(p)));
    case Prec::I32:
      break;
  }
  return 0;
}

}  // namespace

Up model_underflow_up(Prec p) {
  return Up(std::ldexp(1.0L, model_underflow_lead_log2(p))) + Up(std::ldexp(1.0L, kModelUnderflowTailLog2));
}

Up gamma_up(std::int64_t k, double u) {
  if (k <= 0) return Up(0);
  const Up ku = Up(static_cast<LD>(k)) * Up(static_cast<LD>(u));
  if (!ku.below_one()) return Up(std::numeric_limits<LD>::infinity());
  return ku / ku.one_minus_down();
}

double unit_roundoff(Prec p) {
  return std::ldexp(1.0, -significand_bits(p));
}

int significand_bits(Prec p) {
  switch (p) {
    case Prec::F64:
      return 53;
    case Prec::F32:
      return 24;
    case Prec::F16:
      return 11;
    case Prec::BF16:
      return 8;
    case Prec::I32:
      return 0;
  }
  return 0;
}

double underflow_error(Prec p) {
  switch (p) {
    case Prec::F64:
      return std::ldexp(1.0, -1075);
    case Prec::F32:
      return std::ldexp(1.0, -150);
    case Prec::F16:
      return std::ldexp(1.0, -25);
    case Prec::BF16:
      return std::ldexp(1.0, -134);
    case Prec::I32:
      return 0;
  }
  return 0;
}

int model_underflow_lead_log2(Prec p) {
  if (p == Prec::F64) return -200;  // ω_64 = 2^-1075 is below 2^-200
  return std::max(std::ilogb(underflow_error(p)), -200);
}

double model_underflow(Prec p) {
  return model_underflow_up(p).to_double_up();
}

double exp_error(Prec p, double exp_ulp) {
  return up(eps(p, exp_ulp));
}

double exp_underflow_error(Prec p) {
  return up(omega_exp(p));
}

double gamma_bound(std::int64_t k, double u) {
  return gamma_up(k, u).to_double_up();
}

std::string exp_assumption_text(double exp_ulp) {
  return fmt::format(
      "exp.f64 = fp_exp64 within {} binary64 ulp (relative error <= {}·2^-52; docs/semantics.md measures "
      "0.5113 ulp); exp.f32 = fp_exp32 within {} ulp (relative error <= {}·2^-23, measured on all 2^32 f32 "
      "inputs); exp.f16/bf16 round fp_exp32 once more",
      exp_ulp, exp_ulp, kExp32MaxUlp, kExp32MaxUlp);
}

double quotient_perturbation(double ra, double rb, Prec p) {
  if (ra == 0 && rb == 0) return 0;
  if (rb >= 1) return INFINITY;
  const LD u = unit_roundoff(p);
  return up_after_cancel((1 + static_cast<LD>(ra)) * (1 + u) / ((1 - static_cast<LD>(rb)) * (1 - u)) - 1);
}

double product_perturbation(double ra, double rb, Prec p) {
  if (ra == 0 && rb == 0) return 0;
  const LD u = unit_roundoff(p);
  return up_after_cancel((1 + static_cast<LD>(ra)) * (1 + static_cast<LD>(rb)) * (1 + u) / (1 - u) - 1);
}

double conversion_perturbation(double r, Prec from, Prec to) {
  if (r == 0) return 0;
  if (significand_bits(to) >= significand_bits(from)) return r;
  const LD u = unit_roundoff(to);
  return up_after_cancel((1 + static_cast<LD>(r)) * (1 + u) / (1 - u) - 1);
}

double dot_perturbation(double rw, std::int64_t n, Prec p) {
  const LD g = gamma(n, unit_roundoff(p));
  if (static_cast<LD>(n) * unit_roundoff(p) >= 1) return INFINITY;
  return up(static_cast<LD>(rw) + g * (2 + static_cast<LD>(rw)));
}

}  // namespace fp::verify
