// No output is ever silently lost: every file the flashproof binary writes is checked, and a
// failure exits 73 (cannot create) or 74 (write failed) naming the path, leaving neither a partial
// file under the final name nor a temporary. Each writer runs in a child whose files may not grow
// past a few hundred bytes (RLIMIT_FSIZE, SIGXFSZ ignored: writes fail with EFBIG, as on a full
// disk), after a run without the limit shows the output is bigger than that. One test fills a real
// 64 KiB tmpfs (when this process may mount one in a private namespace).
//
// What broke before: `rewrite -o` and `verify -o` exited 0 leaving a 0-byte file; `attention -o`
// exited 66; `run --output-dir` exited 64 leaving a truncated .npy; the counterexample writer never
// checked its writes; `print -o /nonexistent/x` exited 66; `print > /dev/full` exited 0.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "child_process.h"
#include "core/diagnostic.h"
#include "core/npy.h"
#include "exec/executor.h"

namespace fp {
namespace {

namespace fs = std::filesystem;
using testing::ChildLimits;
using testing::ChildResult;
using testing::run_flashproof;

const std::string kPairs = std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit/verify/pairs/";

constexpr rlim_t kSmallFile = 256;

ChildLimits small_files() {
  return ChildLimits{kSmallFile, std::nullopt, ""};
}

class OutputFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flashproof-output-failure-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ok");
    fs::create_directories(dir_ / "out");
    attn_ = (dir_ / "attn.fp").string();
    ChildResult r =
        run_flashproof({"attention", "--sq", "5", "--sk", "3", "--d", "4", "--e", "3", "-o", attn_});
    ASSERT_EQ(r.exit_code, 0) << r.text();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string ok(const std::string& name) const { return (dir_ / "ok" / name).string(); }
  std::string out(const std::string& name) const { return (dir_ / "out" / name).string(); }

  // Everything under out/, hidden temporaries included, as relative paths.
  std::vector<std::string> written() const {
    std::vector<std::string> v;
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "out"))
      v.push_back(fs::relative(e.path(), dir_ / "out").string());
    std::sort(v.begin(), v.end());
    return v;
  }

  // `args_for(path)` writes one file at path: bigger than the limit without it; with it, exit 74
  // naming the path, and nothing left behind.
  void expect_write_failure_is_74(
      const std::function<std::vector<std::string>(const std::string&)>& args_for) {
    ChildResult fine = run_flashproof(args_for(ok("file")));
    ASSERT_EQ(fine.exit_code, 0) << fine.text();
    ASSERT_GT(fs::file_size(ok("file")), kSmallFile) << "the output must be bigger than the limit";
    ChildResult r = run_flashproof(args_for(out("file")), small_files());
    EXPECT_EQ(r.exit_code, kExitIoError) << r.text();
    EXPECT_NE(r.output.find(out("file")), std::string::npos) << r.text();
    EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.text();
    EXPECT_TRUE(written().empty()) << fmt::format("{}", fmt::join(written(), " "));
  }

  fs::path dir_;
  std::string attn_;
};

TEST_F(OutputFailure, RewriteOutputOnAFullDiskExits74InsteadOfLeavingAnEmptyFile) {
  expect_write_failure_is_74([&](const std::string& p) {
    return std::vector<std::string>{"rewrite", attn_, "--set", "online_softmax=true", "-o", p};
  });
}

TEST_F(OutputFailure, VerifyReportOnAFullDiskExits74InsteadOfLeavingAnEmptyFile) {
  expect_write_failure_is_74([&](const std::string& p) {
    return std::vector<std::string>{"verify",
                                    "--src",
                                    kPairs + "max-commutes.src.fp",
                                    "--tgt",
                                    kPairs + "max-commutes.tgt.fp",
                                    "--no-cache",
                                    "--no-progress",
                                    "--format",
                                    "json",
                                    "-o",
                                    p};
  });
}

TEST_F(OutputFailure, AttentionOutputOnAFullDiskExits74Not66) {
  expect_write_failure_is_74([&](const std::string& p) {
    return std::vector<std::string>{"attention", "--sq", "5", "--sk", "3", "-o", p};
  });
}

TEST_F(OutputFailure, PrintOutputOnAFullDiskExits74) {
  expect_write_failure_is_74([&](const std::string& p) {
    return std::vector<std::string>{"print", attn_, "-o", p};
  });
}

