#pragma once
// The memory one run of a routine needs on an executor, estimated before anything is allocated,
// and the check of that estimate against --max-memory (core/memory_limit.h). A routine too big for
// the machine is refused with a message naming its biggest buffers (exit 69,
// kExitUnavailable) instead of dying of std::bad_alloc, or computing for minutes first.
//
// What each executor holds at its peak, in host memory:
//   interp  every node of the routine as f64 cells for the whole run (core/interpreter.cpp), plus
//           the caller's input tensors (f64 cells);
//   c       the placed routine's liveness peak at storage precision (core/memory_report.h, the
//           peak the C executor measures), plus the input tensors and the output tensors the
//           results are converted to (f64 cells);
//   cuda    (device memory is the GPU's; the host side) the input and output tensors (f64 cells)
//           and their storage-precision staging copies.
// The estimate is a lower bound of what the run takes (the program, the solver and the allocator
// come on top), so a refusal is never a false alarm for a run that would have fitted.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "core/memory_limit.h"
#include "core/placement.h"

namespace fp {

struct RunBuffer {
  std::string name;
  std::vector<std::int64_t> dims;
  std::string how;  // "f32 storage", "f64 cells", ...
  std::int64_t bytes = 0;
};

struct RunMemory {
  std::int64_t bytes = 0;          // at least this much at once (saturating at 2^63 - 1)
  std::vector<RunBuffer> buffers;  // what makes up the peak, biggest first
  std::string basis;               // one phrase: how it was counted
};

// `r` must pass the checker; `executor` is "interp", "c" or "cuda". `inputs_shared`: the input
// tensors are already counted by another run's estimate (two runs on one TensorMap).
RunMemory estimate_run_memory(const Routine& r, const std::string& executor, const PlacementConfig& placement,
                              bool inputs_shared = false);

// Several runs alive at once (diff's two executors; verify's source and target, in parallel jobs):
// the bytes add up, the buffers are merged.
RunMemory combine(std::vector<RunMemory> parts, std::string basis);

// Source-target pairs run side by side on `executor`, `jobs` pairs at once, each pair sharing one
// input set (verify's trials): the biggest `jobs` pairs, at worst, combined under `basis`.
RunMemory parallel_pairs_memory(const std::vector<std::pair<const Routine*, const Routine*>>& pairs,
                                const std::string& executor, int jobs, std::string basis);

// Throws UserError(kExitUnavailable) naming `what` (the file), the estimate, the limit and
// where it came from, and the three biggest buffers, when the estimate exceeds the limit.
void check_run_memory(const RunMemory& need, const MemoryLimit& limit, const std::string& what);

}  // namespace fp
