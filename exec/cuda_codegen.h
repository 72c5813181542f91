#pragma once
// CUDA code generation: CUDA C++ from the IR, through the same statement and expression emitter as
// the C generator (exec/codegen_emitter.h), so the device computes what the interpreter computes:
// core/numerics_c.h is pasted in (device functions under __CUDACC__) and the program is compiled
// with -fmad=false -prec-div=true -prec-sqrt=true -ftz=false (cuda_compile_options()).
//
// Mapping (docs/executors.md): every top-level statement that runs where it stands becomes one
// launch, in program order:
//  - `zero N` at the top level: a memset of N's buffer;
//  - a reduction or pointwise nest (exec/program_plan.h NestShape): one thread per target
//    iteration (all target loops collapsed into a grid-stride index, the innermost fastest), the
//    reduced loops in the thread with the cell in a register;
//  - any other statement whose outermost loops are parallel-safe (codegen::parallel_safe): one
//    thread per iteration of the longest such prefix of its loop chain, the rest in the thread;
//  - a statement whose rows hold a scan (one carrying a running max and a rescaled sum, or one over
//    blocks of another node's rows with several statements per step) (exec/cuda_row_kernel.h): the row kernel, one thread per row of one row loop (the query
//    rows), the other rows one per block row of the grid (blockIdx.y), the row's private tiles in per-thread arrays
//    (registers, or local memory the L1 caches) and the key and value blocks each scan iteration
//    reads staged through shared memory by the whole block;
//  - anything else: one thread (<<<1, 1>>>).
// A routine with a local at the top level (shared between statements) runs as one single-thread
// kernel.

#include <cstdint>
#include <string>
#include <vector>

#include "exec/program_plan.h"

namespace fp {

struct CudaLaunch {
  enum class Kind { Memset, Kernel };
  Kind kind = Kind::Kernel;
  int position = -1;         // top-level statement (0-based), for messages
  int node = -1;             // Memset: the node (index in plan.placed.nodes) to zero
  std::string kernel;        // Kernel: its extern "C" name
  std::vector<int> params;   // Kernel: node buffers passed, in order, then the thread count
  std::int64_t threads = 1;  // Kernel: iterations of the grid-stride loop (row kernel: of the outer rows)
  std::int64_t rows = 0;     // the row kernel: its rows (over x); 0 for a grid-stride kernel
  unsigned block = 0;        // the row kernel: threads per block
};

// How a launch is run: grid and block (x, y), and the fpx_total argument.
struct CudaGeometry {
  unsigned grid_x = 1, grid_y = 1, block = 1;
  long long total = 1;
};
CudaGeometry cuda_geometry(const CudaLaunch& l);

struct CudaProgramText {
  std::string source;
  std::vector<CudaLaunch> launches;
  std::vector<int> private_nodes;  // nodes every kernel keeps in per-thread arrays: no buffer
};

// `kernel_prefix` names the kernels (several programs can share one translation unit).
CudaProgramText generate_cuda(const ProgramPlan& plan, const std::string& kernel_prefix = "fpk");

// The options that make nvcc / NVRTC compute as the semantics say (no contraction, IEEE division
// and square root, no flush to zero).
std::vector<std::string> cuda_semantic_options();

}  // namespace fp
