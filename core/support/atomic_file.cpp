#include "core/support/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
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

namespace fs = std::filesystem;

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;
// Room left in a 255-byte file name for ".", the kind, the pid and the random tag.
constexpr std::size_t kMaxBaseInTemporary = 200;
// As the kernel's ELOOP limit.
constexpr int kMaxLinkHops = 40;

std::string random_tag() {
  unsigned char b[8] = {};
  if (getrandom(b, sizeof b, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof b)) {
    const auto t = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::memcpy(b, &t, sizeof b);
  }
  std::string s;
  for (unsigned char c : b) s += fmt::format("{:02x}", c);
  return s;
}

// The file a chain of symbolic links ends at (the last one may dangle: writing creates it).
std::string follow_links(std::string p, const std::string& shown) {
  for (int hop = 0; hop < kMaxLinkHops; ++hop) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) return p;  // open() reports what is wrong with it
    p = target.is_absolute() ? target.string() : (fs::path(p).parent_path() / target).string();
  }
  throw UserError(kExitCantCreate, shown, 0, 0, "cannot create: too many levels of symbolic links");
}

// Names the system provides (/dev/stdout, /proc/self/fd/N) are never replaced, even when they
// lead to a regular file: the descriptor behind them may be in append mode, or shared.
bool is_system_path(const std::string& path) {
  return path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
}

std::string parent_directory(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

// A rename is durable once the directory entry is: best effort, since some file systems refuse
// fsync on a directory and the rename itself already happened.
void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string sibling_temporary_name(const std::string& path, std::string_view kind) {
  std::string base = fs::path(path).filename().string();
  if (base.size() > kMaxBaseInTemporary) base.resize(kMaxBaseInTemporary);
  return fmt::format("{}/.{}.{}-{}-{}", parent_directory(path), base, kind, ::getpid(), random_tag());
}

AtomicFile::AtomicFile(std::string path, mode_t mode, std::string shown)
    : path_(std::move(path)), shown_(std::move(shown)) {
  if (shown_.empty()) shown_ = path_;
  const std::string base = fs::path(path_).filename().string();
  if (base.empty() || base == "." || base == "..")
    throw UserError(kExitCantCreate, shown_, 0, 0, "cannot create: not a file name");
  // A name the file system cannot hold is known before anything is written (it would otherwise
  // surface as a failed rename, exit 74, after the whole file was written).
  if (base.size() > kMaxFileNameBytes)
    throw UserError(kExitCantCreate, shown_, 0, 0,
                    fmt::format("cannot create: the file name is {} bytes, more than the {} a name may have",
                                base.size(), kMaxFileNameBytes));
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;  // through any links
  if (exists && S_ISDIR(st.st_mode))
    throw UserError(kExitCantCreate, shown_, 0, 0, "cannot create: it is a directory");
  // /dev/stdout is a link to /proc/self/fd/1, whose target may be "pipe:[...]": such a name is
  // opened as it is, and whatever it reaches is written in place.
  if (exists && (!S_ISREG(st.st_mode) || is_system_path(path_))) {
    open_direct();
    return;
  }
  path_ = follow_links(path_, shown_);
  open_temporary(exists ? st.st_mode & 07777 : mode);
  // A replacement keeps the permission bits of the file it replaces (the umask applied at creation).
  if (exists) (void)::fchmod(fd_, st.st_mode & 07777);
  buffer_.reserve(kBufferBytes);
}

void AtomicFile::open_temporary(mode_t mode) {
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    tmp_ = sibling_temporary_name(path_, "tmp");
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int err = errno;
    tmp_.clear();
    throw UserError(kExitCantCreate, shown_, 0, 0,
                    fmt::format("cannot create a temporary file in '{}': {}", parent_directory(path_),
                                std::strerror(err)));
  }
}

void AtomicFile::open_direct() {
  // O_NONBLOCK: a FIFO with no reader is refused at once (ENXIO) instead of waiting for one; the
  // writes themselves block as usual.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd_ < 0) {
    const int err = errno;
    throw UserError(kExitCantCreate, shown_, 0, 0,
                    err == ENXIO ? std::string("cannot open for writing: a FIFO with no reader")
                                 : fmt::format("cannot open for writing: {}", std::strerror(err)));
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  direct_ = true;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(int code, const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
  throw UserError(
      static_cast<ExitCode>(code), shown_, 0, 0,
      direct_ ? fmt::format("{} failed: {}", what, std::strerror(err))
              : fmt::format("{} failed: {} (nothing was written under this name)", what, std::strerror(err)));
}

void AtomicFile::write_all(const char* p, std::size_t left) {
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
}

void AtomicFile::flush_buffer() {
  write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::write(const void* data, std::size_t size) {
  FP_INTERNAL_CHECK(fd_ >= 0 && !committed_, "write to a closed output {}", shown_);
  const char* p = static_cast<const char*>(data);
  // A large block goes straight to the file: copying it through the buffer gains nothing.
  if (size >= kBufferBytes) {
    flush_buffer();
    write_all(p, size);
    return;
  }
  while (size > 0) {
    const std::size_t take = std::min(size, kBufferBytes - buffer_.size());
    buffer_.append(p, take);
    p += take;
    size -= take;
    if (buffer_.size() == kBufferBytes) flush_buffer();
  }
}

void AtomicFile::commit() {
  FP_INTERNAL_CHECK(fd_ >= 0 && !committed_, "commit of a closed output {}", shown_);
  flush_buffer();
  if (!direct_ && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS)
    fail(kExitIoError, "flushing", errno);
  const int rc = ::close(fd_);
  const int close_err = errno;
  fd_ = -1;
  if (rc != 0) fail(kExitIoError, "closing", close_err);
  if (!direct_) {
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      fail(kExitIoError, "renaming the temporary onto it", errno);
    tmp_.clear();
    sync_directory(parent_directory(path_));
  }
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode) {
  AtomicFile f(path, mode);
  f.write(bytes);
  f.commit();
}

void create_output_directories(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw UserError(kExitCantCreate, dir, 0, 0, fmt::format("cannot create the directory: {}", ec.message()));
  if (!fs::is_directory(dir, ec))
    throw UserError(kExitCantCreate, dir, 0, 0,
                    "cannot create the directory: a file of that name is in the way");
}

}  // namespace fp
