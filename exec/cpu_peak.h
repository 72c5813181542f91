#pragma once
// The machine's measured f32 peak, for "fraction of peak" figures: an FMA-throughput kernel
// (independent chains of vector fused multiply-adds, AVX-512 / AVX2+FMA intrinsics when the
// compiler targets them, scalar fmaf otherwise), and the same chains as a multiply then an add,
// compiled by the C JIT with the same compiler and flags as the programs it is compared with, run
// on `threads` OpenMP threads.

#include <string>

#include "exec/executor.h"

namespace fp {

struct PeakMeasurement {
  double gflops = 0;        // f32 GFLOP/s (an FMA counts 2)
  // f32 GFLOP/s with a separate multiply and add per step: the ceiling of flashproof's own code,
  // which may not contract a·b + c (-ffp-contract=off, docs/semantics.md). Equal to `gflops` on
  // cores with separate add pipes (Zen 4/5), half of it where mul and add share the FMA ports
  // (Intel's AVX-512 server cores).
  double unfused_gflops = 0;
  double seconds = 0;       // timed run
  std::string instruction;  // "avx512 fma", "avx2 fma" or "scalar fmaf"
  int threads = 1;
};

// Runs the kernel for about `target_seconds` (after a warm-up). Throws ExecError when the JIT does.
PeakMeasurement measure_f32_peak(const ExecOptions& opts, double target_seconds = 0.3);

}  // namespace fp
