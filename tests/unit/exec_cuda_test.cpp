// The CUDA executor. Without a GPU (every CI machine) the executor must say it is unavailable and
// why, and the GPU tests skip with that one line; the code generator is still exercised: the
// generated CUDA C++ of composed, rewritten (two-pass) and block-folded attention (forward and training step, several
// precisions) compiles with nvcc, and a batch of random routines (every operation and precision)
// compiles with NVRTC. On a machine with a GPU the same programs run and must agree with the
// interpreter bitwise (scripts/gpu-check runs these tests and the differential suite).

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>

#include "frontend/attention.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/random_inputs.h"
#include "exec/cuda_codegen.h"
#include "exec/cuda_executor.h"
#include "exec/executor.h"
#include "fuzz/random_routine.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"
#include "tensor_expect.h"

namespace fp {
namespace {

ExecOptions test_options() {
  ExecOptions o;
  o.cache_dir = "/tmp/flashproof-test-jit-" + std::to_string(getuid());
  return o;
}

Routine rewritten(const Routine& r) {
  Config c;
  c.set("online_softmax", "true");
  return run_tier(r, c).routine;
}

// The block fold (shape 4) with B = 2: three key blocks, a guarded tail.
Routine folded(const Routine& r) {
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_block", "2");
  return run_tier(r, c).routine;
}

// The fused backward (shape 3) after the fold: a training step with no square buffer.
Routine fused(const Routine& r) {
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_block", "2");
  c.set("online_softmax_backward", "true");
  return run_tier(r, c).routine;
}

AttentionSpec spec(Prec p, bool train, const std::string& mask = "causal") {
  AttentionSpec s;
  s.batch = 2;
  s.heads = 2;
  s.sq = 5;
  s.sk = 3;  // causal with sq > sk: fully masked rows (NaN)
  s.d = 4;
  s.e = 3;
  s.mask = mask;
  s.precision = p;
  s.train = train;
  return s;
}

// The attention programs the CUDA tests use: composed, two-pass and block fold, forward and training step,
// and the fused backward of the training steps.
std::vector<std::pair<std::string, Routine>> attention_programs() {
  std::vector<std::pair<std::string, Routine>> out;
  for (Prec p : {Prec::F32, Prec::F16, Prec::BF16, Prec::F64})
    for (bool train : {false, true}) {
      if (train && (p == Prec::F16 || p == Prec::F64)) continue;
      Routine composed = build_attention(spec(p, train, p == Prec::BF16 ? "padding:1" : "causal"));
      const std::string name = std::string(prec_name(p)) + (train ? " train" : " forward");
      out.emplace_back(name + " composed", composed);
      out.emplace_back(name + " rewritten", rewritten(composed));
      out.emplace_back(name + " block fold", folded(composed));
      if (train) out.emplace_back(name + " fused backward", fused(composed));
    }
  return out;
}

TEST(ExecCuda, ReportsAvailabilityWithAReason) {
  auto ex = make_executor("cuda", test_options());
  const Availability a = ex->available();
  if (!a) {
    EXPECT_FALSE(a.reason.empty());
    EXPECT_EQ(a.reason.find('\n'), std::string::npos) << a.reason;
    // compile() on an unavailable executor is exit 69 (EX_UNAVAILABLE) naming the reason.
    try {
      ex->compile(build_attention(spec(Prec::F32, false)));
      ADD_FAILURE() << "compile() succeeded on an unavailable executor";
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitUnavailable);
      EXPECT_NE(std::string(e.what()).find(a.reason), std::string::npos) << e.what();
    }
    GTEST_SKIP() << "CUDA executor unavailable: " << a.reason;
  }
  SUCCEED() << "CUDA executor available";
}

TEST(ExecCuda, AttentionCodegenCompilesWithNvcc) {
  const Availability a = cuda_compiler_available(CudaCompiler::Nvcc);
  if (!a) GTEST_SKIP() << "nvcc unavailable: " << a.reason;
  // One translation unit (one nvcc run): every program's kernels get their own prefix.
  std::string all;
  int k = 0;
  int kernels = 0;
  for (const auto& [name, r] : attention_programs()) {
    ProgramPlan plan = make_plan(r, test_options().placement);
    CudaProgramText t = generate_cuda(plan, "fpk" + std::to_string(k++));
    for (const auto& l : t.launches) kernels += l.kind == CudaLaunch::Kind::Kernel;
    all += t.source;
  }
  EXPECT_GT(kernels, 20);
  CudaBinary bin = compile_cuda(all, "sm_90", CudaCompiler::Nvcc);
  EXPECT_TRUE(bin.ok) << bin.log;
  EXPECT_FALSE(bin.image.empty());
}

TEST(ExecCuda, RandomRoutinesCodegenCompilesWithNvrtc) {
  const Availability a = cuda_compiler_available(CudaCompiler::Nvrtc);
  if (!a) GTEST_SKIP() << "NVRTC unavailable: " << a.reason;
  std::string all;
  for (std::uint64_t seed = 1; seed <= 30; ++seed)
    all +=
        cuda_source_for(fuzz::sample_routine(seed * 104729), test_options(), "fpr" + std::to_string(seed));
  CudaBinary bin = compile_cuda(all, "sm_90", CudaCompiler::Nvrtc);
  EXPECT_TRUE(bin.ok) << bin.log;
}

TEST(ExecCuda, AgreesWithTheInterpreterBitwiseOnAttention) {
  auto ex = make_executor("cuda", test_options());
  const Availability a = ex->available();
  if (!a) GTEST_SKIP() << "CUDA executor unavailable: " << a.reason;
  for (const auto& [name, r] : attention_programs()) {
    SCOPED_TRACE(name);
    TensorMap in = random_inputs(r, 17);
    ASSERT_TRUE(testing::bitwise_equal(interpret(r, in), ex->compile(r)->run(in)));
  }
}

TEST(ExecCuda, AgreesWithTheInterpreterBitwiseOnRandomRoutines) {
  auto ex = make_executor("cuda", test_options());
  const Availability a = ex->available();
  if (!a) GTEST_SKIP() << "CUDA executor unavailable: " << a.reason;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    Routine r = fuzz::sample_routine(seed * 104729);
    SCOPED_TRACE(seed * 104729);
    if (std::string(cuda_source_for(r, test_options())).find("pow(") != std::string::npos)
      continue;  // pow is implementation-defined
    TensorMap in = random_inputs(r, seed);
    ASSERT_TRUE(testing::bitwise_equal(interpret(r, in), ex->compile(r)->run(in)));
  }
}

}  // namespace
}  // namespace fp
