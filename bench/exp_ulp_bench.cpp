// Accuracy and cost of flashproof's exps, measured against MPFR (160-bit): the maximum error in
// ulps of fp_exp64 on random doubles; of exp.f32 = fp_exp32 over f32 bit patterns with a stride
// (all 2^32 with stride 1, see FLASHPROOF_EXP_F32_STRIDE below), with the worst input, and, on the
// same patterns, whether fp_exp32 compiled as the C executor compiles it (vectorized, AVX-512 here)
// and with vectorization off gives the library's bits; of exp.f16/bf16 (fp_exp32 rounded) over
// every f16/bf16 input. Counters: max_ulp (error against the exact value, in ulps of the exact
// value's binade at the result's precision), misrounded (results that differ from the correctly
// rounded one), checked (inputs compared), vector_differs / scalar_differs (patterns where a JIT
// form's bits differ from the library's), nonmonotone (stride 1 only: consecutive inputs whose
// results go the wrong way). BM_ExpF32Cost: ns per element of a loop of fp_exp32 compiled scalar
// and vectorized, and of the previous exp.f32 (fp_exp64 rounded), median of interleaved rounds.
//
// FLASHPROOF_EXP_F32_STRIDE=1 exp_ulp_bench --benchmark_filter=Env runs one extra f32 sweep with
// that stride (the exhaustive figure in docs/semantics.md was measured that way).

#include <benchmark/benchmark.h>
#include <mpfr.h>
#include <time.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/numerics.h"
#include "exec/jit.h"
#include "exec/numerics_text.h"

namespace fp {
namespace {

constexpr mpfr_prec_t kRefBits = 160;

// Parameters of a binary format for ulp measurement.
struct Format {
  int prec_bits;  // significand bits, implicit bit included
  int emin;       // exponent of the smallest normal
  int emax;       // exponent of the largest finite value
};
constexpr Format kF64{53, -1022, 1023}, kF32{24, -126, 127}, kF16{11, -14, 15}, kBF16{8, -126, 127};

Format format_of(Prec p) {
  switch (p) {
    case Prec::F64:
      return kF64;
    case Prec::F32:
      return kF32;
    case Prec::F16:
      return kF16;
    case Prec::BF16:
      return kBF16;
    case Prec::I32:
      break;
  }
  return kF64;
}

// Error statistics of one sweep.
struct Stats {
  double max_ulp = 0;
  double worst_x = 0;
  std::int64_t misrounded = 0;
  std::int64_t checked = 0;
};

// Compares `got` (a value at precision p, or binary64 when p is F64) with exp(x): the error in ulps
// of the exact result, and whether `got` is the correctly rounded exp(x).
class ExpReference {
 public:
  ExpReference() { mpfr_inits2(kRefBits, exact_, diff_, (mpfr_ptr) nullptr); }
  ~ExpReference() { mpfr_clears(exact_, diff_, (mpfr_ptr) nullptr); }
  ExpReference(const ExpReference&) = delete;
  ExpReference& operator=(const ExpReference&) = delete;

  void check(double x, double got, Prec p, Stats& s) {
    mpfr_set_d(exact_, x, MPFR_RNDN);
    mpfr_exp(exact_, exact_, MPFR_RNDN);
    ++s.checked;
    const double correct = correctly_rounded(p);
    if (std::bit_cast<std::uint64_t>(correct) != std::bit_cast<std::uint64_t>(got)) ++s.misrounded;
    const Format f = format_of(p);
    if (std::isinf(got)) {
      // A spurious overflow counts as the value 2^(emax + 1) (binary64: by misrounded only).
      if (std::isinf(correct) || p == Prec::F64) return;
      got = std::ldexp(1.0, f.emax + 1);
    }
    const long e = mpfr_get_exp(exact_);  // exact in [2^(e-1), 2^e)
    const long ulp_exp = std::max<long>(e - 1, f.emin) - (f.prec_bits - 1);
    mpfr_set_d(diff_, got, MPFR_RNDN);
    mpfr_sub(diff_, diff_, exact_, MPFR_RNDN);
    mpfr_abs(diff_, diff_, MPFR_RNDN);
    mpfr_mul_2si(diff_, diff_, -ulp_exp, MPFR_RNDN);
    record(mpfr_get_d(diff_, MPFR_RNDN), x, s);
  }