TEST_F(OutputFailure, LowerOutputOnAFullDiskExits74) {
  const std::string te = std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit/frontend/softmax.test";
  expect_write_failure_is_74([&](const std::string& p) {
    return std::vector<std::string>{"lower", te, "-o", p};
  });
}

TEST_F(OutputFailure, BenchCsvOnAFullDiskExits74) {
  expect_write_failure_is_74([&](const std::string& p) {
    return std::vector<std::string>{"bench", "attention", "--executor", "interp", "--seq", "4",
                                    "--d",   "2",         "--repeats",  "1",      "--csv", p};
  });
}

TEST_F(OutputFailure, PrintIntoAMissingDirectoryExits73Not66) {
  const std::string p = (dir_ / "no-such-dir" / "x.fp").string();
  ChildResult r = run_flashproof({"print", attn_, "-o", p});
  EXPECT_EQ(r.exit_code, kExitCantCreate) << r.text();
  EXPECT_NE(r.output.find(p), std::string::npos) << r.text();
}

TEST_F(OutputFailure, StandardOutputToDevFullExits74NotZero) {
  ChildResult r = run_flashproof({"print", attn_}, ChildLimits{std::nullopt, std::nullopt, "/dev/full"});
  EXPECT_EQ(r.exit_code, kExitIoError) << r.text();
  EXPECT_NE(r.output.find("standard output"), std::string::npos) << r.text();
  // A report printed with fmt::print rather than write_text_output is checked at exit too.
  r = run_flashproof({"list-rewrites"}, ChildLimits{std::nullopt, std::nullopt, "/dev/full"});
  EXPECT_EQ(r.exit_code, kExitIoError) << r.text();
}

TEST_F(OutputFailure, RunOutputDirOnAFullDiskExits74Not64AndLeavesNoTruncatedNpy) {
  ChildResult fine = run_flashproof({"run", attn_, "--seed", "1", "--output-dir", ok("run"), "-q"});
  ASSERT_EQ(fine.exit_code, 0) << fine.text();
  // Below even a .npy header (128 bytes): every file fails, the first one whichever it is.
  constexpr rlim_t kTiny = 100;
  ASSERT_GT(fs::file_size(ok("run/o.npy")), kTiny);
  const std::string d = out("run");
  ChildResult r = run_flashproof({"run", attn_, "--seed", "1", "--output-dir", d, "-q"},
                                 ChildLimits{kTiny, std::nullopt, ""});
  EXPECT_EQ(r.exit_code, kExitIoError) << r.text();
  EXPECT_NE(r.output.find(d + "/"), std::string::npos) << r.text();
  for (const auto& e : fs::directory_iterator(d)) {
    EXPECT_NE(e.path().filename().string()[0], '.') << "temporary left: " << e.path();
    EXPECT_NO_THROW(read_npy(e.path().string())) << "a partial file under a final name: " << e.path();
  }
}

TEST_F(OutputFailure, CounterexampleCaseOnAFullDiskExits74AndLeavesNoPartialCase) {
  const std::vector<std::string> args{"verify",
                                      "--src",
                                      kPairs + "negative-zero.src.fp",
                                      "--tgt",
                                      kPairs + "negative-zero.tgt.fp",
                                      "--no-cache",
                                      "--no-progress",
                                      "--case-dir"};
  auto with = [&](std::string d) {
    auto a = args;
    a.push_back(std::move(d));
    return a;
  };
  ChildResult fine = run_flashproof(with(ok("cex")));
  ASSERT_EQ(fine.exit_code, kExitRefuted) << fine.text();
  ASSERT_GT(fs::file_size(ok("cex/pair/src.fp")), kSmallFile);
  ChildResult r = run_flashproof(with(out("cex")), small_files());
  EXPECT_EQ(r.exit_code, kExitIoError) << r.text();
  EXPECT_NE(r.output.find(out("cex/pair/")), std::string::npos) << r.text();
  EXPECT_EQ(written(), std::vector<std::string>{"cex"}) << fmt::format("{}", fmt::join(written(), " "));
}

