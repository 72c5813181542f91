#pragma once
// Concrete counterexample search and minimization, on the interpreter.
//
// The search draws input sets from a fixed family ladder (deterministic in the seed): the
// routine's own random inputs, rescaled random inputs (tiny to near overflow), one special value
// (±inf, NaN, ±max finite, huge, ±0, the smallest subnormal) in one cell — systematically over
// every cell while the budget allows — a special value over a whole slice of one axis (so that a
// whole row of scores becomes -inf, say), ties (a constant), small integers, sparse inputs.
//
// Minimization (Alive2 prints only minimized counterexamples): greedily, per cell, the simplest
// value that keeps the failure — 0, then 1, -1, 2, -2, 0.5, then the special values — so the
// result has the fewest nonzero and special cells and the smallest values the search can find;
// then the mismatch is re-derived. The engine first shrinks the pair's extents
// (verify/size_reduction.h) and minimizes the cells at the reduced size.

#include <cstdint>
#include <optional>
#include <string>

#include "verify/compare.h"

namespace fp::verify {

struct Found {
  TensorMap inputs;
  Mismatch mismatch;
  std::string family;  // which trial family found it
  int trial = 0;
};

// Runs up to scaled_search_trials(runner, trials) trials; polls the thread's deadline
// (core/support/deadline.h) before each.
std::optional<Found> search_counterexample(const PairRunner& runner, int trials, std::uint64_t seed);

// Search trials scale down with size: a trial runs both routines once, and the search spends at
// most kSearchWork scalar operations (routine_work) in all — but never fewer than kMinSearchTrials
// trials (nor more than requested). Deterministic in the routines, so a verdict does not depend
// on the machine's speed. (1500 trials of the 2-head 64×64 demo attention fit; a seq-512 head gets
// a few dozen.)
inline constexpr double kSearchWork = 8e9;
inline constexpr int kMinSearchTrials = 16;
int scaled_search_trials(const PairRunner& runner, int requested);
// Runs of a concrete cross-check after a proof for every extent (verify/checkers/exact_lift.h, the
// normalizer's differential): at most kCrossCheckWork scalar operations per obligation in all, at
// least one run, at most `requested`. A 24-layer training step shrunk to extents of 8 gets a
// handful; the demo's small instance every requested run.
inline constexpr double kCrossCheckWork = 1e7;
int cross_check_runs(const PairRunner& runner, int requested);
// The scalar operations one interpreter run of r executes: each statement's expression nodes plus
// one, times its loops' trip counts.
double routine_work(const Routine& r);

// Minimizes a failing input set within `budget` interpreter runs (pairs); polls the deadline.
Found minimize_counterexample(const PairRunner& runner, Found found, int budget = 400);

// Inputs from solver values: store variables' (node, cell) values, every other cell 0, each
// value rounded to its node's precision.
TensorMap inputs_from_cells(const Routine& r,
                            const std::map<std::pair<std::string, std::int64_t>, double>& cells);

}  // namespace fp::verify
