#pragma once
// The attention programs the verify tests, the benchmark and the verdict table run on: the tier
// issue's attention programs (tests/unit/online_softmax_differential_test.cpp) at small sizes —
// masks, rectangular shapes, fully masked rows, every float precision, stacked layers, mask fills,
// dropout and the training step.

#include <string>
#include <vector>

#include "core/attention.h"

namespace fp::verify {

struct AttentionCase {
  std::string name;
  AttentionSpec spec;
};

std::vector<AttentionCase> attention_suite();

}  // namespace fp::verify
