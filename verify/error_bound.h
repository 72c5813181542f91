#pragma once
// Every comparison of an observed error against a bound, in one place, decided the way a
// certificate must be: never in the claim's favour. The inequality
//
//     |t - s| <= rel·mag + abs          (s, t finite doubles; rel, mag, abs >= 0)
//
// is decided exactly over the rationals (GMP), not in a rounded format: a difference or a product
// rounded the wrong way once turned a real violation into "bounded" (issue 9). The reported
// fraction error / allowed is rounded up and always agrees with the exact decision (<= 1 exactly
// when the inequality holds).
//
// Bounds entered by a user (bounded:REL) are read rounded down: the double the checks use is never
// above the decimal the user wrote.

#include <optional>
#include <string>

namespace fp::verify {

// |t - s| / (rel·mag + abs), rounded up; 0 when s == t; inf when the allowed error is 0 and the
// difference is not.
double error_fraction(double s, double t, double rel, double mag, double abs);

// The largest double not above the decimal (or hex) number `text`; nullopt when `text` is not
// entirely a number.
std::optional<double> parse_decimal_rounded_down(const std::string& text);

// The smallest double >= v / the largest double <= v.
double round_up_to_double(long double v);
double round_down_to_double(long double v);

}  // namespace fp::verify
