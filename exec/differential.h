#pragma once
// Cell-by-cell comparison of two runs' outputs (differential runs, `flashproof diff`): bitwise, or
// within a relative bound, with NaN positions exactly and infinities equal either way.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/input_validation.h"
#include "core/interpreter.h"

namespace fp {

struct CellMismatch {
  std::int64_t flat = 0;
  std::string cell;  // "[0,2,1,3]"
  double a = 0, b = 0;
  std::string why;  // "bits differ", "NaN on one side", "error 3.1e-05 exceeds the bound 1.2e-06"
};

// How an output was compared.
enum class ComparisonBasis : std::uint8_t {
  Bitwise,    // bit for bit (every NaN equals every NaN; -0 and +0 differ)
  Certified,  // verify's certified per-cell bound (`statement`); `worst` is the largest error as a
              // fraction of it, `bound` its relative factor rho
  StandIn,    // no certified bound: |b - a| <= bound * max(|a|, rms(a)) (rms over finite cells),
              // `worst` the largest such relative error; a violation is not a proof of a bug
};
const char* comparison_basis_name(ComparisonBasis b);  // "bitwise", "certified", "stand-in"

struct OutputComparison {
  std::string node;
  ComparisonBasis basis = ComparisonBasis::Bitwise;
  std::string statement;  // Certified: the bound, e.g. "|o_tgt - o_src| <= rho·Σ|w·v| + abs"
  double bound = 0;
  bool ok = true;
  std::int64_t cells = 0;
  std::int64_t mismatches = 0;
  double worst = 0;                   // see ComparisonBasis; bitwise: 0 or 1
  std::optional<CellMismatch> first;  // the first mismatching cell in C order
};

// `bound` < 0 compares bitwise, else with the stand-in relative form.
OutputComparison compare_output(const std::string& node, const Tensor& a, const Tensor& b, double bound);

}  // namespace fp
