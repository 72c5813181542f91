#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "core/diagnostic.h"

namespace fp {

namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

std::string random_tag() {
  unsigned char b[8] = {};
  if (getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) {
    const auto t = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::memcpy(b, &t, sizeof b);
  }
  std::string s;
  for (unsigned char c : b) s += fmt::format("{:02x}", c);
  return s;
}

}  // namespace

AtomicFile::AtomicFile(std::string path, mode_t mode) : path_(std::move(path)) {
  const std::filesystem::path target(path_);
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  const std::string base = target.filename().string();
  if (base.empty() || base == "." || base == "..")
    throw UserError(kExitCantCreate, path_, 0, 0, "cannot create: not a file name");
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    tmp_ = dir + "/." + base + ".tmp-" + std::to_string(::getpid()) + "-" + random_tag();
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int err = errno;
    tmp_.clear();
    throw UserError(kExitCantCreate, path_, 0, 0,
                    fmt::format("cannot create a temporary file in '{}': {}", dir, std::strerror(err)));
  }
  buffer_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(int code, const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  tmp_.clear();
  throw UserError(static_cast<ExitCode>(code), path_, 0, 0,
                  fmt::format("{} failed: {} (nothing was written under this name)", what, std::strerror(err)));
}

void AtomicFile::flush_buffer() {
  const char* p = buffer_.data();
  std::size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(kExitIoError, "writing", errno);
    }
    if (n == 0) fail(kExitIoError, "writing", EIO);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

void AtomicFile::write(const void* data, std::size_t size) {
  FP_INTERNAL_CHECK(fd_ >= 0 && !committed_, "write to a closed output {}", path_);
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const std::size_t take = std::min(size, kBufferBytes - buffer_.size());
    buffer_.append(p, take);
    p += take;
    size -= take;
    if (buffer_.size() == kBufferBytes) flush_buffer();
  }
}

void AtomicFile::commit() {
  FP_INTERNAL_CHECK(fd_ >= 0 && !committed_, "commit of a closed output {}", path_);
  flush_buffer();
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail(kExitIoError, "flushing", errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail(kExitIoError, "closing", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail(kExitIoError, "renaming the temporary onto it", errno);
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode) {
  AtomicFile f(path, mode);
  f.write(bytes);
  f.commit();
}

}  // namespace fp
