#include "core/support/executable_path.h"

#include <unistd.h>

#include <climits>
#include <string_view>

namespace fp {

namespace {

std::string& recorded() {
  static std::string path;
  return path;
}

// One word for a POSIX shell, always single-quoted (a path may hold anything).
std::string single_quoted(std::string_view s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

void set_flashproof_executable(std::string path) {
  recorded() = std::move(path);
}

const std::string& flashproof_executable() {
  return recorded();
}

std::string running_executable() {
  char buf[PATH_MAX + 1];
  const ssize_t n = ::readlink("/proc/self/exe", buf, PATH_MAX);
  if (n <= 0) return {};
  std::string path(buf, static_cast<std::size_t>(n));
  // The kernel marks a binary replaced while it runs; the name is still where a rebuild lands.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path;
}

std::string replay_script_preamble() {
  const std::string& exe = flashproof_executable();
  if (exe.empty())
    return "# The flashproof that wrote this file is unknown: flashproof from PATH.\nFLASHPROOF=flashproof\n";
  return "# The flashproof that wrote this file; flashproof from PATH only when that file is gone.\n"
         "FLASHPROOF=" +
         single_quoted(exe) +
         "\n"
         "if [ ! -x \"$FLASHPROOF\" ]; then\n"
         "  echo \"replay.sh: $FLASHPROOF no longer exists; using flashproof from PATH\" >&2\n"
         "  FLASHPROOF=flashproof\n"
         "fi\n";
}

}  // namespace fp
