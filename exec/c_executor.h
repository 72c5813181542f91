#pragma once
// The compiled C executor's extra entry points (the Executor itself: make_c_executor in
// exec/executor.h).

#include <memory>
#include <vector>

#include "exec/executor.h"

namespace fp {

// Compiles several routines into one shared object with a single compiler run (each keeps its own
// entry function), e.g. for test suites and differential campaigns where compiler start-up would
// dominate. Equivalent to compiling each with make_c_executor(opts).
std::vector<std::unique_ptr<CompiledProgram>> compile_c_batch(const std::vector<Routine>& routines,
                                                              const ExecOptions& opts);

// The thread count a C program runs with for `requested` (0: $FLASHPROOF_THREADS, else the
// hardware concurrency).
int resolve_c_threads(int requested);

}  // namespace fp