TEST_F(OutputFailure, SmtDumpOnAFullDiskExits74) {
  const std::vector<std::string> args{"verify",
                                      "--src",
                                      kPairs + "max-reassociation.src.fp",
                                      "--tgt",
                                      kPairs + "max-reassociation.tgt.fp",
                                      "--no-cache",
                                      "--no-progress",
                                      "--dump-smt"};
  auto with = [&](std::string d) {
    auto a = args;
    a.push_back(std::move(d));
    return a;
  };
  ChildResult fine = run_flashproof(with(ok("smt")));
  ASSERT_EQ(fine.exit_code, 0) << fine.text();
  ASSERT_FALSE(fs::is_empty(ok("smt")));
  ChildResult r = run_flashproof(with(out("smt")), small_files());
  EXPECT_EQ(r.exit_code, kExitIoError) << r.text();
  EXPECT_NE(r.output.find(out("smt/")), std::string::npos) << r.text();
  EXPECT_EQ(written(), std::vector<std::string>{"smt"}) << fmt::format("{}", fmt::join(written(), " "));
}

// The differential case needs a mismatch: the C executor allowed to reassociate (-ffast-math). Its
// inputs are 1 MiB, past a limit the compiler's own small files stay under.
TEST_F(OutputFailure, DiffCaseOnAFullDiskExits74AndLeavesNoPartialCase) {
  if (!make_executor("c")->available()) GTEST_SKIP() << "no C compiler";
  const std::string sum = (dir_ / "sum.fp").string();
  std::ofstream(sum) << "routine sum {\n  node x : f32[64, 4096] materialized input\n"
                        "  node s : f32[64] materialized output\n  zero s\n"
                        "  for i in 0..63 {\n    for j in 0..4095 {\n"
                        "      s[i] = add.f32(s[i], mul.f32(x[i, j], x[i, j]))\n    }\n  }\n}\n";
  const std::vector<std::pair<std::string, std::string>> env{
      {"FLASHPROOF_CFLAGS", "-O3 -march=native -ffast-math -fPIC -shared"},
      {"FLASHPROOF_JIT_CACHE", (dir_ / "jit").string()}};
  ChildResult fine = run_flashproof({"diff", sum, "--case-dir", ok("case")}, {}, env);
  ASSERT_EQ(fine.exit_code, kExitRefuted) << fine.text();
  ChildResult r = run_flashproof({"diff", sum, "--case-dir", out("case")},
                                 ChildLimits{512 * 1024, std::nullopt, ""}, env);
  EXPECT_EQ(r.exit_code, kExitIoError) << r.text();
  EXPECT_NE(r.output.find(out("case/inputs/x.npy")), std::string::npos) << r.text();
  EXPECT_TRUE(written().empty()) << fmt::format("{}", fmt::join(written(), " "));
}

// A real full disk: a 64 KiB tmpfs, filled, in a private mount namespace of a child (root, or a
// kernel that lets this user unshare; skipped otherwise).
TEST_F(OutputFailure, RewriteOntoAFullTmpfsExits74AndLeavesNothing) {
  const fs::path mnt = dir_ / "tmpfs";
  fs::create_directories(mnt);
  ChildResult r = testing::run_in_child([&] {
    constexpr int kSkip = 200;
    if (::unshare(CLONE_NEWNS) != 0) {
      std::printf("cannot unshare a mount namespace: %s\n", std::strerror(errno));
      return kSkip;
    }
    if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) {
      std::printf("cannot mount a tmpfs: %s\n", std::strerror(errno));
      return kSkip;
    }
    {
      std::ofstream filler(mnt / "filler", std::ios::binary);
      filler << std::string(64 * 1024, 'f');
    }
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(testing::exec_flashproof({"rewrite", attn_, "-o", (mnt / "out.fp").string()}));
    int status = 0;
    ::waitpid(pid, &status, 0);
    for (const auto& e : fs::directory_iterator(mnt)) std::printf("ENTRY %s\n", e.path().filename().c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  });
  if (r.exit_code == 200) GTEST_SKIP() << r.output;
  EXPECT_EQ(r.exit_code, kExitIoError) << r.text();
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.text();
  EXPECT_NE(r.output.find("ENTRY filler"), std::string::npos) << r.text();
  EXPECT_EQ(r.output.find("ENTRY out.fp"), std::string::npos) << r.text();
  EXPECT_EQ(r.output.find("ENTRY .out.fp"), std::string::npos) << r.text();
}

}  // namespace
}  // namespace fp
