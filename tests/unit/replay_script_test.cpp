// A counterexample's replay.sh runs the flashproof that wrote it, not whatever is on PATH: the
// binary's absolute path is recorded in the script, and PATH's flashproof is used (with a note on
// standard error) only when that file no longer exists. Checked with a decoy `flashproof` on PATH
// that exits 42.
//
// What broke before: replay.sh ran `flashproof` from PATH, so a case replayed with whichever
// version happened to be installed (or none).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "child_process.h"
#include "core/diagnostic.h"
#include "exec/jit.h"

namespace fp {
namespace {

namespace fs = std::filesystem;

const std::string kPairs = std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit/verify/pairs/";

class ReplayScript : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flashproof-replay-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "decoy");
    std::ofstream(dir_ / "decoy" / "flashproof") << "#!/bin/sh\necho decoy flashproof\nexit 42\n";
    fs::permissions(dir_ / "decoy" / "flashproof", fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the negative-zero case with `binary`; returns the case directory.
  std::string write_case(const std::string& binary) {
    const std::string cex = (dir_ / "cex").string();
    std::string out;
    const int rc =
        run_program({binary, "verify", "--src", kPairs + "negative-zero.src.fp", "--tgt",
                     kPairs + "negative-zero.tgt.fp", "--no-cache", "--no-progress", "--case-dir", cex},
                    out);
    EXPECT_EQ(rc, kExitRefuted) << out;
    return cex + "/pair";
  }

  // Runs the case's replay.sh with only the decoy (and the system) on PATH.
  int replay(const std::string& case_dir, std::string& out) {
    return run_program({"env", "PATH=" + (dir_ / "decoy").string() + ":/usr/bin:/bin", "sh", case_dir + "/replay.sh"},
                       out);
  }

  fs::path dir_;
};

TEST_F(ReplayScript, ReplayRunsTheFlashproofThatWroteTheCaseNotTheOneOnPath) {
  const std::string case_dir = write_case(FLASHPROOF_BINARY);
  std::ifstream f(case_dir + "/replay.sh");
  const std::string script((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(script.find(fs::canonical(FLASHPROOF_BINARY).string()), std::string::npos) << script;
  std::string out;
  EXPECT_EQ(replay(case_dir, out), kExitRefuted) << out;
  EXPECT_EQ(out.find("decoy"), std::string::npos) << out;
  EXPECT_NE(out.find("fails on the inputs"), std::string::npos) << out;
}

TEST_F(ReplayScript, ReplayFallsBackToPathOnlyWhenTheWriterIsGone) {
  const fs::path copy = dir_ / "gone" / "flashproof";
  fs::create_directories(copy.parent_path());
  fs::copy_file(FLASHPROOF_BINARY, copy);
  const std::string case_dir = write_case(copy.string());
  fs::remove(copy);
  std::string out;
  EXPECT_EQ(replay(case_dir, out), 42) << out;
  EXPECT_NE(out.find(copy.string() + " no longer exists; using flashproof from PATH"), std::string::npos) << out;
  EXPECT_NE(out.find("decoy flashproof"), std::string::npos) << out;
}

}  // namespace
}  // namespace fp
