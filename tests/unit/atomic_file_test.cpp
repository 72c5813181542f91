// Unit tests of core/support/atomic_file.h and core/support/atomic_directory.h: an output reaches its name whole
// or not at all. A write that fails (a file-size limit standing in for a full disk) is exit 74
// naming the target, leaving neither the target nor a temporary; a target that cannot be created
// is 73; what is already under the name (a file's permissions, a symbolic link, a device, an
// earlier case directory) is handled as documented; a .npy streamed through an AtomicFile is the
// serialized file byte for byte.

#include "core/support/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "child_process.h"
#include "core/diagnostic.h"
#include "core/npy.h"
#include "core/support/atomic_directory.h"

namespace fp {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flashproof-atomic-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Every entry of the directory, hidden ones (temporaries) included.
  std::vector<std::string> entries(const fs::path& d) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(d)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

// Runs `write` in a child whose files may not grow past `limit` bytes; returns its exit code and
// the message of the UserError it threw.
testing::ChildResult under_file_size_limit(rlim_t limit, const std::function<void()>& write) {
  return testing::run_in_child(
      [&] {
        try {
          write();
        } catch (const UserError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          return static_cast<int>(e.code());
        }
        return 0;
      },
      testing::ChildLimits{limit, std::nullopt, ""});
}

TEST_F(AtomicFileTest, WritesTheWholeFileAndLeavesNoTemporary) {
  const fs::path p = dir_ / "out.fp";
  write_file_atomically(p.string(), "routine r {}\n");
  EXPECT_EQ(slurp(p), "routine r {}\n");
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"out.fp"});
}

TEST_F(AtomicFileTest, NothingUnderTheNameUntilCommit) {
  const fs::path p = dir_ / "out.fp";
  {
    AtomicFile f(p.string());
    f.write("partial");
    EXPECT_FALSE(fs::exists(p));
    EXPECT_TRUE(fs::exists(f.temporary_path()));
  }  // destroyed without commit
  EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(AtomicFileTest, WriteFailureOnAFullDiskIs74AndLeavesNeitherFileNorTemporary) {
  const fs::path p = dir_ / "big.fp";
  const std::string text(200000, 'x');  // past the 64 KiB limit, in several writes
  testing::ChildResult r = under_file_size_limit(65536, [&] { write_file_atomically(p.string(), text); });
  EXPECT_EQ(r.exit_code, kExitIoError) << r.output;
  EXPECT_NE(r.output.find(p.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << r.output;
  EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(AtomicFileTest, FailedReplacementLeavesTheEarlierFileAsItWas) {
  const fs::path p = dir_ / "report.json";
  write_file_atomically(p.string(), "old report");
  testing::ChildResult r =
      under_file_size_limit(4096, [&] { write_file_atomically(p.string(), std::string(100000, 'n')); });
  EXPECT_EQ(r.exit_code, kExitIoError) << r.output;
  EXPECT_EQ(slurp(p), "old report");
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"report.json"});
}

TEST_F(AtomicFileTest, MissingDirectoryIs73NamingTheTarget) {
  const std::string p = (dir_ / "no-such-dir" / "x.fp").string();
  try {
    write_file_atomically(p, "x");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitCantCreate);
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST_F(AtomicFileTest, DirectoryTargetIs73) {
  fs::create_directories(dir_ / "d");
  try {
    write_file_atomically((dir_ / "d").string(), "x");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitCantCreate) << e.what();
  }
}

TEST_F(AtomicFileTest, ReplacementKeepsThePermissionBits) {
  const fs::path p = dir_ / "replay.sh";
  write_file_atomically(p.string(), "old", 0755);
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read, fs::perm_options::replace);
  write_file_atomically(p.string(), "new");
  EXPECT_EQ(slurp(p), "new");
  EXPECT_EQ(fs::status(p).permissions(), fs::perms::owner_all | fs::perms::group_read);
}

TEST_F(AtomicFileTest, SymbolicLinkIsFollowedAndItsTargetReplaced) {
  fs::create_directories(dir_ / "real");
  write_file_atomically((dir_ / "real" / "out.fp").string(), "old");
  fs::create_symlink("real/out.fp", dir_ / "link.fp");
  write_file_atomically((dir_ / "link.fp").string(), "new");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.fp"));
  EXPECT_EQ(slurp(dir_ / "real" / "out.fp"), "new");
  EXPECT_EQ(entries(dir_ / "real"), std::vector<std::string>{"out.fp"});
}

TEST_F(AtomicFileTest, DeviceTargetIsWrittenDirectlyAndNeverReplaced) {
  write_file_atomically("/dev/null", "discarded");
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // /dev/full fails every write: 74, as for a file on a full disk.
  try {
    write_file_atomically("/dev/full", "lost");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitIoError) << e.what();
  }
}

