// The executors through the command line: `run --executor c` writes the interpreter's outputs
// bit for bit; bad input to `run` and `diff` (missing input, wrong shape or dtype in a .npy) exits
// 65/66 naming the input and its expected shape; `diff` agrees across executors and across the
// online-softmax rewrite (bounded claim) in every report format; a real mismatch (the compiler
// allowed to reassociate with -ffast-math) exits 1 and writes a case whose replay.sh reproduces it;
// an unavailable executor is exit 69 in both run and diff.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/npy.h"
#include "core/random_inputs.h"
#include "core/text_parser.h"
#include "exec/executor.h"
#include "exec/jit.h"

namespace fp {
namespace {

namespace fs = std::filesystem;

struct ToolRun {
  int rc;
  std::string out;
};

ToolRun tool(std::vector<std::string> args,
             const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::vector<std::string> argv;
  if (!env.empty()) {
    argv.push_back("env");
    for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
  }
  argv.push_back(FLASHPROOF_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  ToolRun r;
  r.rc = run_program(argv, r.out);
  return r;
}

class ExecTools : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flashproof-exec-tools-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    attn_ = (dir_ / "attn.fp").string();
    ASSERT_EQ(tool({"attention", "--sq", "5", "--sk", "3", "--d", "4", "--e", "3", "--heads", "2", "--mask",
                    "causal", "-o", attn_})
                  .rc,
              0);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::pair<std::string, std::string>> env() const {
    return {{"FLASHPROOF_JIT_CACHE", "/tmp/flashproof-test-jit-" + std::to_string(getuid())}};
  }
  fs::path dir_;
  std::string attn_;
};

TEST_F(ExecTools, RunWithTheCExecutorWritesTheInterpretersOutputs) {
  const std::string a = (dir_ / "interp").string(), b = (dir_ / "c").string();
  ASSERT_EQ(tool({"run", attn_, "--seed", "3", "--output-dir", a, "-q"}, env()).rc, 0);
  ToolRun r = tool(
      {"run", attn_, "--executor", "c", "--seed", "3", "--output-dir", b, "-q", "--report-memory"}, env());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("measured peak"), std::string::npos) << r.out;
  const Tensor x = read_npy(a + "/o.npy"), y = read_npy(b + "/o.npy");
  ASSERT_EQ(x.data.size(), y.data.size());
  for (std::size_t i = 0; i < x.data.size(); ++i)
    EXPECT_TRUE((std::isnan(x.data[i]) && std::isnan(y.data[i])) || x.data[i] == y.data[i]) << i;
}

// `flashproof compile` writes the object the C executor loads and its ABI; a program that loads
// it itself (scripts/bench-peers, with ctypes) and fills the slots the JSON names gets the
// interpreter's outputs bit for bit.
TEST_F(ExecTools, CompiledObjectRunsThroughItsDocumentedAbi) {
  const std::string so = (dir_ / "attn.so").string(), abi = (dir_ / "attn.json").string();
  ToolRun r = tool({"compile", attn_, "-o", so, "--abi", abi}, env());
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream f(abi);
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["abi_version"], 1);
  ASSERT_EQ(j["ctx"], nlohmann::json({"live", "peak", "failed_bytes", "threads"}));
  const Routine routine = parse_routine_file(attn_);
  const TensorMap in = random_inputs(routine, 4);
  const TensorMap want = interpret(routine, in);
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  using Entry = int (*)(std::int64_t*, void**);
  auto entry = reinterpret_cast<Entry>(dlsym(h, j["entry"].get<std::string>().c_str()));
  ASSERT_NE(entry, nullptr);
  std::vector<void*> bufs(j["slots"].size(), nullptr);
  std::vector<void*> held;  // 64-byte aligned, as the ABI asks
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const auto& slot = j["slots"][i];
    if (!slot.value("input", false)) continue;
    ASSERT_EQ(slot["prec"], "f32");
    const Tensor& t = in.at(slot["name"].get<std::string>());
    ASSERT_EQ(slot["dims"].get<std::vector<std::int64_t>>(), t.dims);
    float* p = static_cast<float*>(std::aligned_alloc(64, (t.data.size() * 4 + 63) / 64 * 64));
    for (std::size_t c = 0; c < t.data.size(); ++c) p[c] = static_cast<float>(t.data[c]);
    held.push_back(bufs[i] = p);
  }
  std::int64_t ctx[4] = {0, 0, 0, 1};
  ASSERT_EQ(entry(ctx, bufs.data()), 0);
  EXPECT_EQ(ctx[1], j["report_peak_bytes"].get<std::int64_t>());
  int outputs = 0;
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const auto& slot = j["slots"][i];
    if (!slot.value("output", false)) continue;
    ++outputs;
    const Tensor& t = want.at(slot["name"].get<std::string>());
    const float* got = static_cast<const float*>(bufs[i]);
    for (std::size_t c = 0; c < t.data.size(); ++c) {
      const float w = static_cast<float>(t.data[c]);
      EXPECT_TRUE((std::isnan(w) && std::isnan(got[c])) || std::memcmp(&w, &got[c], 4) == 0) << c;
    }
    std::free(bufs[i]);
  }
  EXPECT_EQ(outputs, 1);
  for (void* p : held) std::free(p);
  // The object stays loaded, as the C executor keeps its objects: dlclose would unload the
  // libraries it pulled in (libgomp), whose ELF initializers' allocations LeakSanitizer then
  // reports from an unknown module.
  (void)h;
}

