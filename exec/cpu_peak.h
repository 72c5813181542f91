#pragma once
// The machine's measured f32 peak, for "fraction of peak" figures: an FMA-throughput kernel
// (independent chains of vector fused multiply-adds, AVX-512 / AVX2+FMA intrinsics when the
// compiler targets them, scalar fmaf otherwise) compiled by the C JIT with the same compiler and
// flags as the programs it is compared with, run on `threads` OpenMP threads.

#include <string>

#include "exec/executor.h"

namespace fp {

struct PeakMeasurement {
  double gflops = 0;        // f32 GFLOP/s (an FMA counts 2)
  double seconds = 0;       // timed run
  std::string instruction;  // "avx512 fma", "avx2 fma" or "scalar fmaf"
  int threads = 1;
};

// Runs the kernel for about `target_seconds` (after a warm-up). Throws ExecError when the JIT does.
PeakMeasurement measure_f32_peak(const ExecOptions& opts, double target_seconds = 0.3);

}  // namespace fp
