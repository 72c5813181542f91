#pragma once
// SHA-256 (FIPS 180-4), small and dependency-free: the content hash of the JIT cache
// (exec/jit.h) and of the proof cache (verify/proof_cache.h).

#include <string>
#include <string_view>

namespace fp {

// Lowercase hex digest of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace fp