  // exp.f32 checks, fast: long double expl (error ~2^-63 relative, 2^-40 f32 ulps) decides both
  // the error and the correct rounding unless expl lands within 2^-56 (relative) of a binary32
  // midpoint, where the 160-bit MPFR value decides instead.
  void check_f32(double x, double got, Stats& s) {
    const long double e = expl(static_cast<long double>(x));
    const float f = static_cast<float>(e);
    if (std::isinf(f) || f == 0 || near_midpoint(e, f)) return check(x, got, Prec::F32, s);
    ++s.checked;
    if (std::bit_cast<std::uint64_t>(static_cast<double>(f)) != std::bit_cast<std::uint64_t>(got))
      ++s.misrounded;
    int ex = 0;
    std::frexp(e, &ex);  // e in [2^(ex-1), 2^ex)
    const long double ulp = std::ldexp(1.0L, std::max(ex - 1, kF32.emin) - (kF32.prec_bits - 1));
    record(static_cast<double>(std::fabs(static_cast<long double>(got) - e) / ulp), x, s);
  }

 private:
  // The exact value rounded once to p: to binary64 by MPFR, to narrower formats by rounding the
  // 160-bit value to p's significand width and then clamping exponents (subnormals, overflow).
  double correctly_rounded(Prec p) {
    if (p == Prec::F64) return mpfr_get_d(exact_, MPFR_RNDN);
    if (p == Prec::F32) return static_cast<double>(mpfr_get_flt(exact_, MPFR_RNDN));
    // f16/bf16: exact values are far from the 160-bit grid's midpoints, so rounding the 160-bit
    // value to binary64 first cannot change the final RNE result.
    return round_to(p, mpfr_get_d(exact_, MPFR_RNDN));
  }

  static bool near_midpoint(long double e, float f) {
    const float other = std::nextafter(f, static_cast<long double>(f) < e ? INFINITY : -INFINITY);
    const long double mid = (static_cast<long double>(f) + other) / 2;
    return std::fabs(e - mid) < std::ldexp(std::fabs(e), -56);
  }

  static void record(double ulps, double x, Stats& s) {
    if (ulps > s.max_ulp) {
      s.max_ulp = ulps;
      s.worst_x = x;
    }
  }

