#pragma once
// CHECK_CUDA for the GPU programs in bench/ (gpu_attention_baseline.cu, gpu_exp32_agreement.cu): a
// failed CUDA runtime call prints the program, the call and CUDA's message, and exits 2.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

// The program's name in messages; each program defines it.
extern const char* const kCudaProgram;

#define CHECK_CUDA(x)                                                                                         \
  do {                                                                                                        \
    cudaError_t e_ = (x);                                                                                     \
    if (e_ != cudaSuccess) {                                                                                  \
      std::fprintf(stderr, "%s: %s failed: %s\n", kCudaProgram, #x, cudaGetErrorString(e_));                 \
      std::exit(2);                                                                                           \
    }                                                                                                         \
  } while (0)
