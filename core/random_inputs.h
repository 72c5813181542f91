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

// The routine attribute holding the seed of attention's `random:SEED` mask (frontend/attention.h).
inline constexpr const char* kMaskSeedAttr = "mask_seed";

// The cell of a `random:SEED` mask: 1 (key t visible from query s) or 0, a fixed pseudo-random bit
// of (s, t, seed) with probability 1/2.
double random_mask_bit(std::uint64_t seed, std::int64_t s, std::int64_t t);

// One tensor per input node. Floats are uniform in [-1, 1) rounded to the node's precision,
// except nodes whose name starts with "dropout_u" (dropout's uniform draws), which are uniform in
// [0, 1), and rank-4 nodes whose name starts with "mask_keep" (a random mask, [b, s, h, t]), which
// hold random_mask_bit(attribute mask_seed or 0, s, t) whatever the seed; i32 inputs are uniform
// in [-8, 8]. Each input gets its own stream, derived from the
// seed and its position among the inputs, so adding an input does not change the others.
TensorMap random_inputs(const Routine& r, std::uint64_t seed);

}  // namespace fp