  mpfr_t exact_, diff_;
};

void set_counters(benchmark::State& state, const Stats& s) {
  state.counters["max_ulp"] = s.max_ulp;
  state.counters["misrounded"] = static_cast<double>(s.misrounded);
  state.counters["checked"] = static_cast<double>(s.checked);
  char label[96];
  std::snprintf(label, sizeof label, "max %.9f ulp at x = %a", s.max_ulp, s.worst_x);
  state.SetLabel(label);
}

// fp_exp32 as generated code computes it: a loop over an array, compiled by the JIT with the C
// executor's flags (vectorized), with vectorization off (scalar), and the previous exp.f32 (fp_exp64
// rounded to f32) for the cost comparison.
struct JitLoops {
  using Loop = void (*)(const float*, float*, long);
  Loop vector = nullptr, scalar = nullptr, old_vector = nullptr;
  std::shared_ptr<void> keep[2];
};

JitLoops compile_loops() {
  const std::string src = std::string("#include <stddef.h>\n") + numerics_c_text() + R"(
void loop_exp32(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_exp32(x[i]); }
void loop_old_exp_f32(const float* x, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = (float)fpc_exp64((double)x[i]);
}
)";
  JitOptions vec;
  vec.flags = default_c_flags();
  JitOptions sca = vec;
  sca.flags =
      "-O3 -march=native -ffp-contract=off -fno-fast-math -fno-math-errno -fno-tree-vectorize -fPIC -shared";
  sca.flags_from_user = true;
  JitResult v = jit_compile_c(src, vec), s = jit_compile_c(src, sca);
  JitLoops l;
  l.vector = reinterpret_cast<JitLoops::Loop>(v.object->symbol("loop_exp32"));
  l.old_vector = reinterpret_cast<JitLoops::Loop>(v.object->symbol("loop_old_exp_f32"));
  l.scalar = reinterpret_cast<JitLoops::Loop>(s.object->symbol("loop_exp32"));
  l.keep[0] = v.object;
  l.keep[1] = s.object;
  return l;
}

struct SweepStats : Stats {
  std::int64_t vector_differs = 0, scalar_differs = 0, nonmonotone = 0;
};

// exp.f32 over the f32 bit patterns 0, stride, 2·stride, ... (NaNs: only the bitwise comparison of
// the JIT forms), in chunks: the JIT loops compute each chunk, the library the same patterns one
// by one. Inputs whose correctly rounded exp is known outright (x > 89: +inf; x < -104.5: +0;
// |x| < 2^-26: 1) are compared with it and measured only when they differ, so that the reference
// exp is only evaluated where it decides something (~560 M of the 2^32 patterns). The worst input
// is re-measured with MPFR alone at the end.
SweepStats sweep_f32(std::uint64_t stride) {
  const JitLoops jit = compile_loops();
  ExpReference ref;
  SweepStats s;
  constexpr std::size_t kChunk = 1 << 20;
  std::vector<float> xs(kChunk), yv(kChunk), ys(kChunk);
  float prev_x = 0, prev_y = 0;
  bool have_prev = false;
  for (std::uint64_t b0 = 0; b0 < (1ull << 32); b0 += stride * kChunk) {
    std::size_t n = 0;
    for (std::uint64_t b = b0; b < (1ull << 32) && n < kChunk; b += stride)
      xs[n++] = std::bit_cast<float>(static_cast<std::uint32_t>(b));
    jit.vector(xs.data(), yv.data(), static_cast<long>(n));
    jit.scalar(xs.data(), ys.data(), static_cast<long>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const float xf = xs[i], yf = fp_exp32(xf);
      s.vector_differs += std::bit_cast<std::uint32_t>(yv[i]) != std::bit_cast<std::uint32_t>(yf);
      s.scalar_differs += std::bit_cast<std::uint32_t>(ys[i]) != std::bit_cast<std::uint32_t>(yf);
      if (std::isnan(xf)) {
        have_prev = false;
        continue;
      }
      // Consecutive patterns: increasing x for x >= +0, decreasing for x <= -0.
      if (stride == 1 && have_prev && std::signbit(prev_x) == std::signbit(xf))
        s.nonmonotone += std::signbit(xf) ? yf > prev_y : yf < prev_y;
      prev_x = xf;
      prev_y = yf;
      have_prev = true;
      const double x = xf, got = yf;
      double known = -1;
      if (x > 89.0)
        known = INFINITY;
      else if (x < -104.5)
        known = 0.0;
      else if (std::fabs(x) < 0x1p-26)
        known = 1.0;
      if (known >= 0 && std::bit_cast<std::uint64_t>(got) == std::bit_cast<std::uint64_t>(known)) {
        ++s.checked;
        continue;
      }
      ref.check_f32(x, got, s);
    }
  }
  // The boundaries, whatever the stride: underflow to 0, overflow to inf, results next to 1.
  for (double x : {-104.0, -103.97, -87.34, 88.72, 88.73, 89.0, 0x1p-27, -0x1p-27, 0x1p-24, -0x1p-25}) {
    const double xf = round_to(Prec::F32, x);
    ref.check(xf, apply_unop(UnOp::Exp, Prec::F32, xf), Prec::F32, s);
  }
  // The worst input again, with the 160-bit reference only.
  Stats worst;
  ref.check(s.worst_x, fp_exp32(static_cast<float>(s.worst_x)), Prec::F32, worst);
  s.max_ulp = std::max(s.max_ulp, worst.max_ulp);
  return s;
}

void set_sweep_counters(benchmark::State& state, const SweepStats& s) {
  set_counters(state, s);
  state.counters["vector_differs"] = static_cast<double>(s.vector_differs);
  state.counters["scalar_differs"] = static_cast<double>(s.scalar_differs);
  state.counters["nonmonotone"] = static_cast<double>(s.nonmonotone);
}

void BM_ExpF32Ulp(benchmark::State& state) {
  SweepStats s;
  for (auto _ : state) s = sweep_f32(static_cast<std::uint64_t>(state.range(0)));
  set_sweep_counters(state, s);
}
BENCHMARK(BM_ExpF32Ulp)->Arg(65537)->Arg(4099)->Iterations(1)->Unit(benchmark::kSecond);

// Every input of a 16-bit format.
void BM_ExpNarrowUlp(benchmark::State& state, Prec p) {
  Stats s;
  for (auto _ : state) {
    ExpReference ref;
    s = Stats{};
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const auto h = static_cast<std::uint16_t>(b);
      const double x = p == Prec::F16 ? f16_value(h) : bf16_value(h);
      if (std::isnan(x)) continue;
      ref.check(x, apply_unop(UnOp::Exp, p, x), p, s);
    }
  }
  set_counters(state, s);
}
BENCHMARK_CAPTURE(BM_ExpNarrowUlp, f16, Prec::F16)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ExpNarrowUlp, bf16, Prec::BF16)->Iterations(1)->Unit(benchmark::kMillisecond);

