#pragma once
// Reproducible random input data for a routine: a pure function of (routine inputs, seed), the
// same on every machine and standard library (SplitMix64, no std distributions).

#include <cstdint>

#include "core/interpreter.h"

namespace fp {

// SplitMix64: the fixed PRNG every seeded feature of flashproof uses.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [0, 1) with 53 random bits.
  double unit();
  // Uniform integer in [lo, hi] (inclusive).
  std::int64_t range(std::int64_t lo, std::int64_t hi);

 private:
  std::uint64_t state_;
};

// One tensor per input node. Floats are uniform in [-1, 1) rounded to the node's precision,
// except nodes whose name starts with "dropout_u" (dropout's uniform draws), which are uniform in
// [0, 1); i32 inputs are uniform in [-8, 8]. Each input gets its own stream, derived from the
// seed and its position among the inputs, so adding an input does not change the others.
TensorMap random_inputs(const Routine& r, std::uint64_t seed);

}  // namespace fp
