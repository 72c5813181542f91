#include "tools/standard_output.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include <sys/stat.h>

#include "core/diagnostic.h"
#include "core/support/atomic_file.h"

namespace fp::cli {

namespace {

constexpr const char* kName = "<standard output>";

std::string describe(int err) {
  // A failure in an earlier implicit flush leaves only the error flag, not its errno.
  return err != 0 ? std::strerror(err) : "an earlier write failed";
}

std::vector<std::string>& inputs_read() {
  static std::vector<std::string> v;
  return v;
}
// The same file: equivalent when both exist, else the same absolute, normalized path.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) return std::filesystem::equivalent(a, b, ec);
  return std::filesystem::absolute(a, ec).lexically_normal() == std::filesystem::absolute(b, ec).lexically_normal();
}

// A device, FIFO or socket that exists: written in place, any number of times.
bool is_special(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

}  // namespace

void note_input_file(const std::string& path) {
  if (path.empty() || path == "-" || is_special(path)) return;
  inputs_read().push_back(path);
}

void check_output_path(const std::string& path) {
  if (path.empty() || path == "-" || is_special(path)) return;
  for (const auto& in : inputs_read())
    if (same_file(in, path))
      throw UserError(kExitCantCreate, path, 0, 0,
                      fmt::format("refusing to write: it is an input of this command ({}); choose another output", in));
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    if (path.empty() || path == "-" || is_special(path)) continue;
    for (std::size_t j = 0; j < i; ++j)
      if (!outputs[j].second.empty() && same_file(outputs[j].second, path))
        throw UserError(kExitCantCreate, path, 0, 0,
                        fmt::format("{} and {} name the same file: each output needs its own", outputs[j].first, option));
  }
}

void write_standard_output(std::string_view text) {
  errno = 0;
  const std::size_t n = std::fwrite(text.data(), 1, text.size(), stdout);
  if (n != text.size() || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    throw UserError(kExitIoError, kName, 0, 0, fmt::format("write failed: {}", describe(err)));
  }
}

void write_text_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    write_standard_output(text);
    return;
  }
  check_output_path(path);
  write_file_atomically(path, text);
}

std::optional<std::string> standard_output_failure() {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return std::nullopt;
  const int err = errno;
  return fmt::format("{}: write failed: {}", kName, describe(err));
}

}  // namespace fp::cli
