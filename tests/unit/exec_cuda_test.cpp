// The CUDA executor. Without a GPU (every CI machine) the executor must say it is unavailable and
// why, and the GPU tests skip with that one line; the code generator is still exercised: the
// generated CUDA C++ of composed, rewritten (two-pass) and block-folded attention (forward and training step, several
// precisions) compiles with nvcc, and a batch of random routines (every operation and precision)
// compiles with NVRTC. On a machine with a GPU the same programs run and must agree with the
// interpreter bitwise (scripts/gpu-check runs these tests and the differential suite). Everywhere,
// the same kernels run on the CPU through the CUDA emulator (exec/cuda_emulator.h) and must agree too.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>

#include "frontend/attention.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/random_inputs.h"
#include "exec/cuda_codegen.h"
#include "exec/cuda_executor.h"
#include "exec/executor.h"
#include "fuzz/attention_case.h"
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

// The block fold (shape 4) with B = 2 by default: with 3 keys, two key blocks, a guarded tail.
Routine folded(const Routine& r, int block = 2) {
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_block", std::to_string(block));
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
  // The row kernel over several blocks of threads (40 query rows, a partial last block), B = 8
  // dividing 24 keys and B = 5 not; a NaN fill; padding with sq != sk.
  AttentionSpec wide = spec(Prec::F32, false);
  wide.batch = 1;
  wide.sq = 40;
  wide.sk = 24;
  wide.d = 8;
  wide.e = 8;
  const Routine composed = build_attention(wide);
  out.emplace_back("f32 40x24 causal block fold B=8", folded(composed, 8));
  out.emplace_back("f32 40x24 causal block fold B=5", folded(composed, 5));
  wide.mask_fill = "nan";
  out.emplace_back("f32 40x24 causal nan fill block fold B=5", folded(build_attention(wide), 5));
  wide.mask = "padding:5";
  wide.mask_fill = "-inf";
  wide.sq = 9;
  out.emplace_back("f32 9x24 padding block fold B=7", folded(build_attention(wide), 7));
  return out;
}

// Every attention program on `ex`, bitwise against the interpreter.
void expect_agrees_on_attention(Executor& ex) {
  for (const auto& [name, r] : attention_programs()) {
    SCOPED_TRACE(name);
    TensorMap in = random_inputs(r, 17);
    ASSERT_TRUE(testing::bitwise_equal(interpret(r, in), ex.compile(r)->run(in)));
  }
}

// Random routines (every operation and precision) on `ex`, bitwise against the interpreter.
void expect_agrees_on_random_routines(Executor& ex) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    Routine r = fuzz::sample_routine(seed * 104729);
    SCOPED_TRACE(seed * 104729);
    if (std::string(cuda_source_for(r, test_options())).find("pow(") != std::string::npos)
      continue;  // pow is implementation-defined
    TensorMap in = random_inputs(r, seed);
    ASSERT_TRUE(testing::bitwise_equal(interpret(r, in), ex.compile(r)->run(in)));
  }
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
  expect_agrees_on_attention(*ex);
}

TEST(ExecCuda, AgreesWithTheInterpreterBitwiseOnRandomRoutines) {
  auto ex = make_executor("cuda", test_options());
  const Availability a = ex->available();
  if (!a) GTEST_SKIP() << "CUDA executor unavailable: " << a.reason;
  expect_agrees_on_random_routines(*ex);
}

// The same kernels, launch geometry and run (exec/cuda_run.h) on the CPU (exec/cuda_emulator.h):
// what can be checked of the CUDA generator without a GPU, on every machine.
TEST(ExecCudaEmulator, AgreesWithTheInterpreterBitwiseOnAttention) {
  auto ex = make_executor("cuda-emu", test_options());
  ASSERT_TRUE(ex->available()) << ex->available().reason;
  expect_agrees_on_attention(*ex);
}

