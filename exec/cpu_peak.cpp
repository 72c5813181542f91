// The f32 FMA-throughput kernel (exec/cpu_peak.h).

#include "exec/cpu_peak.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "exec/c_executor.h"
#include "exec/jit.h"

namespace fp {

namespace {

// Independent accumulator chains per thread, enough to cover FMA latency x ports on current x86
// cores and few enough to stay in registers with the two operands: 16 with AVX-512's 32 registers,
// 12 with AVX2's 16 (16 chains there spilled two of them to the stack every iteration, and the
// store-to-load round trips held the probe at 50 of the 88 GFLOP/s a Zen 3 core does). The
// result is summed and returned so nothing is dead code.
constexpr const char* kKernel = R"FPX(
#include <stdint.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#define FPX_LANES 16
#define FPX_CHAINS 16
typedef __m512 fpx_v;
#define FPX_SET1(x) _mm512_set1_ps(x)
#define FPX_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define FPX_MUL(a, b) _mm512_mul_ps(a, b)
#define FPX_ADD(a, b) _mm512_add_ps(a, b)
static float fpx_hsum(fpx_v v) { return _mm512_reduce_add_ps(v); }
const char* fpx_peak_kind(void) { return "avx512 fma"; }
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FPX_LANES 8
#define FPX_CHAINS 12
typedef __m256 fpx_v;
#define FPX_SET1(x) _mm256_set1_ps(x)
#define FPX_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define FPX_MUL(a, b) _mm256_mul_ps(a, b)
#define FPX_ADD(a, b) _mm256_add_ps(a, b)
static float fpx_hsum(fpx_v v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
const char* fpx_peak_kind(void) { return "avx2 fma"; }
#else
#include <math.h>
#define FPX_LANES 1
#define FPX_CHAINS 16
typedef float fpx_v;
#define FPX_SET1(x) (x)
#define FPX_FMA(a, b, c) fmaf(a, b, c)
#define FPX_MUL(a, b) ((a) * (b))
#define FPX_ADD(a, b) ((a) + (b))
static float fpx_hsum(fpx_v v) { return v; }
const char* fpx_peak_kind(void) { return "scalar fmaf"; }
#endif

int fpx_peak_lanes(void) { return FPX_LANES; }
int fpx_peak_chains(void) { return FPX_CHAINS; }

/* FPX_STEP(a) is one step of a chain: an FMA, or (UNFUSED) a multiply and a separate add, which
   is all flashproof's own code may use (-ffp-contract=off). */
#define FPX_KERNEL(NAME, STEP)                                                                        \
  float NAME(int64_t iters, int threads) {                                                            \
    float total = 0.0f;                                                                               \
    _Pragma("omp parallel num_threads(threads) reduction(+ : total)") {                              \
      fpx_v b = FPX_SET1(0.999999f), c = FPX_SET1(1e-7f);                                             \
      fpx_v a0 = FPX_SET1(1.0f), a1 = FPX_SET1(1.1f), a2 = FPX_SET1(1.2f), a3 = FPX_SET1(1.3f);       \
      fpx_v a4 = FPX_SET1(1.4f), a5 = FPX_SET1(1.5f), a6 = FPX_SET1(1.6f), a7 = FPX_SET1(1.7f);       \
      fpx_v a8 = FPX_SET1(1.8f), a9 = FPX_SET1(1.9f), a10 = FPX_SET1(2.0f), a11 = FPX_SET1(2.1f);     \
      fpx_v a12 = FPX_SET1(2.2f), a13 = FPX_SET1(2.3f), a14 = FPX_SET1(2.4f), a15 = FPX_SET1(2.5f);   \
      for (int64_t i = 0; i < iters; ++i) {                                                           \
        STEP(a0); STEP(a1); STEP(a2); STEP(a3); STEP(a4); STEP(a5); STEP(a6); STEP(a7);               \
        STEP(a8); STEP(a9); STEP(a10); STEP(a11);                                                     \
        if (FPX_CHAINS == 16) { STEP(a12); STEP(a13); STEP(a14); STEP(a15); }                         \
      }                                                                                               \
      total += fpx_hsum(a0) + fpx_hsum(a1) + fpx_hsum(a2) + fpx_hsum(a3) + fpx_hsum(a4) +             \
               fpx_hsum(a5) + fpx_hsum(a6) + fpx_hsum(a7) + fpx_hsum(a8) + fpx_hsum(a9) +             \
               fpx_hsum(a10) + fpx_hsum(a11);                                                         \
      if (FPX_CHAINS == 16) total += fpx_hsum(a12) + fpx_hsum(a13) + fpx_hsum(a14) + fpx_hsum(a15);   \
    }                                                                                                 \
    return total;                                                                                     \
  }
#define FPX_STEP_FMA(a) a = FPX_FMA(a, b, c)
#define FPX_STEP_UNFUSED(a) a = FPX_ADD(FPX_MUL(a, b), c)
/* Run `iters` iterations of FPX_CHAINS steps on each of `threads` threads; return a checksum. */
FPX_KERNEL(fpx_peak_run, FPX_STEP_FMA)
FPX_KERNEL(fpx_peak_run_unfused, FPX_STEP_UNFUSED)
)FPX";

}  // namespace

namespace {

using PeakKernel = float (*)(std::int64_t, int);

// The best of three timed runs of `run` sized to about `target_seconds` (after a warm-up that
// sizes it), in seconds, and the iterations it ran.
std::pair<double, std::int64_t> time_kernel(PeakKernel run, int threads, double target_seconds) {
  volatile float sink = 0;
  std::int64_t iters = 1 << 16;
  double secs = 0;
  for (;;) {  // grow until one run takes a tenth of the target (also the warm-up)
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + run(iters, threads);
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (secs > target_seconds / 10 || iters > (std::int64_t{1} << 40)) break;
    iters *= 4;
  }
  iters = static_cast<std::int64_t>(static_cast<double>(iters) * target_seconds / std::max(secs, 1e-6));
  double best = 1e300;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + run(iters, threads);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return {best, iters};
}

}  // namespace

PeakMeasurement measure_f32_peak(const ExecOptions& opts, double target_seconds) {
  JitOptions j;
  const char* env_cc = std::getenv("FLASHPROOF_CC");
  const char* env_flags = std::getenv("FLASHPROOF_CFLAGS");
  j.cc = !opts.cc.empty() ? opts.cc : (env_cc && *env_cc ? env_cc : "cc");
  j.flags = !opts.cflags.empty() ? opts.cflags : (env_flags && *env_flags ? env_flags : default_c_flags());
  j.flags_from_user = true;
  j.cache_dir = opts.cache_dir;
  j.use_cache = opts.use_cache;
  JitResult jit = jit_compile_c(kKernel, j);
  auto run = reinterpret_cast<PeakKernel>(jit.object->symbol("fpx_peak_run"));
  auto run_unfused = reinterpret_cast<PeakKernel>(jit.object->symbol("fpx_peak_run_unfused"));
  auto lanes = reinterpret_cast<int (*)()>(jit.object->symbol("fpx_peak_lanes"));
  auto chains = reinterpret_cast<int (*)()>(jit.object->symbol("fpx_peak_chains"));
  auto kind = reinterpret_cast<const char* (*)()>(jit.object->symbol("fpx_peak_kind"));
  if (!run || !run_unfused || !lanes || !chains || !kind) throw ExecError("the peak kernel lacks its entry points");
  PeakMeasurement m;
  m.threads = resolve_c_threads(opts.threads);
  m.instruction = kind();
  const double flops_per_iter = 2.0 * chains() * lanes() * m.threads;  // a step is 2 flops either way
  const auto [secs, iters] = time_kernel(run, m.threads, target_seconds);
  m.seconds = secs;
  m.gflops = flops_per_iter * static_cast<double>(iters) / secs / 1e9;
  const auto [usecs, uiters] = time_kernel(run_unfused, m.threads, target_seconds);
  m.unfused_gflops = flops_per_iter * static_cast<double>(uiters) / usecs / 1e9;
  return m;
}

}  // namespace fp
