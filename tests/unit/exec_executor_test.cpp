// The Executor interface and what every executor shares: the registry, input validation identical
// to interpret() (same exit codes, same messages), the numerics header compiled as strict C99 at
// -O3 -march=native computing exactly what the library computes (vectorized loops included), the
// JIT's content hash, and the executors' availability reporting.

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <random>

#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "jit_test_options.h"
#include "exec/cpu_peak.h"
#include "exec/executor.h"
#include "exec/interleaved_timing.h"
#include "exec/jit.h"
#include "exec/numerics_text.h"
#include "frontend/attention.h"

namespace fp {
namespace {

ExecOptions test_options() {
  ExecOptions o = testing::jit_test_options();
  o.source_name = "attn.fp";
  return o;
}

TEST(ExecExecutor, RegistryHasTheFourExecutorsAndRejectsUnknownNames) {
  EXPECT_EQ(executor_names(), (std::vector<std::string>{"interp", "c", "cuda", "cuda-emu"}));
  for (const auto& n : executor_names()) EXPECT_EQ(make_executor(n)->name(), n);
  EXPECT_TRUE(make_executor("interp")->available().ok);
  try {
    make_executor("fpga");
    ADD_FAILURE() << "unknown executor accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    EXPECT_NE(std::string(e.what()).find("'fpga'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("interp, c, cuda, cuda-emu"), std::string::npos);
  }
}

// The registry is the one list: names, descriptions (the command line's help texts) and factories.
TEST(ExecExecutor, RegistryEntriesNameDescribeAndMakeTheirExecutor) {
  std::vector<std::string> names;
  for (const ExecutorEntry& e : executor_registry()) {
    names.push_back(e.name);
    EXPECT_FALSE(std::string(e.description).empty()) << e.name;
    EXPECT_EQ(e.make(ExecOptions{})->name(), e.name);
  }
  EXPECT_EQ(names, executor_names());
  EXPECT_EQ(names.front(), "interp");  // the reference is listed first
}

// A program that records the order it ran in and reports a fixed compute time.
class RecordingProgram final : public CompiledProgram {
 public:
  RecordingProgram(int id, std::vector<int>& log, double seconds) : id_(id), log_(log), seconds_(seconds) {}
  TensorMap run(const TensorMap&) override {
    log_.push_back(id_);
    return {};
  }
  RunStats last_stats() const override { return RunStats{100 + id_, seconds_}; }

 private:
  int id_;
  std::vector<int>& log_;
  double seconds_;
};

TEST(InterleavedTiming, WarmsUpThenRotatesTheOrderEachRoundAndUsesTheExecutorsTime) {
  std::vector<int> log;
  RecordingProgram a(0, log, 0.5), b(1, log, 0.25);
  const std::vector<ProgramTimes> t = time_interleaved({&a, &b}, {}, 3);
  EXPECT_EQ(log, (std::vector<int>{0, 1, /*round 0*/ 0, 1, /*round 1*/ 1, 0, /*round 2*/ 0, 1}));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].seconds, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(t[1].median(), 0.25);
  EXPECT_EQ(t[1].min(), 0.25);
  EXPECT_EQ(t[0].peak_bytes, 100);
  EXPECT_EQ(t[1].peak_bytes, 101);
  ProgramTimes even;
  even.seconds = {4, 1, 3, 2};
  EXPECT_EQ(even.median(), 2.5);
  EXPECT_EQ(even.min(), 1);
}

// Runs `f` and returns (exit code, message) of the UserError it throws.
template <class F>
std::pair<int, std::string> user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return {e.code(), e.what()};
  }
  return {0, "no error"};
}

