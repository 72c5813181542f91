#include "core/support/atomic_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/diagnostic.h"

namespace fp {

namespace {

namespace fs = std::filesystem;

std::string parent_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);  // best effort: a leftover staging directory is hidden and harmless
}

}  // namespace

AtomicDirectory::AtomicDirectory(std::string path) : path_(std::move(path)) {
  while (path_.size() > 1 && path_.back() == '/') path_.pop_back();
  const std::string base = fs::path(path_).filename().string();
  if (base.empty() || base == "." || base == "..")
    throw UserError(kExitCantCreate, path_, 0, 0, "cannot create: not a directory name");
  create_output_directories(parent_of(path_));
  for (int attempt = 0; attempt < 16; ++attempt) {
    staging_ = sibling_temporary_name(path_, "tmp");
    if (::mkdir(staging_.c_str(), 0777) == 0) return;
    if (errno != EEXIST) break;
  }
  const int err = errno;
  staging_.clear();
  throw UserError(
      kExitCantCreate, path_, 0, 0,
      fmt::format("cannot create a staging directory in '{}': {}", parent_of(path_), std::strerror(err)));
}

AtomicDirectory::~AtomicDirectory() {
  if (!committed_ && !staging_.empty()) remove_tree(staging_);
}

std::unique_ptr<AtomicFile> AtomicDirectory::open(const std::string& relative, mode_t mode) {
  FP_INTERNAL_CHECK(!committed_ && !staging_.empty(), "file {} added to a committed directory", relative);
  return std::make_unique<AtomicFile>(staging_ + "/" + relative, mode, final_name(relative));
}

void AtomicDirectory::write_file(const std::string& relative, std::string_view bytes, mode_t mode) {
  std::unique_ptr<AtomicFile> f = open(relative, mode);
  f->write(bytes);
  f->commit();
}

void AtomicDirectory::make_subdirectory(const std::string& relative) {
  const std::string staged = staging_ + "/" + relative;
  if (::mkdir(staged.c_str(), 0777) != 0 && errno != EEXIST) {
    const int err = errno;
    throw UserError(kExitCantCreate, final_name(relative), 0, 0,
                    fmt::format("cannot create the directory: {}", std::strerror(err)));
  }
}

// An earlier directory holds the name: swap the two in one step, then drop the old one (now at
// the staging name). Without RENAME_EXCHANGE the old one is moved aside first, which leaves a
// moment with no directory under the name but never a partial one.
void AtomicDirectory::replace_existing() {
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, path_.c_str(), RENAME_EXCHANGE) == 0) return;
  if (errno != EINVAL && errno != ENOSYS) {
    const int err = errno;
    throw UserError(
        kExitIoError, path_, 0, 0,
        fmt::format("replacing the earlier directory failed: {} (it is left as it was)", std::strerror(err)));
  }
  const std::string aside = sibling_temporary_name(path_, "old");
  if (::rename(path_.c_str(), aside.c_str()) != 0) {
    const int err = errno;
    throw UserError(kExitIoError, path_, 0, 0,
                    fmt::format("moving the earlier directory aside failed: {} (it is left as it was)",
                                std::strerror(err)));
  }
  if (::rename(staging_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    (void)::rename(aside.c_str(), path_.c_str());
    throw UserError(kExitIoError, path_, 0, 0,
                    fmt::format("renaming the staging directory onto it failed: {}", std::strerror(err)));
  }
  staging_ = aside;  // what is left to remove
}

void AtomicDirectory::commit() {
  FP_INTERNAL_CHECK(!committed_ && !staging_.empty(), "second commit of {}", path_);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw UserError(kExitCantCreate, path_, 0, 0,
                      "cannot create the directory: a file of that name is in the way");
    replace_existing();
    remove_tree(staging_);
  } else if (::rename(staging_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    throw UserError(
        kExitIoError, path_, 0, 0,
        fmt::format("renaming the staging directory onto it failed: {} (nothing was written under this name)",
                    std::strerror(err)));
  }
  committed_ = true;
  staging_.clear();
  const int fd = ::open(parent_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::fsync(fd);  // best effort, as for AtomicFile
    ::close(fd);
  }
}

}  // namespace fp
