#pragma once
// Comparing two runs' outputs in tests: every node present in both with the same type, every cell
// the same value bit for bit (fp::same_value: NaN equals NaN, -0 differs from +0). On failure,
// the first differing node and cell with both values.

#include <gtest/gtest.h>

#include <ios>

#include "core/interpreter.h"

namespace fp::testing {

inline ::testing::AssertionResult bitwise_equal(const TensorMap& want, const TensorMap& got) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << "different output sets";
  for (const auto& [name, t] : want) {
    auto it = got.find(name);
    if (it == got.end()) return ::testing::AssertionFailure() << "missing output " << name;
    const Tensor& g = it->second;
    if (g.prec != t.prec || g.dims != t.dims) return ::testing::AssertionFailure() << name << ": type differs";
    for (std::size_t i = 0; i < t.data.size(); ++i)
      if (!same_value(t.data[i], g.data[i]))
        return ::testing::AssertionFailure() << name << "[" << i << "]: " << std::hexfloat << t.data[i]
                                             << " vs " << g.data[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace fp::testing
