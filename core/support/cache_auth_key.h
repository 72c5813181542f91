#pragma once
// The per-user key that authenticates every cache entry (core/support/private_cache.h). It lives outside
// the caches, so that being able to write to a cache directory is not enough to forge an entry.
// Its sources, first match wins:
//   1. $FLASHPROOF_CACHE_SECRET, when set and non-empty: the secret itself (a CI job exports it
//      from its secret store). The key is SHA-256 over the domain-separation prefix
//      "flashproof cache key v1\0" followed by the secret's bytes; nothing is read from or written
//      to disk, and CacheAuthKey::path is the string "$FLASHPROOF_CACHE_SECRET" (shown to users,
//      as by `flashproof cache info`; never opened). A secret of fewer than 16 bytes is refused:
//      no key, and `problem` says why.
//      The same secret on every runner gives the same key, so a cache shared between runs and
//      runners can be trusted.
//   2. $FLASHPROOF_CACHE_KEY, when set and non-empty: the path of the key file, which must be
//      absolute (a relative one is refused: no key, and `problem` says why; it would put a key in
//      whatever directory the command runs in).
//   3. ${XDG_CONFIG_HOME:-$HOME/.config}/flashproof/cache.key (relative XDG_CONFIG_HOME and HOME
//      values are ignored, as the XDG spec says).
//
// A key file holds 32 bytes from getrandom, created once: written to a temporary opened with
// O_CREAT|O_EXCL|O_NOFOLLOW at mode 0600, then linked to its name (link never replaces a file,
// so concurrent first runs agree on one key). Its directory is created 0700. On every load the
// directory must be private (core/support/private_directory.h) and the file a regular file (not a link),
// owned by the effective user, readable and writable by nobody else, of exactly 32 bytes.
//
// Where the key cannot be had safely — a secret that is too short, no location (neither HOME nor
// XDG_CONFIG_HOME), a directory or file with the wrong owner or mode — loading returns the reason
// and no key, and the caches are off. It never fails the command.

#include <string>

namespace fp {

inline constexpr std::size_t kCacheAuthKeyBytes = 32;

// The shortest FLASHPROOF_CACHE_SECRET accepted, in bytes.
inline constexpr std::size_t kCacheSecretMinBytes = 16;

// CacheAuthKey::path of a key derived from FLASHPROOF_CACHE_SECRET: a name to show, not a file.
inline constexpr const char* kCacheSecretSource = "$FLASHPROOF_CACHE_SECRET";

struct CacheAuthKey {
  std::string bytes;    // kCacheAuthKeyBytes bytes; empty when unavailable
  std::string path;     // where it is or would be (kCacheSecretSource for the secret, not a file);
                        // empty when there is no place for it
  std::string problem;  // why it is unavailable; empty when available
  bool absent = false;  // only the file is missing (loaded with create = false)
  bool available() const { return !bytes.empty(); }
};

// The key file's path ($FLASHPROOF_CACHE_KEY, else the default); "" when there is no place for it.
// Always a real path: FLASHPROOF_CACHE_SECRET does not change it, though while the secret is set
// load_cache_auth_key neither reads nor creates this file.
std::string cache_auth_key_path();

// Loads the key: derives it from $FLASHPROOF_CACHE_SECRET when that is set and non-empty; else
// reads the key file, creating it (and its directory) first when `create` and it does not exist yet.
CacheAuthKey load_cache_auth_key(bool create = true);

}  // namespace fp
