#pragma once
// Hostile input data for a routine: random_inputs (core/random_inputs.h) with a share of the float
// cells replaced by the values numerical code gets wrong — NaN, ±inf, ±0, subnormals, the extreme
// finite values, ties and a huge dynamic range — each exactly representable in its node's
// precision, so that the interpreter, the executors and the rewrites all see the same number.
//
// A pure function of (routine, seed, hostile_percent), like random_inputs: every input keeps
// random_inputs' tensor, and a second stream per input (derived from the seed and the input's
// position) decides which cells turn hostile and into what. So hostile_percent = 0 gives exactly
// random_inputs(r, seed), and raising the percentage only replaces cells.
//
// Never hostile: i32 nodes, dropout draws (dropout_u*: uniform in [0, 1), a rate compares with
// them) and random masks (mask_keep*: 0/1 by construction) — their meaning is in their range.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"

namespace fp::fuzz {

// The kinds of hostile value, in the order hostile_value draws them.
enum class HostileKind : std::uint8_t {
  NaN,
  PosInf,
  NegInf,
  PosZero,
  NegZero,
  MinSubnormal,     // ± the smallest subnormal of the precision
  RandomSubnormal,  // ± a random subnormal of the precision
  Lowest,           // -max_finite
  Highest,          // max_finite
  Tie,              // the previous cell's value again (the first cell: +0)
  HugeRange,        // ±2^k, k uniform over the precision's exponents (subnormal ones included)
};
inline constexpr int kHostileKinds = 11;

// "nan", "+inf", "-inf", "+0", "-0", "min-subnormal", "random-subnormal", "lowest", "highest", "tie",
// "huge-range".
const char* hostile_kind_name(HostileKind k);

// The class a value of precision p falls in, for tests and statistics: NaN, ±inf, ±0, the smallest
// subnormal, another subnormal, ±max_finite, a power of two; nullopt for any other value. (A tie is
// not a property of one value.)
std::optional<HostileKind> classify_hostile(Prec p, double v);

// Random inputs of `r` (core/random_inputs.h) with each float cell of each eligible input, with
// probability hostile_percent / 100 (clamped to 0..100), replaced by a hostile value of its node's
// precision of a uniformly drawn kind.
TensorMap hostile_inputs(const Routine& r, std::uint64_t seed, int hostile_percent);

}  // namespace fp::fuzz
