#pragma once
// C code generation: one C function per routine (docs/executors.md shows an example).
//
// ABI of the generated object (mirrored by exec/c_executor.cpp):
//   typedef struct fpx_ctx { int64_t live, peak, failed_bytes, threads; } fpx_ctx;
//   int fpx_abi_version(void);                  // kCAbiVersion
//   int fpx_entry(fpx_ctx* ctx, void** bufs);   // 0, or 1 when an allocation failed
// bufs has one slot per node of the placed routine, in declaration order: the caller stores each
// input's buffer there (cells at the node's width, f16/bf16 as bit patterns, 64-byte aligned) and
// reads each output's buffer from there afterwards (allocated by the generated code with
// posix_memalign; the caller frees it, unless it is an input's own buffer). Every other buffer is
// allocated before the first top-level statement that touches it and freed after the last one
// (exec/program_plan.h), and ctx->live / ctx->peak count bytes exactly as the memory report does.

#include <string>

#include "exec/program_plan.h"

namespace fp {

inline constexpr int kCAbiVersion = 1;

struct CCodegenOptions {
  // OpenMP pragmas on loops proven parallel-safe (ignored by a compiler without -fopenmp).
  bool parallel = true;
  // Reduction nests: target loops outside, the cell in a register, the innermost target loop
  // unrolled into independent lanes (exec/program_plan.h NestShape says why this is exact).
  bool jam = true;
  // Local-mode buffers used by one top-level statement and at most this many bytes live on the
  // stack.
  std::int64_t stack_limit = 64 * 1024;
  // The entry function's name (several programs can share one translation unit: the numerics and
  // the support code are guarded against a second inclusion).
  std::string entry = "fpx_entry";
};

std::string generate_c(const ProgramPlan& plan, const CCodegenOptions& opts = {});

}  // namespace fp
