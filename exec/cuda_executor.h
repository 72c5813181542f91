#pragma once
// The CUDA executor's extra entry points (the Executor itself: make_cuda_executor in
// exec/executor.h). The runtime needs no CUDA library at link time: the driver (libcuda.so.1) and
// NVRTC (libnvrtc.so) are opened with dlopen, nvcc is run as a program, so a build without a GPU,
// or without a driver, works and reports the executor unavailable with the reason.

#include <string>

#include "exec/executor.h"

namespace fp {

enum class CudaCompiler { Nvrtc, Nvcc };
const char* cuda_compiler_name(CudaCompiler c);

// Whether the compiler can be used here (no GPU needed): NVRTC loads, or nvcc runs.
Availability cuda_compiler_available(CudaCompiler c);

struct CudaBinary {
  bool ok = false;
  std::string image;  // cubin
  std::string log;    // compiler messages (the error when !ok)
};

// Compiles CUDA source for `arch` ("sm_90") with cuda_semantic_options(). Never needs a GPU.
CudaBinary compile_cuda(const std::string& source, const std::string& arch, CudaCompiler c);

// The CUDA source the executor would generate for `r` (kernels named `prefix`_*).
std::string cuda_source_for(const Routine& r, const ExecOptions& opts, const std::string& prefix = "fpk");

}  // namespace fp
