// Reading a user's file as hostile (core/support/input_file.h): what is not a file is refused
// before a byte is read, a pipe stops at its cap while reading, a regular file over the cap is
// refused from its size.

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/diagnostic.h"
#include "core/support/input_file.h"

namespace fp {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / fmt::format("fp-input-file-{}-{}", ::getpid(), name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

int exit_of(const std::string& path, const InputFileRules& rules, std::string* message = nullptr) {
  try {
    read_input_file(path, rules);
    return 0;
  } catch (const UserError& e) {
    if (message) *message = e.message();
    return e.code();
  }
}

TEST(InputFile, ReadsARegularFileWhole) {
  const fs::path d = scratch("regular");
  std::ofstream(d / "a.fp") << "routine r {}\n";
  EXPECT_EQ(read_input_file((d / "a.fp").string(), {1024, false, "a routine"}), "routine r {}\n");
  fs::remove_all(d);
}

TEST(InputFile, RefusesWhatIsNotAFileBeforeReading) {
  const fs::path d = scratch("kinds");
  std::string why;
  EXPECT_EQ(exit_of(d.string(), {1024, true, "a routine"}, &why), kExitMissingInput);
  EXPECT_EQ(why, "is a directory: expected a routine");
  EXPECT_EQ(exit_of("/dev/zero", {1024, true, "a routine"}, &why), kExitMissingInput);
  EXPECT_EQ(why, "is a character device: expected a routine");
  EXPECT_EQ(exit_of((d / "missing").string(), {1024, true, "a routine"}, &why), kExitMissingInput);
  const std::string fifo = (d / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(exit_of(fifo, {1024, false, "a case"}, &why), kExitMissingInput) << "a FIFO where pipes are refused";
  EXPECT_EQ(why, "is a pipe: expected a case");
  // Allowed, a FIFO with no writer reads as empty at once.
  EXPECT_EQ(read_input_file(fifo, {1024, true, "a routine"}), "");
  fs::remove_all(d);
}

TEST(InputFile, LinksAreRefusedWhereTheCallerSaysSo) {
  const fs::path d = scratch("links");
  std::ofstream(d / "secret") << "secret";
  fs::create_symlink(d / "secret", d / "link");
  EXPECT_EQ(read_input_file((d / "link").string(), {1024, false, "a case"}), "secret") << "followed by default";
  std::string why;
  EXPECT_EQ(exit_of((d / "link").string(), {1024, false, "a case", false}, &why), kExitMissingInput);
  EXPECT_EQ(why, "is a symbolic link, not followed: expected a case");
  fs::remove_all(d);
}

TEST(InputFile, StopsAtTheCap) {
  const fs::path d = scratch("cap");
  std::ofstream(d / "big") << std::string(2048, 'x');
  std::string why;
  EXPECT_EQ(exit_of((d / "big").string(), {1024, false, "a case"}, &why), kExitMalformed);
  EXPECT_NE(why.find("more than the 1024 bytes a case may hold"), std::string::npos) << why;
  // An endless pipe: the reader stops at the cap, in bounded time and memory.
  // The writer ends on EPIPE once the read end is closed: no SIGPIPE for this process meanwhile.
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &before);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([w = fds[1]] {
    const std::string block(4096, 'y');
    while (::write(w, block.data(), block.size()) > 0) {
    }
    ::close(w);
  });
  const std::string path = fmt::format("/proc/self/fd/{}", fds[0]);
  EXPECT_EQ(exit_of(path, {1 << 16, true, "a routine"}, &why), kExitMalformed);
  EXPECT_NE(why.find("reading stopped there"), std::string::npos) << why;
  ::close(fds[0]);  // the writer sees EPIPE and ends
  writer.join();
  ::sigaction(SIGPIPE, &before, nullptr);
  fs::remove_all(d);
}

}  // namespace
}  // namespace fp