TEST(ExecExecutor, BadInputsAreRejectedExactlyAsByTheInterpreter) {
  AttentionSpec s;
  s.batch = 2;
  s.sq = 4;
  s.sk = 3;
  Routine r = build_attention(s);
  const TensorMap good = random_inputs(r, 1);
  std::vector<std::pair<std::string, TensorMap>> cases;
  {
    TensorMap m = good;
    m.erase("k");
    cases.emplace_back("missing k", m);
  }
  {
    TensorMap m = good;
    m["q"].dims = {2, 4, 1, 9};
    m["q"].data.resize(72);
    cases.emplace_back("q wrong dims", m);
  }
  {
    TensorMap m = good;
    m["v"].prec = Prec::F16;
    cases.emplace_back("v wrong precision", m);
  }
  {
    TensorMap m = good;
    m["v"].data.pop_back();
    cases.emplace_back("v short data", m);
  }
  {
    TensorMap m = good;
    m["q"].data[5] = 0.1;  // not an f32 value
    cases.emplace_back("q not representable", m);
  }
  auto c = make_executor("c", test_options())->compile(r);
  auto i = make_executor("interp", test_options())->compile(r);
  for (const auto& [what, in] : cases) {
    SCOPED_TRACE(what);
    const auto want = user_error([&] { interpret(r, in, InterpretOptions{"attn.fp"}); });
    EXPECT_NE(want.first, 0);
    EXPECT_EQ(user_error([&] { c->run(in); }), want);
    EXPECT_EQ(user_error([&] { i->run(in); }), want);
  }
  EXPECT_EQ(user_error([&] { interpret(r, cases[0].second); }).first, kExitMissingInput);
  EXPECT_NE(user_error([&] { c->run(cases[1].second); }).second.find("input 'q': expected f32[2,4,1,8]"),
            std::string::npos);
}

// core/numerics_c.h compiled as strict C99 by the system compiler, at the executors' optimization
// level (vectorized loops), computes bitwise what the C++ library computes.
TEST(ExecExecutor, NumericsHeaderAsStrictC99MatchesTheLibraryBitwise) {
  const std::string src = std::string("#include <stddef.h>\n") + numerics_c_text() + R"(
void t_exp64(const double* x, double* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_exp64(x[i]); }
void t_expf(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_exp32(x[i]); }
void t_exp16(const double* x, double* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_exp_f16(fpc_round_f16(x[i])); }
void t_expb16(const double* x, double* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_exp_bf16(fpc_round_bf16(x[i])); }
void t_f16(const double* x, double* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_round_f16(x[i]); }
void t_bf16(const double* x, double* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_round_bf16(x[i]); }
void t_i32(const double* x, double* y, long n) { for (long i = 0; i < n; ++i) y[i] = fpc_round_i32(x[i]); }
void t_fma16(const double* x, double* y, long n) {
  for (long i = 0; i + 2 < n; ++i) y[i] = fpc_fma_narrow(FPC_F16, fpc_round_f16(x[i]), fpc_round_f16(x[i + 1]), fpc_round_f16(x[i + 2]));
}
void t_max(const double* x, double* y, long n) { for (long i = 0; i + 1 < n; ++i) y[i] = fpc_fmax_nan(x[i], x[i + 1]); }
void t_maxf(const float* x, float* y, long n) { for (long i = 0; i + 1 < n; ++i) y[i] = fpc_fmaxf_nan(x[i], x[i + 1]); }
)";
  JitOptions j;
  j.flags =
      "-std=c99 -pedantic -Wall -Wextra -Werror -O3 -march=native -ffp-contract=off -fno-math-errno -fPIC "
      "-shared";
  j.flags_from_user = true;
  j.cache_dir = test_options().cache_dir;
  JitResult jit = jit_compile_c(src, j);
  using D = void (*)(const double*, double*, long);
  using F = void (*)(const float*, float*, long);
  std::mt19937_64 g(7);
  std::vector<double> x;
  for (double v : std::initializer_list<double>{0.0, -0.0, INFINITY, -INFINITY, NAN, 709.78, 710.0, 710.5,
                                                -745.13, -745.2, -746.0, -1e-300, 65519.99, 65520.0, 0x1p-24,
                                                0x1p-25, 0x1.8p-25, 2147483647.5, -2147483649.0})
    x.push_back(v);
  for (int i = 0; i < 200000; ++i) {
    x.push_back(std::bit_cast<double>(g()));
    x.push_back((static_cast<double>(g() >> 11) * 0x1p-53 - 0.5) * 1500.0);
  }
  const long n = static_cast<long>(x.size());
  std::vector<double> y(x.size());
  std::vector<float> xf(x.begin(), x.end()), yf(x.size());
  auto check = [&](const char* name, auto ref) {
    auto f = reinterpret_cast<D>(jit.object->symbol(name));
    ASSERT_NE(f, nullptr) << name;
    f(x.data(), y.data(), n);
    for (long i = 0; i < n; ++i)
      if (!same_value(y[static_cast<std::size_t>(i)], ref(static_cast<std::size_t>(i))))
        FAIL() << name << " at x = " << std::hexfloat << x[static_cast<std::size_t>(i)];
  };
  check("t_exp64", [&](std::size_t i) { return fp_exp64(x[i]); });
  check("t_exp16", [&](std::size_t i) { return apply_unop(UnOp::Exp, Prec::F16, round_f16(x[i])); });
  check("t_expb16", [&](std::size_t i) { return apply_unop(UnOp::Exp, Prec::BF16, round_bf16(x[i])); });
  check("t_f16", [&](std::size_t i) { return round_f16(x[i]); });
  check("t_bf16", [&](std::size_t i) { return round_bf16(x[i]); });
  check("t_i32", [&](std::size_t i) { return round_i32(x[i]); });
  check("t_fma16", [&](std::size_t i) {
    return i + 2 < x.size() ? fma_narrow(Prec::F16, round_f16(x[i]), round_f16(x[i + 1]), round_f16(x[i + 2]))
                            : y[i];
  });
  check("t_max", [&](std::size_t i) { return i + 1 < x.size() ? fmax_nan(x[i], x[i + 1]) : y[i]; });
  auto ff = reinterpret_cast<F>(jit.object->symbol("t_expf"));
  ff(xf.data(), yf.data(), n);
  for (std::size_t i = 0; i < xf.size(); ++i)
    ASSERT_TRUE(same_value(yf[i], fp_exp32(xf[i]))) << std::hexfloat << xf[i];
  auto fm = reinterpret_cast<F>(jit.object->symbol("t_maxf"));
  fm(xf.data(), yf.data(), n);
  for (std::size_t i = 0; i + 1 < xf.size(); ++i)
    ASSERT_TRUE(same_value(yf[i], fmax_nan(xf[i], xf[i + 1]))) << std::hexfloat << xf[i] << " " << xf[i + 1];
}

