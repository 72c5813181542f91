#pragma once
// Every file flashproof writes reaches its final name whole or not at all: the bytes go to a
// temporary beside the target (same directory, so the rename is atomic), which is written in full,
// flushed to the device (fsync), closed and checked, and only then renamed over the target. Any
// failure removes the temporary, leaves the target as it was, and throws UserError naming the
// target: exit 73 (EX_CANTCREAT) when the temporary cannot be created, 74 (EX_IOERR) when a write,
// flush, close or the rename fails (a full disk among them).

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace fp {

class AtomicFile {
 public:
  // Creates the temporary. `mode` is the new file's permission (the umask applies), e.g. 0600 for
  // cache entries.
  explicit AtomicFile(std::string path, mode_t mode = 0666);
  ~AtomicFile();  // an uncommitted temporary is removed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // Flushes, fsyncs, closes and renames onto the target. Call once.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temporary_path() const { return tmp_; }

 private:
  void flush_buffer();
  [[noreturn]] void fail(int code, const std::string& what, int err);

  std::string path_, tmp_;
  int fd_ = -1;
  std::string buffer_;
  bool committed_ = false;
};

// The whole of `bytes` as `path`, through an AtomicFile.
void write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode = 0666);

}  // namespace fp
