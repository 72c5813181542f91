#pragma once
// A dense tensor value bound to a routine's input or read from its output.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"

namespace fp {

// Row-major (C order) cells. Every value of every precision is held exactly as a double: an f32,
// f16 or bf16 value or an i32 is exactly representable in binary64. A Tensor of precision p only
// ever holds values representable at p (producers round with core/numerics.h).
struct Tensor {
  Prec prec = Prec::F32;
  std::vector<std::int64_t> dims;
  std::vector<double> data;

  static Tensor zeros(Prec prec, std::vector<std::int64_t> dims);
  std::int64_t size() const { return static_cast<std::int64_t>(data.size()); }
};

// Bitwise equality of two cell values as the semantics define it: every NaN equals every NaN,
// anything else compares its bits (so -0 differs from +0).
inline bool same_value(double a, double b) {
  if (a != a || b != b) return a != a && b != b;
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace fp
