#pragma once
// A cache directory that cannot be used to make flashproof load planted code or report a planted
// verdict. Both caches use it: compiled objects (exec/jit.h) and proofs (verify/proof_cache.h).
//
// - The directory is created with mode 0700 (every component created) and refused — UserError
//   73 naming it and why — unless it is private (core/support/private_directory.h).
// - An entry is looked at (lstat) before it is opened, so a FIFO or device is never opened, then
//   opened with O_NOFOLLOW|O_NONBLOCK, and fstat must say: a regular file, owned by the effective
//   user, writable by nobody else, under the cache's size cap. Anything else is a miss, and is
//   removed (a link, a FIFO, a device: nothing flashproof writes).
// - Every entry is sealed: one line binding the entry's name (which is its content key) to the
//   SHA-256 and size of its bytes under HMAC-SHA256 with the per-user key
//   (core/support/cache_auth_key.h). An edited entry, an entry copied under another name, or one written
//   by anyone without the key does not verify: a miss, which the caller recomputes and rewrites.
//   Without a key the cache is off — every read misses and nothing is written — and stderr says so
//   once per process; the command itself never fails for it.
// - Writes go through AtomicFile (core/support/atomic_file.h) at mode 0600: a reader sees a whole entry or
//   none. A write that fails (a full disk) costs only time: noted once on stderr, then dropped.
// - Housekeeping, when a process first opens the cache and whenever its writes take the total
//   over the limit: temporaries older than an hour (left by killed processes) are removed, then
//   the least recently used entries (a hit refreshes an entry's mtime) until the total is at most
//   90% of the limit.
//
// Entry names: `<64 hex>.<ext>` at the top level, or `<2 hex>/<62 hex>.<ext>` in a shard
// directory; the files of one entry share the part before the first dot and are evicted
// together. Files with other names are never touched, so a cache pointed at the wrong directory
// loses nothing there.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fp {

// Temporaries older than this are leftovers of a killed process.
inline constexpr int kStaleTemporarySeconds = 3600;

struct CacheSpec {
  std::string dir;
  std::string what;                   // for messages: "JIT cache", "proof cache"
  std::string tag;                    // one cache's seals never verify in another: "jit", "proofs"
  std::uint64_t max_bytes = 0;        // housekeeping keeps the total under it
  std::uint64_t max_entry_bytes = 0;  // a larger file is never read (a miss)
};

// A cache file, still open, whose bytes matched their seal when read through this descriptor.
// Closes it on destruction unless released.
class VerifiedFile {
 public:
  VerifiedFile(int fd, std::uint64_t size) : fd_(fd), size_(size) {}
  ~VerifiedFile();
  VerifiedFile(VerifiedFile&& o) noexcept : fd_(o.fd_), size_(o.size_) { o.fd_ = -1; }
  VerifiedFile& operator=(VerifiedFile&&) = delete;
  VerifiedFile(const VerifiedFile&) = delete;
  VerifiedFile& operator=(const VerifiedFile&) = delete;
  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
  std::uint64_t size_;
};

class PrivateCache {
 public:
  // Creates and checks the directory (throws UserError 73 when it is not private) and loads the key.
  explicit PrivateCache(CacheSpec spec);

  // False without a key: reads miss, writes are dropped.
  bool enabled() const { return !key_.empty(); }
  const CacheSpec& spec() const { return spec_; }
  std::string path_of(const std::string& name) const { return spec_.dir + "/" + name; }

  // A sealed entry: its seal line, then the bytes. nullopt when absent or not verified.
  std::optional<std::string> read_sealed(const std::string& name) const;
  void write_sealed(const std::string& name, std::string_view bytes) const;

  // An entry used in place (a shared object the loader maps from its file): the bytes stay in
  // `name`, their seal in `name + ".seal"`. The file, still open, when its bytes match the seal; a
  // caller that then uses the descriptor, never the name, uses exactly the bytes verified.
  std::optional<VerifiedFile> open_verified(const std::string& name) const;
  // Seals `bytes` as the content of `name`: call before the file is renamed to `name`.
  void write_seal(const std::string& name, std::string_view bytes) const;
  // Counts `bytes` just stored (by a rename the cache did not see): housekeeps when over the limit.
  void account(std::uint64_t bytes) const;

  // Stale temporaries out, then least recently used entries until the total fits.
  void housekeep() const;

 private:
  std::string seal_line(const std::string& name, std::string_view bytes) const;
  bool seal_matches(const std::string& name, std::string_view seal, std::string_view bytes) const;
  void write_entry(const std::string& name, std::string_view bytes) const;

  CacheSpec spec_;
  std::string key_;
};

// What a cache directory holds (`flashproof cache info`) and emptying it (`flashproof cache
// clean`). Neither creates anything.
struct CacheUsage {
  std::string problem;  // why the directory cannot be used ("it does not exist" among them)
  std::uint64_t entries = 0, bytes = 0;
  std::uint64_t temporaries = 0, temporary_bytes = 0;
};
CacheUsage measure_cache(const std::string& dir);
// Removes every entry and every stale temporary; returns what it removed. A directory that is not
// private is refused (UserError 73): nothing is deleted in a directory someone else controls.
CacheUsage clean_cache(const std::string& dir, const std::string& what);

// The limit from environment variable `env` — bytes, with an optional K, M, G or T suffix (powers
// of 1024, "KiB" etc. accepted) — else `fallback`. A malformed or zero value is a usage error (64).
std::uint64_t cache_size_limit(const char* env, std::uint64_t fallback);

// The whole content of the open file `fd` (read with pread from offset 0); nullopt when it cannot
// be read in full.
std::optional<std::string> read_open_file(int fd);

// Prints "flashproof: note: MESSAGE" on stderr, once per process per message.
void cache_note_once(const std::string& message);

}  // namespace fp