TEST_F(AtomicFileTest, DevStdoutIsWrittenInPlaceEvenWhenItIsAPipe) {
  // /dev/stdout -> /proc/self/fd/1 -> "pipe:[N]", not a path a temporary could sit beside.
  testing::ChildResult r = testing::run_in_child([] {
    try {
      write_file_atomically("/dev/stdout", "through the pipe\n");
    } catch (const UserError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return static_cast<int>(e.code());
    }
    return 0;
  });
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("through the pipe"), std::string::npos) << r.output;
}

TEST_F(AtomicFileTest, LongFileNameStillGetsATemporaryBesideIt) {
  const fs::path p = dir_ / std::string(250, 'n');
  write_file_atomically(p.string(), "x");
  EXPECT_EQ(slurp(p), "x");
}

TEST_F(AtomicFileTest, CreateOutputDirectoriesIs73WhenAFileIsInTheWay) {
  write_file_atomically((dir_ / "f").string(), "x");
  try {
    create_output_directories((dir_ / "f" / "sub").string());
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitCantCreate) << e.what();
  }
}

TEST_F(AtomicFileTest, NpyStreamedThroughAnAtomicFileIsTheSerializedFile) {
  Tensor t = Tensor::zeros(Prec::BF16, {3, 70000});  // several blocks of the streaming writer
  for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<double>(i % 251) - 125.0;
  const fs::path p = dir_ / "t.npy";
  write_npy(p.string(), t);
  EXPECT_EQ(slurp(p), serialize_npy(t));
}

TEST_F(AtomicFileTest, NpyOnAFullDiskIs74AndLeavesNoTruncatedFile) {
  Tensor t = Tensor::zeros(Prec::F64, {100000});
  const fs::path p = dir_ / "o.npy";
  testing::ChildResult r = under_file_size_limit(65536, [&] { write_npy(p.string(), t); });
  EXPECT_EQ(r.exit_code, kExitIoError) << r.output;
  EXPECT_TRUE(entries(dir_).empty());
}

// ---- AtomicDirectory ---------------------------------------------------------------------------

TEST_F(AtomicFileTest, CaseDirectoryAppearsOnlyWhenComplete) {
  const fs::path d = dir_ / "cex" / "1.pair";
  {
    AtomicDirectory out(d.string());
    out.write_file("src.fp", "src");
    out.make_subdirectory("inputs");
    out.write_file("inputs/a.npy", "a");
    EXPECT_FALSE(fs::exists(d));
    out.commit();
  }
  EXPECT_EQ(slurp(d / "src.fp"), "src");
  EXPECT_EQ(slurp(d / "inputs" / "a.npy"), "a");
  EXPECT_EQ(entries(dir_ / "cex"), std::vector<std::string>{"1.pair"});
}

TEST_F(AtomicFileTest, CaseDirectoryReplacesAnEarlierOneWhole) {
  const fs::path d = dir_ / "case";
  fs::create_directories(d);
  write_file_atomically((d / "stale.npy").string(), "stale");
  AtomicDirectory out(d.string());
  out.write_file("src.fp", "new");
  out.commit();
  EXPECT_EQ(entries(d), std::vector<std::string>{"src.fp"});
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"case"});
}

TEST_F(AtomicFileTest, CaseDirectoryWriteFailureIs74NamingTheFinalPathAndLeavesNothing) {
  const fs::path d = dir_ / "case";
  testing::ChildResult r = under_file_size_limit(1024, [&] {
    AtomicDirectory out(d.string());
    out.write_file("src.fp", "src");
    out.write_file("big.npy", std::string(100000, 'b'));
    out.commit();
  });
  EXPECT_EQ(r.exit_code, kExitIoError) << r.output;
  EXPECT_NE(r.output.find((d / "big.npy").string()), std::string::npos) << r.output;
  EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(AtomicFileTest, CaseDirectoryFailureKeepsTheEarlierCase) {
  const fs::path d = dir_ / "case";
  fs::create_directories(d);
  write_file_atomically((d / "src.fp").string(), "earlier");
  testing::ChildResult r = under_file_size_limit(1024, [&] {
    AtomicDirectory out(d.string());
    out.write_file("src.fp", std::string(100000, 'n'));
    out.commit();
  });
  EXPECT_EQ(r.exit_code, kExitIoError) << r.output;
  EXPECT_EQ(slurp(d / "src.fp"), "earlier");
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"case"});
}

TEST_F(AtomicFileTest, CaseDirectoryIs73WhenAFileHoldsItsName) {
  write_file_atomically((dir_ / "case").string(), "a file");
  AtomicDirectory out((dir_ / "case").string());
  out.write_file("src.fp", "src");
  try {
    out.commit();
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitCantCreate) << e.what();
  }
  EXPECT_EQ(slurp(dir_ / "case"), "a file");
}

}  // namespace
}  // namespace fp
