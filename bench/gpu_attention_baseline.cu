// The composed attention a GPU user would write, as the GPU benchmark's baseline: cuBLAS SGEMM for the
// two contractions (strided-batched over the heads, CUBLAS_PEDANTIC_MATH: true f32, no TF32 and no
// tensor cores) and one row-softmax kernel (scale, mask, max, exp, sum, divide in place), with the
// [heads, seq, seq] score buffer a composed program keeps. Also measures the device's f32 peak
// (a probe of independent FMA chains, and of unfused multiply-add pairs: all flashproof's kernels
// may use, since they are compiled with -fmad=false).
//
//   gpu_attention_baseline [--seq 1024,2048] [--d 64] [--heads 16] [--mask none|causal]
//                          [--repeats 5] [--csv FILE]
//
// Before timing it checks itself: at seq 96, 2 heads, against a double-precision CPU reference
// (relative error of every output cell below 1e-4; exit 1 otherwise). Figures: median ms over the
// repeats (CUDA events around the three launches), TFLOP/s at the dense count 4·seq²·d·heads (also
// for the causal mask, as flashproof's bench counts), the fraction of both measured peaks, and the
// device bytes the run holds. scripts/gpu-check builds it with nvcc and runs it on the GPU machine.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cuda_check.h"

const char* const kCudaProgram = "gpu_attention_baseline";