// fp_exp64 on n random doubles from four ranges: the whole finite-result domain, |x| < 1, deep
// underflow (subnormal results) and near overflow.
void BM_Exp64Ulp(benchmark::State& state) {
  Stats s;
  for (auto _ : state) {
    ExpReference ref;
    s = Stats{};
    std::mt19937_64 g(2026);
    std::uniform_real_distribution<double> whole(-745.2, 709.79), unit(-1.0, 1.0), deep(-745.2, -708.0),
        high(700.0, 709.79);
    for (std::int64_t i = 0; i < state.range(0); ++i) {
      double x = 0;
      switch (i % 4) {
        case 0:
          x = whole(g);
          break;
        case 1:
          x = unit(g);
          break;
        case 2:
          x = deep(g);
          break;
        default:
          x = high(g);
          break;
      }
      ref.check(x, fp_exp64(x), Prec::F64, s);
    }
  }
  set_counters(state, s);
}
BENCHMARK(BM_Exp64Ulp)->Arg(1 << 20)->Iterations(1)->Unit(benchmark::kSecond);

// Cost of one call in a dependent chain: fp_exp64 (exp.f64), fp_exp32 (exp.f32) and libm's exp
// for comparison.
void BM_ExpCall(benchmark::State& state, double (*exp_fn)(double)) {
  double x = -3.0, acc = 0;
  for (auto _ : state) {
    acc += exp_fn(x);
    x += 1e-6;
    benchmark::DoNotOptimize(acc);
  }
}
double libm_exp(double x) {
  return std::exp(x);
}
double exp32_as_double(double x) {
  return fp_exp32(static_cast<float>(x));
}
BENCHMARK_CAPTURE(BM_ExpCall, fp_exp64, fp_exp64);
BENCHMARK_CAPTURE(BM_ExpCall, fp_exp32, exp32_as_double);
BENCHMARK_CAPTURE(BM_ExpCall, libm, libm_exp);

// This thread's CPU time: on a shared machine, wall-clock rounds also time the other processes.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// ns (thread CPU time) per element of a loop y[i] = exp(x[i]) over 16 Ki floats in [-20, 4] (the arguments of
// a softmax; in and out stay in cache), one thread: fp_exp32 compiled scalar and vectorized (the C executor's
// flags), and the previous exp.f32 (fp_exp64 rounded) vectorized. 41 rounds, each running every form 16 times
// over the array in rotating order; counters: median ns/element (and the minimum, _min).
void BM_ExpF32Cost(benchmark::State& state) {
  const JitLoops jit = compile_loops();
  constexpr long kN = 1 << 14;
  constexpr int kRounds = 41, kReps = 16;
  std::vector<float> x(kN), y(kN);
  std::mt19937_64 g(5);
  std::uniform_real_distribution<float> d(-20.0f, 4.0f);
  for (float& v : x) v = d(g);
  const JitLoops::Loop forms[3] = {jit.scalar, jit.vector, jit.old_vector};
  std::vector<double> ns[3];
  for (auto _ : state) {
    for (int f = 0; f < 3; ++f) forms[f](x.data(), y.data(), kN);  // warm-up
    for (int r = 0; r < kRounds; ++r)
      for (int k = 0; k < 3; ++k) {
        const int f = (r + k) % 3;
        const double t0 = thread_seconds();
        for (int rep = 0; rep < kReps; ++rep) forms[f](x.data(), y.data(), kN);
        const double sec = thread_seconds() - t0;
        ns[f].push_back(sec * 1e9 / (static_cast<double>(kN) * kReps));
        benchmark::DoNotOptimize(y.data());
      }
  }
  const char* names[3] = {"scalar_ns", "vector_ns", "old_exp_f32_vector_ns"};
  for (int f = 0; f < 3; ++f) {
    std::sort(ns[f].begin(), ns[f].end());
    state.counters[names[f]] = ns[f][ns[f].size() / 2];
    state.counters[std::string(names[f]) + "_min"] = ns[f].front();  // the least disturbed round
  }
}
BENCHMARK(BM_ExpF32Cost)->Iterations(1)->Unit(benchmark::kMillisecond);

// The environment-selected f32 sweep (registered only when FLASHPROOF_EXP_F32_STRIDE is set).
const bool kEnvSweepRegistered = [] {
  const char* env = std::getenv("FLASHPROOF_EXP_F32_STRIDE");
  if (env == nullptr) return false;
  const long long stride = std::atoll(env);
  if (stride <= 0) return false;
  benchmark::RegisterBenchmark("BM_ExpF32UlpEnv",
                               [stride](benchmark::State& state) {
                                 SweepStats s;
                                 for (auto _ : state) s = sweep_f32(static_cast<std::uint64_t>(stride));
                                 set_sweep_counters(state, s);
                               })
      ->Iterations(1)
      ->Unit(benchmark::kSecond);
  return true;
}();

}  // namespace
}  // namespace fp