TEST(ExecCudaEmulator, AgreesWithTheInterpreterBitwiseOnRandomRoutines) {
  auto ex = make_executor("cuda-emu", test_options());
  ASSERT_TRUE(ex->available()) << ex->available().reason;
  expect_agrees_on_random_routines(*ex);
}

// Fuzzed attention cases (fuzz/attention_case.h: every mask and fill, sq != sk, f64/f32/f16/bf16,
// layers, training steps, look-alikes, hostile data) rewritten under their drawn gates with the fold
// forced on at their drawn block size or 3, those whose programs get a row kernel, on the emulator:
// at least 12 among the first 400 draws.
TEST(ExecCudaEmulator, AgreesWithTheInterpreterBitwiseOnFuzzedFoldCases) {
  auto ex = make_executor("cuda-emu", test_options());
  ASSERT_TRUE(ex->available()) << ex->available().reason;
  const auto gen = fuzz::gen_attention_case();
  int found = 0;
  for (std::uint64_t seed = 1; seed <= 400 && found < 12; ++seed) {
    const fuzz::AttentionCase c = gen(rc::Random(seed * 6151), rc::kNominalSize).value();
    Config cfg;
    cfg.set("online_softmax_block", "3");
    for (const std::string& kv : c.settings) cfg.set(kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1));
    cfg.set("online_softmax", "true");
    if (cfg.integer_or_auto("online_softmax_block").value_or(1) == 0) cfg.set("online_softmax_block", "3");
    const Routine original = fuzz::build_case_routine(c);
    const Routine r = run_tier(original, cfg).routine;
    const CudaProgramText t = generate_cuda(make_plan(r, test_options().placement));
    if (std::none_of(t.launches.begin(), t.launches.end(), [](const CudaLaunch& l) { return l.rows > 0; }))
      continue;
    ++found;
    SCOPED_TRACE(fuzz::attention_case_text(c));
    TensorMap in = fuzz::case_inputs(c, original);
    ASSERT_TRUE(testing::bitwise_equal(interpret(r, in), ex->compile(r)->run(in)));
  }
  EXPECT_GE(found, 12);
}

// The fold runs as the row kernel: its tiles in per-thread arrays (no buffer), the key and value
// blocks staged through shared memory, one thread per query row.
TEST(ExecCudaRowKernel, TheFoldStagesKeysAndValuesAndKeepsItsTilesPrivate) {
  AttentionSpec s = spec(Prec::F32, false);
  s.sq = 40;
  s.sk = 24;
  const Routine r = folded(build_attention(s), 8);
  ProgramPlan plan = make_plan(r, test_options().placement);
  CudaProgramText t = generate_cuda(plan);
  EXPECT_NE(t.source.find("/* staged block of 'k' */"), std::string::npos);
  EXPECT_NE(t.source.find("/* staged block of 'v' */"), std::string::npos);
  EXPECT_NE(t.source.find("__syncthreads();"), std::string::npos);
  std::set<std::string> tiles;
  for (int i : t.private_nodes) tiles.insert(plan.placed.nodes[static_cast<std::size_t>(i)].name);
  EXPECT_EQ(tiles, (std::set<std::string>{"os_block_numerator_o", "os_block_rows_q", "os_block_scores_masked"}));
  int row_kernels = 0;
  for (const CudaLaunch& l : t.launches)
    if (l.rows > 0) {
      ++row_kernels;
      EXPECT_EQ(l.rows, 40);  // the query rows over the threads
      EXPECT_EQ(l.block, 64u);
      EXPECT_EQ(l.threads, 2 * 2);  // batch x heads, one per block row
      const CudaGeometry g = cuda_geometry(l);
      EXPECT_EQ(g.grid_x, 1u);
      EXPECT_EQ(g.grid_y, 4u);
    }
  EXPECT_EQ(row_kernels, 1);
  // The composed program has no scan: no row kernel.
  for (const CudaLaunch& l : generate_cuda(make_plan(build_attention(s), test_options().placement)).launches)
    EXPECT_EQ(l.rows, 0) << l.kernel;
}

}  // namespace
}  // namespace fp
