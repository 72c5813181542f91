#pragma once
// The CUDA emulator (executor `cuda-emu`): the CUDA C++ the CUDA executor would run
// (exec/cuda_codegen.h), compiled for the CPU with the system C++ compiler and run with one
// std::thread per CUDA thread of a block — the blocks of a launch one after another, `__shared__`
// arrays as statics (one block's at a time), `__syncthreads()` a std::barrier over the block's
// threads — through the same run and checks as on the GPU (exec/cuda_run.h: poisoned outputs,
// two runs for i32 outputs). It is how the CUDA generator is tested where there is no GPU (every
// CI machine): the kernels' indexing, their launch geometry, the row kernel's staging through
// shared memory and its barriers. It is slow (a thread per CUDA thread) and is no measure of GPU
// speed. The device's own numerics are not emulated: the kernels use core/numerics_c.h's host
// functions, which are the same text the device compiles (numerics_c.h's __CUDACC__ branches only
// respell bit casts).

#include <memory>

#include "exec/executor.h"

namespace fp {

std::unique_ptr<Executor> make_cuda_emulator(const ExecOptions& opts);

}  // namespace fp
