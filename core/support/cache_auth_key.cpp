// The per-user cache key (core/support/cache_auth_key.h).

#include "core/support/cache_auth_key.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <tuple>

#include "core/support/private_directory.h"
#include "core/support/sha256.h"

namespace fp {

namespace {

std::string absolute_env(const char* name) {
  const char* v = std::getenv(name);
  return v && v[0] == '/' ? std::string(v) : std::string();
}

bool fill_random(unsigned char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_all(int fd, const unsigned char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

// Creates the key file at `path`; "" on success or when another process created it first.
std::string create_key(const std::string& path) {
  unsigned char key[kCacheAuthKeyBytes];
  if (!fill_random(key, sizeof key))
    return fmt::format("no random bytes for a new key: {}", std::strerror(errno));
  unsigned char tag[8];
  if (!fill_random(tag, sizeof tag)) return fmt::format("no random bytes: {}", std::strerror(errno));
  const std::filesystem::path p(path);
  const std::string tmp = (p.parent_path() / fmt::format(".{}.tmp-{}-{}", p.filename().string(), ::getpid(),
                                                         hex_of(tag, sizeof tag)))
                              .string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return fmt::format("cannot create '{}': {}", tmp, std::strerror(errno));
  const bool ok = ::fchmod(fd, 0600) == 0 && write_all(fd, key, sizeof key) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  std::string problem;
  if (!ok)
    problem = fmt::format("cannot write '{}': {}", tmp, std::strerror(err));
  else if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST)
    problem = fmt::format("cannot create '{}': {}", path, std::strerror(errno));
  ::unlink(tmp.c_str());
  return problem;
}

// The key derived from FLASHPROOF_CACHE_SECRET (set and non-empty): SHA-256 over a fixed
// domain-separation prefix, its terminating NUL included, then the secret's bytes.
CacheAuthKey key_from_secret(std::string_view secret) {
  CacheAuthKey k;
  k.path = kCacheSecretSource;
  if (secret.size() < kCacheSecretMinBytes) {
    k.problem = fmt::format(
        "FLASHPROOF_CACHE_SECRET holds {} bytes; at least {} are needed (a CI secret of random "
        "characters, e.g. `openssl rand -hex 32`)",
        secret.size(), kCacheSecretMinBytes);
    return k;
  }
  static constexpr char kDomain[] = "flashproof cache key v1";  // sizeof includes the NUL
  std::string message(kDomain, sizeof kDomain);
  message.append(secret);
  const Sha256Digest digest = sha256(message);
  k.bytes.assign(reinterpret_cast<const char*>(digest.data()), digest.size());
  static_assert(std::tuple_size_v<Sha256Digest> == kCacheAuthKeyBytes);
  return k;
}

// Reads the key through `fd` after checking what it is; the problem otherwise.
std::string read_key(int fd, std::string& bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (st.st_uid != ::geteuid())
    return fmt::format("it is owned by uid {}, not by the user running flashproof (uid {})", st.st_uid,
                       ::geteuid());
  if ((st.st_mode & 077) != 0)
    return fmt::format("others may read or write it (mode {:04o}); it must be 0600", st.st_mode & 07777);
  if (st.st_size != static_cast<off_t>(kCacheAuthKeyBytes))
    return fmt::format("it holds {} bytes, not {}", st.st_size, kCacheAuthKeyBytes);
  bytes.assign(kCacheAuthKeyBytes, '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      bytes.clear();
      return "it cannot be read in full";
    }
    got += static_cast<std::size_t>(n);
  }
  return "";
}

}  // namespace

std::string cache_auth_key_path() {
  if (const char* e = std::getenv("FLASHPROOF_CACHE_KEY"); e && *e) return e;
  if (std::string x = absolute_env("XDG_CONFIG_HOME"); !x.empty()) return x + "/flashproof/cache.key";
  if (std::string h = absolute_env("HOME"); !h.empty()) return h + "/.config/flashproof/cache.key";
  return "";
}

CacheAuthKey load_cache_auth_key(bool create) {
  if (const char* secret = std::getenv("FLASHPROOF_CACHE_SECRET"); secret && *secret)
    return key_from_secret(secret);
  CacheAuthKey k;
  k.path = cache_auth_key_path();
  if (k.path.empty()) {
    k.problem =
        "there is no place for the per-user cache key: HOME and XDG_CONFIG_HOME are unset (set "
        "FLASHPROOF_CACHE_KEY=FILE, or FLASHPROOF_CACHE_SECRET to a secret)";
    return k;
  }
  // A relative key path would put the key wherever the command happens to run (and a key per
  // working directory): refused, like relative XDG_CONFIG_HOME and HOME values are ignored.
  if (k.path[0] != '/') {
    k.problem = fmt::format("FLASHPROOF_CACHE_KEY is the relative path '{}'; it must be absolute", k.path);
    return k;
  }
  const std::filesystem::path p(k.path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  struct stat dir_st {};
  if (!create && ::lstat(dir.c_str(), &dir_st) != 0 && errno == ENOENT) {
    k.absent = true;
    k.problem = fmt::format("the cache key '{}' does not exist yet", k.path);
    return k;
  }
  const std::string why = create ? make_private_directory(dir) : private_directory_problem(dir);
  if (!why.empty()) {
    k.problem = fmt::format("the cache key's directory '{}' is not safe: {}", dir, why);
    return k;
  }
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(k.path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create && attempt == 0) {
      if (std::string err = create_key(k.path); !err.empty()) {
        k.problem = fmt::format("the cache key cannot be created: {}", err);
        return k;
      }
      continue;
    }
    if (fd < 0) {
      k.absent = errno == ENOENT;
      k.problem = errno == ENOENT ? fmt::format("the cache key '{}' does not exist yet", k.path)
                  : errno == ELOOP
                      ? fmt::format("the cache key '{}' is a symbolic link", k.path)
                      : fmt::format("the cache key '{}' cannot be opened: {}", k.path, std::strerror(errno));
      return k;
    }
    std::string bytes;
    const std::string bad = read_key(fd, bytes);
    ::close(fd);
    if (!bad.empty()) {
      k.problem = fmt::format("the cache key '{}' is not safe: {}", k.path, bad);
      return k;
    }
    k.bytes = std::move(bytes);
    return k;
  }
}

}  // namespace fp
