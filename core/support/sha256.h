#pragma once
// SHA-256 (FIPS 180-4), small and dependency-free: the content hash of the JIT cache
// (exec/jit.h) and of the proof cache (verify/proof_cache.h), and the hash under the HMAC that
// authenticates their entries (core/support/hmac_sha256.h).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace fp {

using Sha256Digest = std::array<std::uint8_t, 32>;

// The digest of `data`.
Sha256Digest sha256(std::string_view data);

// Lowercase hex digest of `data`.
std::string sha256_hex(std::string_view data);

// Lowercase hex of any bytes (a digest, a MAC).
std::string hex_of(const std::uint8_t* bytes, std::size_t size);

}  // namespace fp