namespace {

#define CHECK_CUBLAS(x)                                                                    \
  do {                                                                                     \
    cublasStatus_t s_ = (x);                                                               \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                     \
      std::fprintf(stderr, "gpu_attention_baseline: %s failed: status %d\n", #x, (int)s_); \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

// ---- device peak ---------------------------------------------------------------------------------

constexpr int kChains = 8;
constexpr int kPeakIters = 4096;

__global__ void peak_fma(float* out, float b, float c) {
  float a[kChains];
  for (int j = 0; j < kChains; ++j) a[j] = threadIdx.x * 1e-3f + j;
  for (int i = 0; i < kPeakIters; ++i)
#pragma unroll
    for (int j = 0; j < kChains; ++j) a[j] = fmaf(a[j], b, c);
  float s = 0;
  for (int j = 0; j < kChains; ++j) s += a[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void peak_mul_add(float* out, float b, float c) {
  float a[kChains];
  for (int j = 0; j < kChains; ++j) a[j] = threadIdx.x * 1e-3f + j;
  for (int i = 0; i < kPeakIters; ++i)
#pragma unroll
    for (int j = 0; j < kChains; ++j) a[j] = __fadd_rn(__fmul_rn(a[j], b), c);
  float s = 0;
  for (int j = 0; j < kChains; ++j) s += a[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// GFLOP/s of the better of 5 launches filling the device.
template <class K>
double measure_peak(K kernel, int sms) {
  const int block = 256, grid = sms * 8;
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, sizeof(float) * block * grid));
  cudaEvent_t t0, t1;
  CHECK_CUDA(cudaEventCreate(&t0));
  CHECK_CUDA(cudaEventCreate(&t1));
  kernel<<<grid, block>>>(out, 0.999f, 1e-3f);
  CHECK_CUDA(cudaDeviceSynchronize());
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    CHECK_CUDA(cudaEventRecord(t0));
    kernel<<<grid, block>>>(out, 0.999f, 1e-3f);
    CHECK_CUDA(cudaEventRecord(t1));
    CHECK_CUDA(cudaEventSynchronize(t1));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, t0, t1));
    const double flops = 2.0 * kChains * kPeakIters * double(block) * grid;
    best = std::max(best, flops / (ms * 1e-3) / 1e9);
  }
  CHECK_CUDA(cudaFree(out));
  return best;
}

// ---- the composed attention ------------------------------------------------------------------------

__global__ void fill_uniform(float* x, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)(i * 2654435761ull) ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    x[i] = (h >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

// One block per score row: p = softmax(scale·s + mask) in place (masked cells: -inf, so exp gives 0;
// a row with every cell masked is NaN, as the composed program's).
__global__ void row_softmax(float* s, int seq, float scale, int causal) {
  __shared__ float red[32];
  float* row = s + (long long)blockIdx.x * seq;
  const int q = blockIdx.x % seq;
  float m = -INFINITY;
  for (int t = threadIdx.x; t < seq; t += blockDim.x) {
    const float x = (causal && t > q) ? -INFINITY : row[t] * scale;
    row[t] = x;
    m = fmaxf(m, x);
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
  __syncthreads();
  m = -INFINITY;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  float l = 0;
  for (int t = threadIdx.x; t < seq; t += blockDim.x) {
    const float e = expf(row[t] - m);
    row[t] = e;
    l += e;
  }
  for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = l;
  __syncthreads();
  l = 0;
  for (int w = 0; w < (int)(blockDim.x >> 5); ++w) l += red[w];
  for (int t = threadIdx.x; t < seq; t += blockDim.x) row[t] = row[t] / l;
}

struct Problem {
  int seq, d, heads;
  bool causal;
  float *q = nullptr, *k = nullptr, *v = nullptr, *s = nullptr, *o = nullptr;
  long long bytes = 0;
};

void alloc(Problem& p) {
  const long long qkv = (long long)p.heads * p.seq * p.d, sq = (long long)p.heads * p.seq * p.seq;
  CHECK_CUDA(cudaMalloc(&p.q, qkv * 4));
  CHECK_CUDA(cudaMalloc(&p.k, qkv * 4));
  CHECK_CUDA(cudaMalloc(&p.v, qkv * 4));
  CHECK_CUDA(cudaMalloc(&p.o, qkv * 4));
  CHECK_CUDA(cudaMalloc(&p.s, sq * 4));
  p.bytes = (4 * qkv + sq) * 4;
  fill_uniform<<<1024, 256>>>(p.q, qkv, 1u);
  fill_uniform<<<1024, 256>>>(p.k, qkv, 2u);
  fill_uniform<<<1024, 256>>>(p.v, qkv, 3u);
  CHECK_CUDA(cudaDeviceSynchronize());
}

void release(Problem& p) {
  cudaFree(p.q);
  cudaFree(p.k);
  cudaFree(p.v);
  cudaFree(p.o);
  cudaFree(p.s);
}

// Row-major per head: S = Q·Kᵀ (seq×seq), P = softmax(S), O = P·V (seq×d). cuBLAS is column-major:
// a row-major X is the column-major Xᵀ, so Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·Pᵀ.
void run(cublasHandle_t h, const Problem& p) {
  const float one = 1, zero = 0;
  const long long qkv = (long long)p.seq * p.d, sq = (long long)p.seq * p.seq;
  CHECK_CUBLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, p.seq, p.seq, p.d, &one, p.k, p.d, qkv,
                                         p.q, p.d, qkv, &zero, p.s, p.seq, sq, p.heads));
  row_softmax<<<p.heads * p.seq, 256>>>(p.s, p.seq, 1.0f / std::sqrt((float)p.d), p.causal ? 1 : 0);
  CHECK_CUBLAS(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, p.d, p.seq, p.seq, &one, p.v, p.d, qkv, p.s,
                                         p.seq, sq, &zero, p.o, p.d, qkv, p.heads));
}

// The output against a double-precision reference on the CPU; returns false on a mismatch.
bool self_check(cublasHandle_t h, bool causal) {
  Problem p{96, 32, 2, causal};
  alloc(p);
  run(h, p);
  CHECK_CUDA(cudaDeviceSynchronize());
  const long long qkv = (long long)p.heads * p.seq * p.d;
  std::vector<float> q(qkv), k(qkv), v(qkv), o(qkv);
  CHECK_CUDA(cudaMemcpy(q.data(), p.q, qkv * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(k.data(), p.k, qkv * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(v.data(), p.v, qkv * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(o.data(), p.o, qkv * 4, cudaMemcpyDeviceToHost));
  release(p);
  double worst = 0;
  const double scale = 1.0 / std::sqrt((double)p.d);
  for (int hd = 0; hd < p.heads; ++hd)
    for (int i = 0; i < p.seq; ++i) {
      const long long base = (long long)hd * p.seq * p.d;
      std::vector<double> s(p.seq);
      double m = -INFINITY, l = 0;
      for (int t = 0; t < p.seq; ++t) {
        double x = 0;
        for (int c = 0; c < p.d; ++c) x += (double)q[base + (long long)i * p.d + c] * k[base + (long long)t * p.d + c];
        s[t] = (causal && t > i) ? -INFINITY : x * scale;
        m = std::max(m, s[t]);
      }
      for (int t = 0; t < p.seq; ++t) l += (s[t] = std::exp(s[t] - m));
      for (int c = 0; c < p.d; ++c) {
        double ref = 0, mag = 0;
        for (int t = 0; t < p.seq; ++t) {
          ref += s[t] / l * v[base + (long long)t * p.d + c];
          mag += s[t] / l * std::fabs(v[base + (long long)t * p.d + c]);
        }
        worst = std::max(worst, std::fabs(o[base + (long long)i * p.d + c] - ref) / std::max(mag, 1e-30));
      }
    }
  std::printf("self-check (seq 96, d 32, 2 heads, mask %s): worst error %.3g of the magnitude (limit 1e-4)\n",
              causal ? "causal" : "none", worst);
  return worst < 1e-4;
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1 || v > 1 << 20) {
      std::fprintf(stderr, "gpu_attention_baseline: --seq: expected lengths like 1024,2048, found '%s'\n", s);
      std::exit(64);
    }
    out.push_back((int)v);
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

int int_arg(const char* name, const char* v, int lo, int hi) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (!*v || *end || x < lo || x > hi) {
    std::fprintf(stderr, "gpu_attention_baseline: %s: expected an integer in %d..%d, found '%s'\n", name, lo, hi, v);
    std::exit(64);
  }
  return (int)x;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> seqs{1024, 2048};
  int d = 64, heads = 16, repeats = 5;
  bool causal = false;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("usage: %s [--seq 1024,2048] [--d 64] [--heads 16] [--mask none|causal] [--repeats 5] [--csv FILE]\n",
                  argv[0]);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gpu_attention_baseline: %s needs a value (see --help)\n", a.c_str());
      return 64;
    }
    const char* v = argv[++i];
    if (a == "--seq") seqs = parse_list(v);
    else if (a == "--d") d = int_arg("--d", v, 1, 4096);
    else if (a == "--heads") heads = int_arg("--heads", v, 1, 4096);
    else if (a == "--repeats") repeats = int_arg("--repeats", v, 1, 1000);
    else if (a == "--csv") csv = v;
    else if (a == "--mask" && (std::strcmp(v, "none") == 0 || std::strcmp(v, "causal") == 0)) causal = std::strcmp(v, "causal") == 0;
    else {
      std::fprintf(stderr, "gpu_attention_baseline: unknown option or value '%s %s' (see --help)\n", a.c_str(), v);
      return 64;
    }
  }
  int dev = 0, sms = 0, major = 0, minor = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  char name[256] = {0};
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  std::snprintf(name, sizeof name, "%s", prop.name);
  const double fma_peak = measure_peak(peak_fma, sms), mul_add_peak = measure_peak(peak_mul_add, sms);
  std::printf("device: %s (sm_%d%d, %d SMs); measured f32 peak %.1f GFLOP/s with FMA, %.1f GFLOP/s unfused\n", name,
              major, minor, sms, fma_peak, mul_add_peak);

  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  CHECK_CUBLAS(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  if (!self_check(h, false) || !self_check(h, true)) {
    std::fprintf(stderr, "gpu_attention_baseline: the self-check failed\n");
    return 1;
  }
  std::string rows = "seq,form,d,heads,mask,median_ms,min_ms,tflops,fma_peak_fraction,unfused_peak_fraction,device_bytes,"
                     "fma_peak_gflops,unfused_peak_gflops\n";
  std::printf("%6s  %-12s  %10s  %10s  %8s  %7s  %9s  %10s\n", "seq", "form", "median ms", "min ms", "TFLOP/s",
              "% FMA", "% unfused", "device MiB");
  for (int seq : seqs) {
    Problem p{seq, d, heads, causal};
    alloc(p);
    cudaEvent_t t0, t1;
    CHECK_CUDA(cudaEventCreate(&t0));
    CHECK_CUDA(cudaEventCreate(&t1));
    run(h, p);  // warm-up
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<double> ms;
    for (int r = 0; r < repeats; ++r) {
      CHECK_CUDA(cudaEventRecord(t0));
      run(h, p);
      CHECK_CUDA(cudaEventRecord(t1));
      CHECK_CUDA(cudaEventSynchronize(t1));
      float x = 0;
      CHECK_CUDA(cudaEventElapsedTime(&x, t0, t1));
      ms.push_back(x);
    }
    CHECK_CUDA(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const double tflops = 4.0 * seq * (double)seq * d * heads / (median * 1e-3) / 1e12;
    std::printf("%6d  %-12s  %10.3f  %10.3f  %8.2f  %7.1f  %9.1f  %10.1f\n", seq, "cublas", median, ms.front(), tflops,
                100 * tflops * 1e3 / fma_peak, 100 * tflops * 1e3 / mul_add_peak, p.bytes / 1048576.0);
    char line[512];
    std::snprintf(line, sizeof line, "%d,cublas,%d,%d,%s,%.4f,%.4f,%.4f,%.5f,%.5f,%lld,%.1f,%.1f\n", seq, d, heads,
                  causal ? "causal" : "none", median, ms.front(), tflops, tflops * 1e3 / fma_peak,
                  tflops * 1e3 / mul_add_peak, p.bytes, fma_peak, mul_add_peak);
    rows += line;
    release(p);
    std::fflush(stdout);
  }
  cublasDestroy(h);
  if (!csv.empty()) {
    FILE* f = std::fopen(csv.c_str(), "w");
    if (!f || std::fputs(rows.c_str(), f) < 0 || std::fclose(f) != 0) {
      std::fprintf(stderr, "gpu_attention_baseline: cannot write %s\n", csv.c_str());
      return 73;
    }
    std::printf("wrote %s\n", csv.c_str());
  }
  return 0;
}
