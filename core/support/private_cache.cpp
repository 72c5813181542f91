// Private, authenticated, bounded cache directories (core/support/private_cache.h).

#include "core/support/private_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "core/diagnostic.h"
#include "core/support/atomic_file.h"
#include "core/support/cache_auth_key.h"
#include "core/support/hmac_sha256.h"
#include "core/support/private_directory.h"

namespace fp {

namespace {

constexpr std::string_view kSealMagic = "flashproof-seal 1";
constexpr std::uint64_t kMaxSealBytes = 4096;
constexpr std::size_t kTopStem = 64;    // "<64 hex>.<ext>"
constexpr std::size_t kShardStem = 62;  // "<2 hex>/<62 hex>.<ext>"

// What this process knows about each cache directory it opened: whether it has been swept, and
// the bytes it holds (as of the last sweep, plus this process's writes since).
struct DirState {
  bool swept = false;
  std::uint64_t bytes = 0;
};
std::mutex g_dirs_mutex;
std::map<std::string, DirState> g_dirs;

bool is_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

enum class Role { Entry, Temporary, Other };

// AtomicFile's temporaries are ".<name>.tmp-<pid>-<hex>", the JIT's ".tmp-<key>-<tag>.<ext>";
// older versions left "<key>.so.tmp-<tag>" and "<key>.json.tmp.<pid>.<tid>".
Role role_of(const std::string& base, std::size_t stem_size) {
  if (!base.empty() && base[0] == '.')
    return base.find(".tmp-") != std::string::npos ? Role::Temporary : Role::Other;
  const std::size_t dot = base.find('.');
  if (dot == std::string::npos || dot != stem_size || !is_hex(std::string_view(base).substr(0, dot)))
    return Role::Other;
  return base.find(".tmp", dot) != std::string::npos ? Role::Temporary : Role::Entry;
}

struct CacheFile {
  std::string path;
  std::string unit;  // the entry it belongs to: its name up to the first dot
  Role role = Role::Other;
  bool regular = false, directory = false;
  std::uint64_t size = 0;
  std::time_t mtime = 0;
};

void list_files(const std::string& dir, const std::string& prefix, std::size_t stem_size,
                std::vector<CacheFile>& out, std::vector<std::string>* shards) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string base = e->d_name;
    if (base == "." || base == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (shards && S_ISDIR(st.st_mode) && base.size() == 2 && is_hex(base)) {
      shards->push_back(base);
      continue;
    }
    CacheFile f;
    f.path = dir + "/" + base;
    f.role = role_of(base, stem_size);
    f.unit = prefix + base.substr(0, base.find('.'));
    f.regular = S_ISREG(st.st_mode);
    f.directory = S_ISDIR(st.st_mode);
    f.size = static_cast<std::uint64_t>(st.st_size);
    f.mtime = st.st_mtime;
    out.push_back(std::move(f));
  }
  ::closedir(d);
}

// Every file of the cache at `dir`: the top level and the shard directories (never through a link).
std::vector<CacheFile> scan(const std::string& dir) {
  std::vector<CacheFile> out;
  std::vector<std::string> shards;
  list_files(dir, "", kTopStem, out, &shards);
  for (const auto& s : shards) list_files(dir + "/" + s, s + "/", kShardStem, out, nullptr);
  return out;
}

bool stale(const CacheFile& f) {
  return f.mtime < std::time(nullptr) - kStaleTemporarySeconds;
}

struct Unit {
  std::vector<const CacheFile*> files;
  std::uint64_t bytes = 0;
  std::time_t used = 0;
};

std::map<std::string, Unit> units_of(const std::vector<CacheFile>& files) {
  std::map<std::string, Unit> units;
  for (const auto& f : files) {
    if (f.role != Role::Entry || !f.regular) continue;
    Unit& u = units[f.unit];
    u.files.push_back(&f);
    u.bytes += f.size;
    u.used = std::max(u.used, f.mtime);
  }
  return units;
}

// Opens `path` for reading when it is a private regular file of at most `cap` bytes; -1 otherwise.
// A name that holds something flashproof never writes there (a link, a FIFO, a device, a file of
// another owner or mode) is removed, so the entry can be written again.
int open_private_file(const std::string& path, std::uint64_t cap) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return -1;
  if (!S_ISREG(st.st_mode)) {
    if (!S_ISDIR(st.st_mode)) ::unlink(path.c_str());
    return -1;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                  (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
  if (!ok) {
    ::close(fd);
    ::unlink(path.c_str());
    return -1;
  }
  if (static_cast<std::uint64_t>(st.st_size) > cap) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::optional<std::string> read_open_file(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

namespace {

// A hit is a use: least recently used is least recently modified.
void mark_used(int fd) {
  ::futimens(fd, nullptr);
}

std::uint64_t parse_size(const std::string& text) {
  std::size_t i = 0;
  std::uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    const std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
    ++i;
  }
  if (i == 0) return 0;
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (unit == "" || unit == "B")
    shift = 0;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    shift = 10;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    shift = 20;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    shift = 30;
  else if (unit == "T" || unit == "TB" || unit == "TIB")
    shift = 40;
  else
    return 0;
  if (shift > 0 && v > (UINT64_MAX >> shift)) return 0;
  return v << shift;
}

}  // namespace

VerifiedFile::~VerifiedFile() {
  if (fd_ >= 0) ::close(fd_);
}

void cache_note_once(const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(message).second) std::fprintf(stderr, "flashproof: note: %s\n", message.c_str());
}

PrivateCache::PrivateCache(CacheSpec spec) : spec_(std::move(spec)) {
  spec_.dir = without_trailing_slashes(spec_.dir);
  if (std::string why = make_private_directory(spec_.dir); !why.empty())
    throw UserError(kExitCantCreate, "", 0, 0,
                    fmt::format("refusing the {} directory '{}': {}", spec_.what, spec_.dir, why));
  CacheAuthKey key = load_cache_auth_key();
  if (!key.available()) {
    cache_note_once(fmt::format("caches are off (nothing is read from or written to them): {}", key.problem));
    return;
  }
  key_ = std::move(key.bytes);
  bool swept = false;
  {
    std::lock_guard<std::mutex> lock(g_dirs_mutex);
    swept = g_dirs[spec_.dir].swept;
  }
  if (!swept) housekeep();
}

std::string PrivateCache::seal_line(const std::string& name, std::string_view bytes) const {
  const std::string digest = sha256_hex(bytes);
  const std::string mac = hmac_sha256_hex(
      key_, fmt::format("{}\n{}\n{}\n{}\n{}", kSealMagic, spec_.tag, name, digest, bytes.size()));
  return fmt::format("{} {} {} {}\n", kSealMagic, digest, bytes.size(), mac);
}

bool PrivateCache::seal_matches(const std::string& name, std::string_view seal,
                                std::string_view bytes) const {
  return equal_in_constant_time(seal, seal_line(name, bytes));
}

std::optional<std::string> PrivateCache::read_sealed(const std::string& name) const {
  if (!enabled()) return std::nullopt;
  const int fd = open_private_file(path_of(name), spec_.max_entry_bytes + kMaxSealBytes);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> data = read_open_file(fd);
  std::optional<std::string> payload;
  if (data) {
    const std::size_t nl = data->find('\n');
    if (nl != std::string::npos) {
      const std::string_view seal = std::string_view(*data).substr(0, nl + 1);
      const std::string_view bytes = std::string_view(*data).substr(nl + 1);
      if (seal_matches(name, seal, bytes)) payload = std::string(bytes);
    }
  }
  if (payload) mark_used(fd);
  ::close(fd);
  return payload;
}

void PrivateCache::write_entry(const std::string& name, std::string_view bytes) const {
  if (const std::size_t slash = name.find('/'); slash != std::string::npos) {
    const std::string shard = path_of(name.substr(0, slash));
    if (std::string why = make_private_directory(shard); !why.empty()) {
      cache_note_once(fmt::format("the {} is not storing entries: '{}': {}", spec_.what, shard, why));
      return;
    }
  }
  try {
    write_file_atomically(path_of(name), bytes, 0600);
  } catch (const UserError& e) {
    cache_note_once(fmt::format("the {} is not storing entries: {}", spec_.what, e.what()));
    return;
  }
  account(bytes.size());
}

void PrivateCache::write_sealed(const std::string& name, std::string_view bytes) const {
  if (!enabled()) return;
  std::string data = seal_line(name, bytes);
  data.append(bytes);
  write_entry(name, data);
}

std::optional<VerifiedFile> PrivateCache::open_verified(const std::string& name) const {
  if (!enabled()) return std::nullopt;
  std::optional<std::string> seal;
  if (const int sfd = open_private_file(path_of(name + ".seal"), kMaxSealBytes); sfd >= 0) {
    seal = read_open_file(sfd);
    ::close(sfd);
  }
  if (!seal) return std::nullopt;
  const int fd = open_private_file(path_of(name), spec_.max_entry_bytes);
  if (fd < 0) return std::nullopt;
  VerifiedFile file(fd, 0);
  std::optional<std::string> bytes = read_open_file(fd);
  if (!bytes || !seal_matches(name, *seal, *bytes)) return std::nullopt;
  mark_used(fd);
  return VerifiedFile(file.release(), bytes->size());
}

void PrivateCache::write_seal(const std::string& name, std::string_view bytes) const {
  if (!enabled()) return;
  write_entry(name + ".seal", seal_line(name, bytes));
}

void PrivateCache::account(std::uint64_t bytes) const {
  bool over = false;
  {
    std::lock_guard<std::mutex> lock(g_dirs_mutex);
    DirState& s = g_dirs[spec_.dir];
    s.bytes += bytes;
    over = s.bytes > spec_.max_bytes;
  }
  if (over) housekeep();
}

void PrivateCache::housekeep() const {
  std::lock_guard<std::mutex> lock(g_dirs_mutex);
  const std::vector<CacheFile> files = scan(spec_.dir);
  for (const auto& f : files) {
    const bool leftover = f.role == Role::Temporary && stale(f) && !f.directory;
    const bool planted = f.role == Role::Entry && !f.regular && !f.directory;
    if (leftover || planted) ::unlink(f.path.c_str());
  }
  std::map<std::string, Unit> units = units_of(files);
  std::uint64_t total = 0;
  for (const auto& [name, u] : units) total += u.bytes;
  if (total > spec_.max_bytes) {
    std::vector<const Unit*> order;
    for (const auto& [name, u] : units) order.push_back(&u);
    std::sort(order.begin(), order.end(), [](const Unit* a, const Unit* b) { return a->used < b->used; });
    const std::uint64_t target = spec_.max_bytes / 10 * 9;
    for (const Unit* u : order) {
      if (total <= target) break;
      for (const CacheFile* f : u->files) ::unlink(f->path.c_str());
      total -= u->bytes;
    }
  }
  DirState& s = g_dirs[spec_.dir];
  s.swept = true;
  s.bytes = total;
}

CacheUsage measure_cache(const std::string& dir) {
  CacheUsage u;
  u.problem = private_directory_problem(dir);
  if (!u.problem.empty()) return u;
  const std::vector<CacheFile> files = scan(without_trailing_slashes(dir));
  for (const auto& [name, unit] : units_of(files)) {
    ++u.entries;
    u.bytes += unit.bytes;
  }
  for (const auto& f : files)
    if (f.role == Role::Temporary && !f.directory) {
      ++u.temporaries;
      u.temporary_bytes += f.size;
    }
  return u;
}

CacheUsage clean_cache(const std::string& dir, const std::string& what) {
  CacheUsage removed;
  if (std::string why = private_directory_problem(dir); !why.empty()) {
    if (why == "it does not exist") return removed;
    throw UserError(kExitCantCreate, "", 0, 0,
                    fmt::format("refusing to clean the {} directory '{}': {}", what, dir, why));
  }
  const std::string d = without_trailing_slashes(dir);
  std::lock_guard<std::mutex> lock(g_dirs_mutex);
  const std::vector<CacheFile> files = scan(d);
  for (const auto& [name, unit] : units_of(files)) {
    ++removed.entries;
    removed.bytes += unit.bytes;
    for (const CacheFile* f : unit.files) ::unlink(f->path.c_str());
  }
  for (const auto& f : files) {
    if (f.directory) continue;
    if (f.role == Role::Temporary && stale(f)) {
      ++removed.temporaries;
      removed.temporary_bytes += f.size;
      ::unlink(f.path.c_str());
    } else if (f.role == Role::Entry && !f.regular) {
      ::unlink(f.path.c_str());
    }
  }
  g_dirs.erase(d);
  return removed;
}

std::uint64_t cache_size_limit(const char* env, std::uint64_t fallback) {
  const char* v = std::getenv(env);
  if (!v || !*v) return fallback;
  const std::uint64_t bytes = parse_size(v);
  if (bytes == 0)
    throw UserError(
        kExitUsage, "", 0, 0,
        fmt::format("{}: expected a positive size in bytes, optionally with a K, M, G or T suffix "
                    "(e.g. 512M), found '{}'",
                    env, v));
  return bytes;
}

}  // namespace fp
