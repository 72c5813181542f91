#pragma once
// The compiled C executor's extra entry points (the Executor itself: make_c_executor in
// exec/executor.h).

#include <memory>
#include <vector>

#include "exec/executor.h"
#include "exec/program_plan.h"

namespace fp {

// Compiles several routines into one shared object with a single compiler run (each keeps its own
// entry function), e.g. for test suites and differential campaigns where compiler start-up would
// dominate. Equivalent to compiling each with make_c_executor(opts).
std::vector<std::unique_ptr<CompiledProgram>> compile_c_batch(const std::vector<Routine>& routines,
                                                              const ExecOptions& opts);

// A routine compiled to a shared object for a caller outside flashproof that loads it itself, in
// its own process (scripts/bench-peers loads it with Python's ctypes): the object's bytes exactly
// as the JIT verified and loaded them, its source, and the plan whose node order is the order of
// the entry function's buffer slots (the ABI: exec/c_codegen.h). The caller passes `threads` in
// fpx_ctx itself.
struct CObjectExport {
  ProgramPlan plan;
  std::string source;
  std::string object_bytes;
  std::string entry = "fpx_entry";
};
CObjectExport export_c_object(const Routine& r, const ExecOptions& opts);

// The most worker threads a C program may run with: 4 × the hardware threads, but never a cap
// below 64 (oversubscribing a small machine on purpose is legitimate) nor above 1024 (libgomp
// creates every thread up front; 100000 of them exhaust the address space and crash inside it).
int max_c_threads();

// The thread count a C program runs with for `requested` (0: $FLASHPROOF_THREADS, else the
// hardware concurrency). A count outside 1..max_c_threads() (requested or from the environment)
// is a usage error (UserError 64).
int resolve_c_threads(int requested);

// The hardware concurrency (at least 1).
int hardware_threads();
// The most threads a C program may ask for: the larger of 256 and 4 x hardware_threads(). More is
// never faster, and OpenMP runtimes fail in their own ways (libgomp crashed at 100000) long
// before the operating system's limit.
int max_c_threads();

}  // namespace fp
