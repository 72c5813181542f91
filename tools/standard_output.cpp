#include "tools/standard_output.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/diagnostic.h"
#include "core/support/atomic_file.h"

namespace fp::cli {

namespace {

constexpr const char* kName = "<standard output>";

std::string describe(int err) {
  // A failure in an earlier implicit flush leaves only the error flag, not its errno.
  return err != 0 ? std::strerror(err) : "an earlier write failed";
}

}  // namespace

void write_standard_output(std::string_view text) {
  errno = 0;
  const std::size_t n = std::fwrite(text.data(), 1, text.size(), stdout);
  if (n != text.size() || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    throw UserError(kExitIoError, kName, 0, 0, fmt::format("write failed: {}", describe(err)));
  }
}

void write_text_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-")
    write_standard_output(text);
  else
    write_file_atomically(path, text);
}

std::optional<std::string> standard_output_failure() {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return std::nullopt;
  const int err = errno;
  return fmt::format("{}: write failed: {}", kName, describe(err));
}

}  // namespace fp::cli
