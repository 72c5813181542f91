// fp_exp32 on the GPU against the CPU on all 2^32 f32 inputs (NaNs included): core/numerics_c.h's
// fpc_exp32 compiled for the device (its __CUDACC__ branch: the shifter rounding, CUDA's bit-cast
// intrinsics, -fmad=false as the CUDA executor compiles) must give the CPU's bits for every input
// (bench/gpu_exp32_host.c, the host C compiler), so the bounds' exp figure (docs/bounds.md, measured
// on the CPU) holds for the CUDA executor too. For information it also counts where the device's
// own expf (CUDA's libdevice, -prec-div and no fast math) differs from fp_exp32, and by how many
// ulps at most (finite results).
//
//   gpu_exp32_agreement [--chunk-log2 28]
// Exit 0 when every input agrees, 1 on any mismatch (the first few are printed), 2 on a CUDA error.
// scripts/gpu-check builds it with nvcc and runs it on the GPU machine (about a minute on an H200).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "bench/cuda_check.h"
#include "core/numerics_c.h"

extern "C" void fp_host_exp32_bits(fpc_u32 first, fpc_u32 count, fpc_u32* out);

const char* const kCudaProgram = "gpu_exp32_agreement";

namespace {

__global__ void device_exp32(fpc_u32 first, fpc_u32 count, fpc_u32* own, fpc_u32* lib) {
  for (fpc_u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    const float x = fpc_f32_from_bits(first + i);
    own[i] = fpc_bits_of_f32(fpc_exp32(x));
    lib[i] = fpc_bits_of_f32(expf(x));
  }
}

// Distance in ulps between two finite non-negative floats' bit patterns.
std::uint32_t ulps(std::uint32_t a, std::uint32_t b) { return a > b ? a - b : b - a; }

bool is_nan_bits(std::uint32_t u) { return (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0; }

}  // namespace

int main(int argc, char** argv) {
  int chunk_log2 = 28;
  if (argc == 3 && std::string_view(argv[1]) == "--chunk-log2") chunk_log2 = std::atoi(argv[2]);
  if (chunk_log2 < 16 || chunk_log2 > 30 || (argc != 1 && argc != 3)) {
    std::fprintf(stderr, "usage: gpu_exp32_agreement [--chunk-log2 16..30]\n");
    return 64;
  }
  const fpc_u32 chunk = 1u << chunk_log2;
  fpc_u32 *d_own = nullptr, *d_lib = nullptr;
  CHECK_CUDA(cudaMalloc(&d_own, sizeof(fpc_u32) * chunk));
  CHECK_CUDA(cudaMalloc(&d_lib, sizeof(fpc_u32) * chunk));
  std::vector<fpc_u32> own(chunk), lib(chunk), host(chunk);
  unsigned long long checked = 0, mismatches = 0, lib_differs = 0;
  std::uint32_t lib_max_ulps = 0;
  for (unsigned long long first = 0; first < (1ull << 32); first += chunk) {
    device_exp32<<<4096, 256>>>((fpc_u32)first, chunk, d_own, d_lib);
    CHECK_CUDA(cudaGetLastError());
    fp_host_exp32_bits((fpc_u32)first, chunk, host.data());  // overlaps the kernel
    CHECK_CUDA(cudaMemcpy(own.data(), d_own, sizeof(fpc_u32) * chunk, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(lib.data(), d_lib, sizeof(fpc_u32) * chunk, cudaMemcpyDeviceToHost));
    for (fpc_u32 i = 0; i < chunk; ++i) {
      // Every NaN is the same value (core/ir.h SEMANTICS): NaN payloads are not compared.
      const bool same = own[i] == host[i] || (is_nan_bits(own[i]) && is_nan_bits(host[i]));
      if (!same && mismatches++ < 10)
        std::printf("MISMATCH x = 0x%08x: device 0x%08x, CPU 0x%08x\n", (unsigned)(first + i), own[i], host[i]);
      if (lib[i] != own[i] && !(is_nan_bits(lib[i]) && is_nan_bits(own[i]))) {
        ++lib_differs;
        if ((own[i] & 0x7f800000u) != 0x7f800000u && (lib[i] & 0x7f800000u) != 0x7f800000u)
          lib_max_ulps = std::max(lib_max_ulps, ulps(own[i], lib[i]));
      }
    }
    checked += chunk;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s: fp_exp32 on all %llu f32 inputs: %llu mismatches against the CPU\n", prop.name, checked,
              mismatches);
  std::printf("for information: CUDA's expf differs from fp_exp32 on %llu inputs, by at most %u ulp (finite results)\n",
              lib_differs, lib_max_ulps);
  return mismatches == 0 ? 0 : 1;
}