TEST_F(ExecTools, BadInputToRunAndDiffNamesTheInputAndItsExpectedShape) {
  Tensor q = Tensor::zeros(Prec::F32, {1, 5, 2, 9});  // expected f32[1,5,2,4]
  const std::string bad_shape = (dir_ / "q_shape.npy").string();
  write_npy(bad_shape, q);
  Tensor q16 = Tensor::zeros(Prec::F16, {1, 5, 2, 4});
  const std::string bad_dtype = (dir_ / "q_dtype.npy").string();
  write_npy(bad_dtype, q16);
  for (const std::string sub : {"run", "diff"})
    for (const std::string ex : {"interp", "c"}) {
      SCOPED_TRACE(sub + " " + ex);
      std::vector<std::string> base = {sub, attn_, "--executor", ex};
      // A .npy file that does not exist: 66.
      ToolRun missing_file =
          tool({sub, attn_, "--executor", ex, "--input", "q=" + (dir_ / "nope.npy").string()}, env());
      EXPECT_EQ(missing_file.rc, kExitMissingInput) << missing_file.out;
      // A missing input: only q bound, k and v unbound (run draws nothing without a seed).
      if (sub == "run") {
        write_npy((dir_ / "q_ok.npy").string(), Tensor::zeros(Prec::F32, {1, 5, 2, 4}));
        ToolRun r =
            tool({sub, attn_, "--executor", ex, "--input", "q=" + (dir_ / "q_ok.npy").string()}, env());
        r = tool({sub, attn_, "--executor", ex, "--input", "q=" + (dir_ / "q_ok.npy").string()}, env());
        EXPECT_EQ(r.rc, kExitMissingInput) << r.out;
        EXPECT_NE(r.out.find("missing input 'k' (expected f32[1,3,2,4]): bind it with --input k=PATH.npy, or "
                             "draw every unbound input with --seed N"),
                  std::string::npos)
            << r.out;
      }
      std::vector<std::string> args = base;
      args.insert(args.end(), {"--input", "q=" + bad_shape});
      if (sub == "run") args.insert(args.end(), {"--seed", "1"});
      ToolRun r = tool(args, env());
      EXPECT_EQ(r.rc, kExitMalformed) << r.out;
      // The message is located at the .npy file (it used to name only the routine).
      EXPECT_NE(r.out.find(bad_shape + ": error: expected f32[1,5,2,4] (dtype '<f4', shape (1, 5, 2, 4)) for "
                                       "input 'q', found f32[1,5,2,9]"),
                std::string::npos)
          << r.out;
      args = base;
      args.insert(args.end(), {"--input", "q=" + bad_dtype});
      if (sub == "run") args.insert(args.end(), {"--seed", "1"});
      r = tool(args, env());
      EXPECT_EQ(r.rc, kExitMalformed) << r.out;
      EXPECT_NE(r.out.find(bad_dtype + ": error: expected f32[1,5,2,4] (dtype '<f4', shape (1, 5, 2, 4)) for "
                                       "input 'q', found f16[1,5,2,4] (dtype '<f2'"),
                std::string::npos)
          << r.out;
    }
}

