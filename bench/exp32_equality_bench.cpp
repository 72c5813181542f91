// fp_exp32 (core/numerics_c.h) against its previous, literal form (issue 11): the same bits on every
// f32 input, and the cost of each. The previous form is frozen below as text; both are compiled by
// the JIT with the C executor's flags (default_c_flags: vectorized, AVX-512 where the host has it).
//
// BM_Exp32EqualityAll (opt-in, registered only when FLASHPROOF_EXP32_EQUALITY_ALL is set: about a
// minute and a half; FLASHPROOF_EXP32_EQUALITY_ALL=1 exp32_equality_bench) runs all 2^32 bit
// patterns, NaNs included, through the previous form (vectorized) and compares bitwise with: the
// current form vectorized, compiled with vectorization off, vectorized in its CUDA variant (the
// shifter rounding, FPC_EXP32_USE_SHIFTER), and the library's fp_exp32 (the interpreter's, compiled
// by the host compiler with the project's flags). Counters: checked, and the mismatches of each.
//
// BM_Exp32Cost: ns (thread CPU time) per element of a loop y[i] = exp(x[i]) over 16 Ki floats in
// [-20, 4] (in and out stay in cache), previous and current form vectorized; 41 interleaved rounds of
// 32 passes each, median (and minimum, _min).

#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/numerics.h"
#include "exec/jit.h"
#include "exec/numerics_text.h"

namespace fp {
namespace {

// fpc_exp32 as it was before issue 11 (commit dd6cea5), the literal step-by-step definition of
// docs/semantics.md section 5: clamps, conversion of kf, two-step scaling, NaN select.
const char* const kPreviousExp32 = R"(
FPC_FN float fpc_exp32_previous(float x) {
  const float lo_clamped = x > FPC_EXP32_LOWEST ? x : FPC_EXP32_LOWEST;
  const float xs = lo_clamped < FPC_EXP32_HIGHEST ? lo_clamped : FPC_EXP32_HIGHEST;
  const float kf = (xs * FPC_EXP32_INV_LN2 + FPC_EXP32_SHIFTER) - FPC_EXP32_SHIFTER;
  const fpc_i32 k = (fpc_i32)kf;
  const float rh = xs - kf * FPC_EXP32_LN2_HI;
  const float rl = kf * FPC_EXP32_LN2_LO;
  const float r = rh - rl;
  const float q =
      (r * r) *
      (FPC_EXP32_C2 +
       r * (FPC_EXP32_C3 + r * (FPC_EXP32_C4 + r * (FPC_EXP32_C5 + r * (FPC_EXP32_C6 + r * FPC_EXP32_C7)))));
  const float y = 1.0f + (rh + (q - rl));
  const fpc_u32 kb = (fpc_u32)(k + 254);
  const fpc_u32 e1 = kb >> 1;
  const fpc_u32 e2 = kb - e1;
  const float s1 = fpc_f32_from_bits(e1 << 23);
  const float s2 = fpc_f32_from_bits(e2 << 23);
  const float res = (y * s1) * s2;
  return x != x ? x + x : res;
}
void loop_previous(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_exp32_previous(x[i]); }
void loop_current(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_exp32(x[i]); }
)";

using Loop = void (*)(const float*, float*, long);

struct Compiled {
  Loop previous = nullptr, current = nullptr;
  std::shared_ptr<void> keep;
};

Compiled compile(const std::string& prefix, const std::string& flags) {
  const std::string src = prefix + "#include <stddef.h>\n" + numerics_c_text() + kPreviousExp32;
  JitOptions o;
  o.flags = flags;
  o.flags_from_user = flags != default_c_flags();
  const JitResult r = jit_compile_c(src, o);
  Compiled c;
  c.previous = reinterpret_cast<Loop>(r.object->symbol("loop_previous"));
  c.current = reinterpret_cast<Loop>(r.object->symbol("loop_current"));
  c.keep = r.object;
  return c;
}

void BM_Exp32EqualityAll(benchmark::State& state) {
  const Compiled vec = compile("", default_c_flags());
  const Compiled sca = compile("", default_c_flags() + " -fno-tree-vectorize");
  const Compiled shifter = compile("#define FPC_EXP32_USE_SHIFTER 1\n", default_c_flags());
  constexpr std::uint64_t kBlock = 1 << 16;
  std::vector<float> x(kBlock), want(kBlock), got(kBlock);
  std::int64_t checked = 0, vector_differs = 0, scalar_differs = 0, shifter_differs = 0, library_differs = 0;
  auto count = [&](std::int64_t& n) {
    for (std::uint64_t i = 0; i < kBlock; ++i)
      n += std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i]);
  };
  for (auto _ : state) {
    for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += kBlock) {
      for (std::uint64_t i = 0; i < kBlock; ++i)
        x[i] = std::bit_cast<float>(static_cast<std::uint32_t>(base + i));
      const long n = static_cast<long>(kBlock);
      vec.previous(x.data(), want.data(), n);
      vec.current(x.data(), got.data(), n);
      count(vector_differs);
      sca.current(x.data(), got.data(), n);
      count(scalar_differs);
      shifter.current(x.data(), got.data(), n);
      count(shifter_differs);
      for (std::uint64_t i = 0; i < kBlock; ++i) got[i] = fp_exp32(x[i]);
      count(library_differs);
      checked += n;
    }
  }
  state.counters["checked"] = static_cast<double>(checked);
  state.counters["vector_differs"] = static_cast<double>(vector_differs);
  state.counters["scalar_differs"] = static_cast<double>(scalar_differs);
  state.counters["shifter_differs"] = static_cast<double>(shifter_differs);
  state.counters["library_differs"] = static_cast<double>(library_differs);
}
const bool kEqualityAllRegistered = [] {
  if (std::getenv("FLASHPROOF_EXP32_EQUALITY_ALL") == nullptr) return false;
  benchmark::RegisterBenchmark("BM_Exp32EqualityAll", BM_Exp32EqualityAll)
      ->Iterations(1)
      ->Unit(benchmark::kSecond);
  return true;
}();

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void BM_Exp32Cost(benchmark::State& state) {
  const Compiled vec = compile("", default_c_flags());
  constexpr long kN = 1 << 14;
  constexpr int kRounds = 41, kReps = 32;
  std::vector<float> x(kN), y(kN);
  std::mt19937_64 g(5);
  std::uniform_real_distribution<float> d(-20.0f, 4.0f);
  for (float& v : x) v = d(g);
  const Loop forms[2] = {vec.previous, vec.current};
  std::vector<double> ns[2];
  for (auto _ : state) {
    for (const Loop f : forms) f(x.data(), y.data(), kN);  // warm-up
    for (int r = 0; r < kRounds; ++r)
      for (int k = 0; k < 2; ++k) {
        const int f = (r + k) % 2;
        const double t0 = thread_seconds();
        for (int rep = 0; rep < kReps; ++rep) forms[f](x.data(), y.data(), kN);
        const double sec = thread_seconds() - t0;
        ns[f].push_back(sec * 1e9 / (static_cast<double>(kN) * kReps));
        benchmark::DoNotOptimize(y.data());
      }
  }
  const char* names[2] = {"previous_ns", "current_ns"};
  for (int f = 0; f < 2; ++f) {
    std::sort(ns[f].begin(), ns[f].end());
    state.counters[names[f]] = ns[f][ns[f].size() / 2];
    state.counters[std::string(names[f]) + "_min"] = ns[f].front();
  }
}
BENCHMARK(BM_Exp32Cost)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fp
