// Accuracy of flashproof's exp, measured against MPFR (correctly rounded, 160-bit): the maximum
// error in ulps of fp_exp64 on random doubles, and of exp.f32/f16/bf16 (= round_to(p,
// fp_exp64(x))) over f32 bit patterns with a stride (all 2^32 with stride 1: minutes, see
// FLASHPROOF_EXP_F32_STRIDE below) and over every f16/bf16 input. Counters: max_ulp (error of the
// result against the exact value, in ulps of the result's precision), misrounded (results that
// differ from the correctly rounded one), checked (inputs compared). Also the cost of one call.
//
// FLASHPROOF_EXP_F32_STRIDE=1 exp_ulp_bench --benchmark_filter=Env runs one extra f32 sweep with
// that stride (the exhaustive figure in docs/semantics.md was measured that way).

#include <benchmark/benchmark.h>
#include <mpfr.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "core/numerics.h"

namespace fp {
namespace {

constexpr mpfr_prec_t kRefBits = 160;

// Parameters of a binary format for ulp measurement.
struct Format {
  int prec_bits;  // significand bits, implicit bit included
  int emin;       // exponent of the smallest normal
};
constexpr Format kF64{53, -1022}, kF32{24, -126}, kF16{11, -14}, kBF16{8, -126};

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
    if (std::isinf(got) || mpfr_zero_p(exact_)) return;  // overflow: counted by misrounded only
    const Format f = format_of(p);
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

// exp.f32 over the f32 bit patterns 0, stride, 2·stride, ... (NaNs skipped), plus the boundary
// inputs. Inputs whose correctly rounded exp is known outright are compared with it directly
// (x > 89: +inf; x < -104.5: +0; |x| < 2^-26: 1; their errors are below 0.25 ulp), so that the
// reference exp is only evaluated where it decides something (~560 M of the 2^32 patterns).
Stats sweep_f32(std::uint64_t stride) {
  ExpReference ref;
  Stats s;
  for (std::uint64_t b = 0; b < (1ull << 32); b += stride) {
    const double x = static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
    if (std::isnan(x)) continue;
    const double got = apply_unop(UnOp::Exp, Prec::F32, x);
    double known = -1;
    if (x > 89.0)
      known = INFINITY;
    else if (x < -104.5)
      known = 0.0;
    else if (std::fabs(x) < 0x1p-26)
      known = 1.0;
    if (known >= 0) {
      ++s.checked;
      if (std::bit_cast<std::uint64_t>(got) != std::bit_cast<std::uint64_t>(known)) ++s.misrounded;
      continue;
    }
    ref.check_f32(x, got, s);
  }
  // The boundaries, whatever the stride: underflow to 0, overflow to inf, results next to 1.
  for (double x : {-104.0, -103.97, -87.34, 88.72, 88.73, 89.0, 0x1p-27, -0x1p-27, 0x1p-24, -0x1p-25}) {
    const double xf = round_to(Prec::F32, x);
    ref.check(xf, apply_unop(UnOp::Exp, Prec::F32, xf), Prec::F32, s);
  }
  return s;
}

void BM_ExpF32Ulp(benchmark::State& state) {
  Stats s;
  for (auto _ : state) s = sweep_f32(static_cast<std::uint64_t>(state.range(0)));
  set_counters(state, s);
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

// Cost of one call in a dependent chain: fp_exp64, fp_exp_narrow (what exp.f32/f16/bf16 use) and
// libm's exp for comparison.
void BM_ExpCall(benchmark::State& state, double (*exp_fn)(double)) {
  double x = -3.0, acc = 0;
  for (auto _ : state) {
    acc += exp_fn(x);
    x += 1e-6;
    benchmark::DoNotOptimize(acc);
  }
}
double libm_exp(double x) { return std::exp(x); }
BENCHMARK_CAPTURE(BM_ExpCall, fp_exp64, fp_exp64);
BENCHMARK_CAPTURE(BM_ExpCall, fp_exp_narrow, fp_exp_narrow);
BENCHMARK_CAPTURE(BM_ExpCall, libm, libm_exp);

// fp_exp_narrow (what exp.f32/f16/bf16 compute) against fp_exp64 rounded, on every f32 bit
// pattern with a stride (4099 by default; FLASHPROOF_EXP_NARROW_STRIDE=1 checks every input,
// about 200 s): counter differing must be 0.
void BM_ExpNarrowMatchesF64(benchmark::State& state) {
  std::uint64_t stride = 4099;
  if (const char* env = std::getenv("FLASHPROOF_EXP_NARROW_STRIDE"); env && std::atoll(env) > 0)
    stride = static_cast<std::uint64_t>(std::atoll(env));
  std::int64_t checked = 0, differing = 0;
  for (auto _ : state) {
    checked = differing = 0;
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += stride) {
      const double x = std::bit_cast<float>(static_cast<std::uint32_t>(b));
      for (Prec p : {Prec::F32, Prec::F16, Prec::BF16}) {
        const double a = round_to(p, fp_exp_narrow(x)), w = round_to(p, fp_exp64(x));
        differing += std::bit_cast<std::uint64_t>(a) != std::bit_cast<std::uint64_t>(w) && !(a != a && w != w);
      }
      ++checked;
    }
  }
  state.counters["checked"] = static_cast<double>(checked);
  state.counters["differing"] = static_cast<double>(differing);
}
BENCHMARK(BM_ExpNarrowMatchesF64)->Iterations(1)->Unit(benchmark::kSecond);

// The environment-selected f32 sweep (registered only when FLASHPROOF_EXP_F32_STRIDE is set).
const bool kEnvSweepRegistered = [] {
  const char* env = std::getenv("FLASHPROOF_EXP_F32_STRIDE");
  if (env == nullptr) return false;
  const long long stride = std::atoll(env);
  if (stride <= 0) return false;
  benchmark::RegisterBenchmark("BM_ExpF32UlpEnv",
                               [stride](benchmark::State& state) {
                                 Stats s;
                                 for (auto _ : state) s = sweep_f32(static_cast<std::uint64_t>(stride));
                                 set_counters(state, s);
                               })
      ->Iterations(1)
      ->Unit(benchmark::kSecond);
  return true;
}();

}  // namespace
}  // namespace fp
