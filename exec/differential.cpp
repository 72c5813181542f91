// Output comparison for differential runs (exec/differential.h).

#include "exec/differential.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>

namespace fp {

const char* comparison_basis_name(ComparisonBasis b) {
  switch (b) {
    case ComparisonBasis::Bitwise:
      return "bitwise";
    case ComparisonBasis::Certified:
      return "certified";
    case ComparisonBasis::StandIn:
      return "stand-in";
  }
  return "?";
}

OutputComparison compare_output(const std::string& node, const Tensor& a, const Tensor& b, double bound) {
  OutputComparison c;
  c.node = node;
  c.basis = bound < 0 ? ComparisonBasis::Bitwise : ComparisonBasis::StandIn;
  const bool bitwise = c.basis == ComparisonBasis::Bitwise;
  c.bound = bound < 0 ? 0 : bound;
  c.cells = a.size();
  auto fail = [&](std::int64_t i, std::string why) {
    ++c.mismatches;
    c.ok = false;
    if (!c.first)
      c.first = CellMismatch{i, cell_text(a.dims, i), a.data[static_cast<std::size_t>(i)],
                             b.data[static_cast<std::size_t>(i)], std::move(why)};
  };
  if (a.dims != b.dims || a.prec != b.prec || a.data.size() != b.data.size()) {
    c.ok = false;
    c.mismatches = c.cells;
    c.first = CellMismatch{0, "[]", 0, 0, "the two outputs have different types"};
    return c;
  }
  double rms = 0;
  if (!bitwise) {
    double sum = 0;
    std::int64_t finite = 0;
    for (double v : a.data)
      if (std::isfinite(v)) {
        sum += v * v;
        ++finite;
      }
    rms = finite > 0 ? std::sqrt(sum / static_cast<double>(finite)) : 0;
  }
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const double x = a.data[i], y = b.data[i];
    const auto fi = static_cast<std::int64_t>(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) fail(fi, "NaN on one side only");
      continue;
    }
    if (bitwise) {
      if (std::bit_cast<std::uint64_t>(x) != std::bit_cast<std::uint64_t>(y)) {
        fail(fi, "bits differ");
        c.worst = 1;
      }
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) fail(fi, "an infinity on one side only");
      continue;
    }
    // Rounded against agreement: the error up, the scale down, the quotient up (each operation
    // rounds to nearest, so one step toward the safe side covers it).
    const double scale = std::nextafter(std::max(std::fabs(x), rms), 0.0);
    const double err = x == y ? 0 : std::nextafter(std::fabs(y - x), INFINITY);
    const double rel = err == 0 ? 0 : scale > 0 ? std::nextafter(err / scale, INFINITY) : INFINITY;
    c.worst = std::max(c.worst, rel);
    if (rel > c.bound) fail(fi, fmt::format("relative error {:.3g} exceeds the bound {:.3g}", rel, c.bound));
  }
  return c;
}

}  // namespace fp
