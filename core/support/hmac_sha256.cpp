// HMAC-SHA256 (core/support/hmac_sha256.h).

#include "core/support/hmac_sha256.h"

#include <cstddef>

namespace fp {

namespace {

constexpr std::size_t kBlock = 64;  // SHA-256's block size, which RFC 2104 pads the key to

std::string_view as_chars(const Sha256Digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

}  // namespace

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
  std::string k(key);
  if (k.size() > kBlock) k = std::string(as_chars(sha256(k)));
  k.resize(kBlock, '\0');
  std::string inner(kBlock, '\0'), outer(kBlock, '\0');
  for (std::size_t i = 0; i < kBlock; ++i) {
    inner[i] = static_cast<char>(k[i] ^ 0x36);
    outer[i] = static_cast<char>(k[i] ^ 0x5c);
  }
  inner.append(message);
  outer.append(as_chars(sha256(inner)));
  return sha256(outer);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  const Sha256Digest d = hmac_sha256(key, message);
  return hex_of(d.data(), d.size());
}

bool equal_in_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
  return diff == 0;
}

}  // namespace fp
