// Every test in this binary authenticates cache entries (core/support/private_cache.h) with a key under
// the temporary directory, never the developer's own ${XDG_CONFIG_HOME:-~/.config}/flashproof/
// cache.key; the tools the tests run inherit it. A FLASHPROOF_CACHE_KEY already set is kept. A
// FLASHPROOF_CACHE_SECRET in the environment (a CI job's own secret) is removed: it would win over
// the key file, and the tests that need a secret set one for their own scope.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

const bool kTestKeySet = [] {
  if (const char* k = std::getenv("FLASHPROOF_CACHE_KEY"); k && *k) return false;
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  const std::string key =
      (base / ("flashproof-test-key-" + std::to_string(::geteuid())) / "cache.key").string();
  ::setenv("FLASHPROOF_CACHE_KEY", key.c_str(), 1);
  return true;
}();

const bool kSecretUnset = [] {
  ::unsetenv("FLASHPROOF_CACHE_SECRET");
  return true;
}();

}  // namespace
