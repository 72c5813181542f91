#include "verify/error_bound.h"

#include <gmp.h>
#include <mpfr.h>

#include <cmath>

#include "core/diagnostic.h"

namespace fp::verify {

namespace {

// The long double evaluation of diff / allowed makes at most four roundings of 2^-64 each (every
// product and difference of doubles is a normal long double): far inside this margin, so outside
// [1 - kMargin, 1 + kMargin] the rounded fraction decides the inequality correctly.
constexpr long double kMargin = 1e-12L;

// |t - s| <= rel·mag + abs, in rationals.
bool holds_exactly(double s, double t, double rel, double mag, double abs) {
  mpq_t d, a, x, y;
  mpq_inits(d, a, x, y, nullptr);
  mpq_set_d(x, t);
  mpq_set_d(y, s);
  mpq_sub(d, x, y);
  mpq_abs(d, d);
  mpq_set_d(x, rel);
  mpq_set_d(y, mag);
  mpq_mul(a, x, y);
  mpq_set_d(x, abs);
  mpq_add(a, a, x);
  const bool ok = mpq_cmp(d, a) <= 0;
  mpq_clears(d, a, x, y, nullptr);
  return ok;
}

}  // namespace

double round_up_to_double(long double v) {
  double d = static_cast<double>(v);
  if (std::isnan(d)) return d;
  while (static_cast<long double>(d) < v) d = std::nextafter(d, INFINITY);
  return d;
}

double round_down_to_double(long double v) {
  double d = static_cast<double>(v);
  if (std::isnan(d)) return d;
  while (static_cast<long double>(d) > v) d = std::nextafter(d, -INFINITY);
  return d;
}

double error_fraction(double s, double t, double rel, double mag, double abs) {
  FP_INTERNAL_CHECK(std::isfinite(s) && std::isfinite(t) && rel >= 0 && mag >= 0 && abs >= 0 &&
                        std::isfinite(rel) && std::isfinite(mag) && std::isfinite(abs),
                    "error_fraction({}, {}, {}, {}, {}) outside its domain", s, t, rel, mag, abs);
  if (s == t) return 0;
  const long double diff = std::fabs(static_cast<long double>(t) - static_cast<long double>(s));
  const long double allowed = static_cast<long double>(rel) * mag + abs;
  if (allowed == 0) return INFINITY;
  const long double ratio = diff / allowed;
  const double up = round_up_to_double(ratio * (1 + 8 * std::ldexp(1.0L, -64)));
  if (ratio < 1 - kMargin || ratio > 1 + kMargin) return up;
  if (holds_exactly(s, t, rel, mag, abs)) return std::min(up, 1.0);
  return std::max(up, std::nextafter(1.0, INFINITY));
}

std::optional<double> parse_decimal_rounded_down(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  mpfr_t x;
  mpfr_init2(x, 53);
  char* end = nullptr;
  mpfr_strtofr(x, text.c_str(), &end, 0, MPFR_RNDD);
  std::optional<double> out;
  if (end && *end == '\0' && end != text.c_str()) out = mpfr_get_d(x, MPFR_RNDD);
  mpfr_clear(x);
  return out;
}

}  // namespace fp::verify
