#pragma once
// The per-user key that authenticates every cache entry (core/support/private_cache.h). It lives outside
// the caches, so that being able to write to a cache directory is not enough to forge an entry:
// $FLASHPROOF_CACHE_KEY when set, else ${XDG_CONFIG_HOME:-$HOME/.config}/flashproof/cache.key
// (relative XDG_CONFIG_HOME and HOME values are ignored, as the XDG spec says).
//
// The key is 32 bytes from getrandom, created once: written to a temporary opened with
// O_CREAT|O_EXCL|O_NOFOLLOW at mode 0600, then linked to its name (link never replaces a file,
// so concurrent first runs agree on one key). Its directory is created 0700. On every load the
// directory must be private (core/support/private_directory.h) and the file a regular file (not a link),
// owned by the effective user, readable and writable by nobody else, of exactly 32 bytes.
//
// Where the key cannot be kept safely — no location (neither HOME nor XDG_CONFIG_HOME), a
// directory or file with the wrong owner or mode — loading returns the reason and no key, and the
// caches are off. It never fails the command.

#include <string>

namespace fp {

inline constexpr std::size_t kCacheAuthKeyBytes = 32;

struct CacheAuthKey {
  std::string bytes;    // kCacheAuthKeyBytes bytes; empty when unavailable
  std::string path;     // where it is or would be; empty when there is no place for it
  std::string problem;  // why it is unavailable; empty when available
  bool absent = false;  // only the file is missing (loaded with create = false)
  bool available() const { return !bytes.empty(); }
};

// Where the key is kept; "" when there is no place for it.
std::string cache_auth_key_path();

// Loads the key, creating it (and its directory) first when `create` and it does not exist yet.
CacheAuthKey load_cache_auth_key(bool create = true);

}  // namespace fp
