#pragma once
// Comparing two runs' outputs in tests, with the comparison every command uses
// (verify/compare.h, bitwise: NaN equals NaN, -0 differs from +0): every node present in both with
// the same type, every cell the same value bit for bit. On failure, the first differing node and
// cell with both values.

#include <gtest/gtest.h>

#include <ios>

#include "core/interpreter.h"
#include "verify/compare.h"

namespace fp::testing {

inline ::testing::AssertionResult bitwise_equal(const Tensor& want, const Tensor& got,
                                                const std::string& name = "") {
  verify::NodeCheck bitwise;
  bitwise.node = name;
  const verify::OutputComparison c = verify::compare_output(bitwise, want, got);
  if (c.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << name << c.first->cell_text() << ": " << std::hexfloat << c.first->src << " vs " << c.first->tgt
         << " (" << c.first->why << ")";
}

inline ::testing::AssertionResult bitwise_equal(const TensorMap& want, const TensorMap& got) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << "different output sets";
  for (const auto& [name, t] : want) {
    auto it = got.find(name);
    if (it == got.end()) return ::testing::AssertionFailure() << "missing output " << name;
    if (auto same = bitwise_equal(t, it->second, name); !same) return same;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace fp::testing
