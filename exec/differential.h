#pragma once
// Cell-by-cell comparison of two runs' outputs (differential runs, `flashproof diff`): bitwise, or
// within a relative bound, with NaN positions exactly and infinities equal either way.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/interpreter.h"

namespace fp {

struct CellMismatch {
  std::int64_t flat = 0;
  std::string cell;  // "[0,2,1,3]"
  double a = 0, b = 0;
  std::string why;  // "bits differ", "NaN on one side", "error 3.1e-05 exceeds the bound 1.2e-06"
};

struct OutputComparison {
  std::string node;
  bool bitwise = true;  // false: within `bound`
  double bound = 0;     // relative: |b - a| <= bound * max(|a|, rms(a)) (rms over finite cells)
  bool ok = true;
  std::int64_t cells = 0;
  std::int64_t mismatches = 0;
  double worst = 0;                   // bounded: the largest |b - a| / (max(|a|, rms(a))); bitwise: 0 or 1
  std::optional<CellMismatch> first;  // the first mismatching cell in C order
};

// `bound` < 0 compares bitwise (every NaN equals every NaN; -0 and +0 differ).
OutputComparison compare_output(const std::string& node, const Tensor& a, const Tensor& b, double bound);

}  // namespace fp