TEST(ExecExecutor, CompilerIsRunWithAnArgumentVectorNeverAShell) {
  // A "compiler" name with shell metacharacters is one argv[0]: it is simply not found.
  std::string out;
  EXPECT_NE(run_program({"cc; touch /tmp/flashproof-pwned", "--version"}, out), 0);
  EXPECT_NE(access("/tmp/flashproof-pwned", F_OK), 0);
  ExecOptions o = test_options();
  o.cc = "no-such-compiler-$(id)";
  EXPECT_FALSE(make_executor("c", o)->available().ok);
}

// The peak probe measures both ceilings: FMA chains and the same chains as a multiply then an
// add (what flashproof's -ffp-contract=off code may use). A step is two flops either way, so the
// unfused figure cannot exceed the fused one by more than the timing noise.
TEST(CpuPeak, MeasuresTheFmaAndTheUnfusedCeilings) {
  ExecOptions o = test_options();
  o.threads = 1;
  const PeakMeasurement m = measure_f32_peak(o, 0.03);
  EXPECT_FALSE(m.instruction.empty());
  EXPECT_EQ(m.threads, 1);
  EXPECT_TRUE(std::isfinite(m.gflops) && m.gflops > 0.1) << m.gflops;
  EXPECT_TRUE(std::isfinite(m.unfused_gflops) && m.unfused_gflops > 0.1) << m.unfused_gflops;
  EXPECT_LT(m.unfused_gflops, 1.5 * m.gflops) << m.instruction;
}

}  // namespace
}  // namespace fp
