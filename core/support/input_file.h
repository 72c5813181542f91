#pragma once
// Reading a file a user named, treated as hostile: what is not a file is refused before a byte is
// read, and nothing is read past a cap, so a reader ends in bounded time and memory whatever the
// path names (docs/architecture.md, "Hostile files").
//
//   a regular file           read, up to the cap
//   a pipe or FIFO           read up to the cap when the caller allows it (a shell's <(...) or a
//                            pipe named on the command line); refused otherwise
//   a directory              refused: exit 66, "is a directory: expected a file"
//   a device, a socket       refused: exit 66, "is a character device (e.g. /dev/zero): expected a
//                            file", never read (a device can be endless)
//   larger than the cap      exit 65 naming the cap; reading stops at the cap + 1st byte
//
// The file is opened with O_NONBLOCK (opening a FIFO with no writer does not wait) and checked
// with fstat on the descriptor it reads, so what is checked is what is read.

#include <cstddef>
#include <string>
#include <string_view>

namespace fp {

struct InputFileRules {
  std::size_t max_bytes = 0;  // the cap
  bool allow_pipe = false;    // read a pipe or FIFO (up to the cap)
  std::string_view what;      // what the file should be, for the messages ("a routine (.fp)")
  // false: a symbolic link is refused (O_NOFOLLOW), exit 66 — for files inside flashproof's own
  // directories (a campaign's corpus and findings), where a planted link could copy out a file the
  // user did not name.
  bool follow_links = true;
};

std::string read_input_file(const std::string& path, const InputFileRules& rules);

}  // namespace fp
