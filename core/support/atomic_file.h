#pragma once
// Every file flashproof writes reaches its final name whole or not at all: the bytes go to a
// temporary beside the target (same directory, so the rename is atomic), which is written in full,
// flushed to the device (fsync), closed and checked, and only then renamed over the target. Any
// failure removes the temporary, leaves the target as it was, and throws UserError naming the
// target: exit 73 (EX_CANTCREAT) when the temporary cannot be created, 74 (EX_IOERR) when a write,
// flush, close or the rename fails (a full disk, a file-size limit among them).
//
// What the target already is decides the rest:
//   - a regular file: replaced; the replacement keeps its permission bits;
//   - a symbolic link: followed (as a shell's `>` would), the file it names is replaced;
//   - a device, FIFO or socket (/dev/null, a pipe), or any existing name under /dev/ or /proc/
//     (/dev/stdout, whatever it leads to): there is nothing to rename over, so the bytes are
//     written to it directly, every write still checked; a FIFO with no reader is exit 73 at once
//     (never a wait for one);
//   - a file name longer than kMaxFileNameBytes: exit 73 before anything is written;
//   - a directory: exit 73.

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace fp {

// The longest file name (one path component) a file is created under: NAME_MAX on Linux. A longer
// one is exit 73 before anything is written.
inline constexpr std::size_t kMaxFileNameBytes = 255;

class AtomicFile {
 public:
  // Creates the temporary. `mode` is the new file's permission (the umask applies), e.g. 0600 for
  // cache entries. `shown`, when not empty, is the name errors give instead of `path` (a file
  // staged inside an AtomicDirectory is reported under its final name).
  explicit AtomicFile(std::string path, mode_t mode = 0666, std::string shown = "");
  ~AtomicFile();  // an uncommitted temporary is removed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // Flushes, fsyncs, closes and renames onto the target. Call once.
  void commit();

  const std::string& path() const { return path_; }
  // Empty when the target is written directly (a device or FIFO) or after a failure.
  const std::string& temporary_path() const { return tmp_; }

 private:
  void open_temporary(mode_t mode);
  void open_direct();
  void flush_buffer();
  void write_all(const char* p, std::size_t size);
  [[noreturn]] void fail(int code, const std::string& what, int err);

  std::string path_;   // where the bytes go (a symbolic link resolved)
  std::string shown_;  // the name errors give
  std::string tmp_;
  int fd_ = -1;
  bool direct_ = false;
  std::string buffer_;
  bool committed_ = false;
};

// The whole of `bytes` as `path`, through an AtomicFile.
void write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode = 0666);

// Creates directory `dir` and its missing parents (an existing directory is fine). Failure is
// UserError 73 naming `dir` (and the reason: a file in the way, permission, a full disk).
void create_output_directories(const std::string& dir);

// A hidden name beside `path` for a temporary: same directory, ".BASE.KIND-PID-RANDOM", BASE cut so
// the name stays under NAME_MAX. Used by AtomicFile and AtomicDirectory.
std::string sibling_temporary_name(const std::string& path, std::string_view kind);

}  // namespace fp