TEST_F(ExecTools, DiffAgreesAcrossExecutorsAndAcrossTheRewriteInEveryFormat) {
  ToolRun r = tool({"diff", attn_, "--executor", "interp", "--vs", "c"}, env());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("bitwise"), std::string::npos) << r.out;
  r = tool({"diff", attn_, "--rewrite", "--set", "online_softmax=true", "--format", "json"}, env());
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "agree");
  EXPECT_EQ(j["outputs"][0]["comparison"], "certified");
  EXPECT_EQ(j["claims"].size(), 3u);
  // The block fold's output on the certified per-cell basis (docs/bounds.md §7 "O").
  r = tool({"diff", attn_, "--rewrite", "--set", "online_softmax=true", "--set", "online_softmax_block=2", "--format",
            "json"},
           env());
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto jf = nlohmann::json::parse(r.out);
  EXPECT_EQ(jf["verdict"], "agree");
  EXPECT_EQ(jf["outputs"][0]["comparison"], "certified") << r.out;
  for (const std::string f : {"jsonl", "junit", "sarif", "text"}) {
    r = tool({"diff", attn_, "--rewrite", "--profile", "approximate", "--format", f}, env());
    EXPECT_EQ(r.rc, 0) << f << "\n" << r.out;
  }
  // The approximate profile's online_softmax_block = auto is the fold at B = 64.
  EXPECT_NE(r.out.find("fold-output: bounded"), std::string::npos) << r.out;
}

TEST_F(ExecTools, FastMathMismatchExitsOneAndTheCaseReplays) {
  const std::string sum = (dir_ / "sum.fp").string();
  // One row of 4096 terms (256 agreed by chance on an AVX2 machine): its sum is a plain scalar loop,
  // which -ffast-math vectorizes by reassociating (the schedule of several rows — lanes over rows,
  // read from panels — gives it nothing to reorder).
  std::ofstream(sum) << "routine sum {\n  node x : f32[1, 4096] materialized input\n"
                        "  node s : f32[1] materialized output\n  zero s\n"
                        "  for i in 0..0 {\n    for j in 0..4095 {\n"
                        "      s[i] = add.f32(s[i], mul.f32(x[i, j], x[i, j]))\n    }\n  }\n}\n";
  auto e = env();
  e.emplace_back("FLASHPROOF_CFLAGS", "-O3 -march=native -ffast-math -fPIC -shared");
  const std::string cases = (dir_ / "case").string();
  ToolRun r = tool({"diff", sum, "--case-dir", cases}, e);
  ASSERT_EQ(r.rc, kExitRefuted) << r.out;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
  for (const char* f :
       {"original.fp", "inputs/x.npy", "interp-outputs/s.npy", "c-outputs/s.npy", "replay.sh"})
    EXPECT_TRUE(fs::exists(fs::path(cases) / f)) << f;
  // The replay script records the flags and reproduces the mismatch (flashproof from PATH).
  std::ifstream script(fs::path(cases) / "replay.sh");
  std::string text((std::istreambuf_iterator<char>(script)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("FLASHPROOF_CFLAGS="), std::string::npos) << text;
  std::string out;
  const std::string path = fs::path(FLASHPROOF_BINARY).parent_path().string() + ":" + std::getenv("PATH");
  const int rc =
      run_program({"env", "PATH=" + path, "FLASHPROOF_JIT_CACHE=" + e[0].second,
                   (fs::path(cases) / "replay.sh").string(), "--case-dir", (dir_ / "case2").string()},
                  out);
  EXPECT_EQ(rc, kExitRefuted) << out;
}

// run said 64 and diff 2 (or 0 with --fail-on refuted) for the same missing GPU: both are 69 now.
TEST_F(ExecTools, UnavailableExecutorIsExit69InRunAndDiff) {
  ToolRun r = tool({"diff", attn_, "--vs", "cuda"}, env());
  if (make_executor("cuda")->available().ok) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(r.rc, kExitUnavailable) << r.out;
  EXPECT_NE(r.out.find("executor 'cuda' is unavailable"), std::string::npos) << r.out;
  r = tool({"diff", attn_, "--vs", "cuda", "--fail-on", "refuted"}, env());
  EXPECT_EQ(r.rc, kExitUnavailable) << r.out;
  r = tool({"run", attn_, "--executor", "cuda", "--seed", "1"}, env());
  EXPECT_EQ(r.rc, kExitUnavailable) << r.out;
}

}  // namespace
}  // namespace fp
