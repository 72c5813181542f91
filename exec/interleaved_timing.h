#pragma once
// Timing compiled programs against each other on one input set, as `flashproof bench` compares
// the composed and the rewritten form: one warm-up run each (page faults, thread pools), then
// `repeats` rounds in which every program runs once, the order rotating from round to round so
// that drift (frequency scaling, a neighbour's load) hits them all alike. A run's time is the
// executor's own compute time when it measures one (RunStats::compute_seconds), else the wall
// clock around run().

#include <cstdint>
#include <vector>

#include "exec/executor.h"

namespace fp {

struct ProgramTimes {
  std::vector<double> seconds;   // one per round, in round order
  std::int64_t peak_bytes = -1;  // the last run's measured peak (RunStats::peak_bytes; -1: none)

  double median() const;  // of `seconds` (the mean of the middle two for an even count)
  double min() const;
};

// One entry per program, in the order given. `repeats` >= 1.
std::vector<ProgramTimes> time_interleaved(const std::vector<CompiledProgram*>& programs,
                                           const TensorMap& inputs, int repeats);

}  // namespace fp
