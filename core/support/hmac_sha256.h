#pragma once
// HMAC-SHA256 (RFC 2104 over core/support/sha256.h): authenticates the caches' entries under the per-user
// key (core/support/cache_auth_key.h), so that an entry someone planted, edited or copied from elsewhere
// is never trusted (core/support/private_cache.h). Known answers: RFC 4231.

#include <string>
#include <string_view>

#include "core/support/sha256.h"

namespace fp {

Sha256Digest hmac_sha256(std::string_view key, std::string_view message);

// Lowercase hex of hmac_sha256.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

// Whether `a == b`, in time that depends only on the lengths: comparing a MAC must not tell an
// attacker how many of its leading bytes were right.
bool equal_in_constant_time(std::string_view a, std::string_view b);

}  // namespace fp
