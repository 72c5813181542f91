#pragma once
// The C JIT: compiles generated C with the system compiler into a shared object and loads it with
// dlopen. Compiled objects are cached by content: the key is the SHA-256 of the source, the
// compiler's path and `--version` text, the flags and the host CPU's model and feature flags
// (-march=native code is only valid where it was compiled), so a hit is always the same program.
// The compiler runs with an argument vector (posix_spawnp), never through a shell; the source file
// name is the key, so no routine name reaches the command line.
//
// The cache can never make flashproof run code it did not compile (core/support/private_cache.h): its
// directory is private (0700, refused otherwise), and an object is loaded only when its bytes
// match the seal recorded when it was compiled — their SHA-256 under an HMAC with the per-user key
// — and it is loaded through the very descriptor those bytes were read from
// (dlopen("/proc/self/fd/N")), so nothing can be swapped in between. An entry that fails any check
// is compiled again, never loaded and never reported as a bug. Without HOME and XDG_CACHE_HOME
// the cache is a fresh private directory of this process (mkdtemp), removed at exit.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/support/private_cache.h"

namespace fp {

// -O3 -march=native -mprefer-vector-width=512 -ffp-contract=off -fno-fast-math -fno-math-errno
// -fopenmp -fPIC -shared. (-fno-math-errno only lets sqrt be inlined: it changes no value.
// -mprefer-vector-width=512 lets GCC use the whole AVX-512 register for a lane band of 16 rows, where
// it would otherwise split it in two 256-bit halves; lanes are independent, so no value changes, and
// it is ignored without AVX-512. -ffp-contract=off and the absence of any fast-math flag are what
// the semantics need: docs/executors.md.)
std::string default_c_flags();

struct JitOptions {
  std::string cc = "cc";
  std::string flags;             // whitespace-separated
  std::string cache_dir;         // empty: default_cache_dir()
  bool use_cache = true;         // false: compile in a private scratch directory; nothing read or stored
  bool flags_from_user = false;  // a compile failure is then the user's flags' fault (ExecError)
};

// $FLASHPROOF_JIT_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/flashproof/jit (relative values of
// XDG_CACHE_HOME and HOME are ignored); "" when there is neither.
std::string configured_cache_dir();
// configured_cache_dir(), else this process's private directory (mkdtemp, removed at exit).
std::string default_cache_dir();

// The JIT cache's size limit: $FLASHPROOF_JIT_CACHE_MAX (e.g. 4G), else 2 GiB.
inline constexpr std::uint64_t kDefaultJitCacheBytes = std::uint64_t{2} << 30;
std::uint64_t jit_cache_limit();
// The JIT cache at `dir` (core/support/private_cache.h); CUDA cubins are kept there too.
CacheSpec jit_cache_spec(const std::string& dir);

// A loaded shared object; dlclose on destruction. It was loaded through the descriptor `fd`
// (dlopen("/proc/self/fd/N")), which stays open while the object is loaded: the loader knows an
// object by the name it was opened under, so N must name no other file meanwhile.
class SharedObject {
 public:
  SharedObject(void* handle, std::string path, int fd) : handle_(handle), path_(std::move(path)), fd_(fd) {}
  ~SharedObject();
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;
  // The address of `name`, or nullptr.
  void* symbol(const char* name) const;
  // The cache entry it was loaded from (for messages).
  const std::string& path() const { return path_; }
  // The bytes of the loaded file, read through the descriptor it was loaded by (export_c_object).
  std::string bytes() const;

 private:
  void* handle_;
  std::string path_;
  int fd_;
};

struct JitResult {
  std::shared_ptr<SharedObject> object;
  bool cache_hit = false;
  double compile_seconds = 0;
  std::string key;  // hex SHA-256
};

// Compiles (or finds in the cache) and loads. A compiler that cannot be run, or a compile failure
// under user-chosen flags, throws ExecError with the compiler's messages; a compile failure under
// the default flags is an internal error (the generator produced invalid C).
JitResult jit_compile_c(const std::string& source, const JitOptions& opts);

// Runs argv (no shell) and returns its exit status, with stdout and stderr in `output`.
// -1 when it could not be started.
int run_program(const std::vector<std::string>& argv, std::string& output);

// Splits flags on whitespace (no quoting: flags never need it here).
std::vector<std::string> split_flags(const std::string& flags);

}  // namespace fp
