// Private directories (core/support/private_directory.h).

#include "core/support/private_directory.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/diagnostic.h"

namespace fp {

namespace {

std::string stat_problem(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link (it must be a real directory)";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != ::geteuid())
    return fmt::format("it is owned by uid {}, not by the user running flashproof (uid {})", st.st_uid,
                       ::geteuid());
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("it is writable by {} (mode {:04o}); make it private with chmod 700",
                       (st.st_mode & S_IWOTH) != 0 ? "others" : "its group", st.st_mode & 07777);
  return "";
}

// Every prefix of `dir` that names a directory to create: "a", "a/b", "a/b/c" (and "/a", ... for
// an absolute path; the root itself is never created).
std::vector<std::string> prefixes(const std::string& dir) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/')
      if (dir[i - 1] != '/') out.push_back(dir.substr(0, i));
  return out;
}

}  // namespace

std::string without_trailing_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string private_directory_problem(const std::string& dir) {
  struct stat st {};
  if (::lstat(without_trailing_slashes(dir).c_str(), &st) != 0)
    return errno == ENOENT ? "it does not exist"
                           : fmt::format("it cannot be inspected: {}", std::strerror(errno));
  return stat_problem(st);
}

std::string make_private_directory(const std::string& dir) {
  const std::string d = without_trailing_slashes(dir);
  if (d.empty()) return "it is not a directory name";
  for (const std::string& p : prefixes(d)) {
    if (::mkdir(p.c_str(), 0700) == 0) {
      // The umask may have taken bits away (never added any): make the mode exactly 0700.
      ::chmod(p.c_str(), 0700);
    } else if (errno != EEXIST) {
      return fmt::format("'{}' cannot be created: {}", p, std::strerror(errno));
    }
  }
  return private_directory_problem(d);
}

std::string make_fresh_private_directory(const std::string& prefix) {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string tmpl = (base / (prefix + "XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw UserError(kExitCantCreate, tmpl, 0, 0,
                    fmt::format("cannot create a private temporary directory: {}", std::strerror(errno)));
  return tmpl;
}

}  // namespace fp
