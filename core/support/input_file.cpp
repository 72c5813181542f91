// Reading a user's file as hostile (core/support/input_file.h).

#include "core/support/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/diagnostic.h"

namespace fp {

namespace {

// What a non-regular file is, in words; "" for a regular file.
std::string kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string read_input_file(const std::string& path, const InputFileRules& rules) {
  const std::string expected = rules.what.empty() ? std::string("a file") : std::string(rules.what);
  Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (rules.follow_links ? 0 : O_NOFOLLOW)));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ELOOP && !rules.follow_links)
      throw UserError(kExitMissingInput, path, 0, 0, fmt::format("is a symbolic link, not followed: expected {}", expected));
    if (err == EISDIR)
      throw UserError(kExitMissingInput, path, 0, 0, fmt::format("is a directory: expected {}", expected));
    throw UserError(kExitMissingInput, path, 0, 0, fmt::format("cannot open ({})", std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw UserError(kExitMissingInput, path, 0, 0, fmt::format("cannot read ({})", std::strerror(errno)));
  const std::string kind = kind_of(st.st_mode);
  if (!kind.empty() && !(S_ISFIFO(st.st_mode) && rules.allow_pipe))
    throw UserError(kExitMissingInput, path, 0, 0, fmt::format("is {}: expected {}", kind, expected));
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > rules.max_bytes)
    throw UserError(kExitMalformed, path, 0, 0,
                    fmt::format("{} bytes, more than the {} bytes {} may hold", st.st_size, rules.max_bytes, expected));
  // Blocking reads from here: a pipe's writer is waited for, as a shell's reader would.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  std::string contents;
  if (S_ISREG(st.st_mode)) contents.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UserError(kExitMissingInput, path, 0, 0, fmt::format("cannot read ({})", std::strerror(errno)));
    if (n == 0) break;
    if (contents.size() + static_cast<std::size_t>(n) > rules.max_bytes)
      throw UserError(kExitMalformed, path, 0, 0,
                      fmt::format("more than the {} bytes {} may hold (reading stopped there)", rules.max_bytes,
                                  expected));
    contents.append(buffer, static_cast<std::size_t>(n));
  }
  return contents;
}

}  // namespace fp
