#pragma once
// The proof cache: a verdict (or a bound certificate) is stored under the SHA-256 of its
// *identity* — everything it depends on: the routines' text hashes, the rewrite (member with its
// version, shape), the claim and what it covers, the limits, the engine and semantics versions,
// the solver and its version, and the build of flashproof itself (core/support/build_identity.h), so a
// fixed bug invalidates old verdicts without a hand-bumped version. An unchanged rerun answers
// from the cache; any change misses it.
//
// An answer is never taken on trust (core/support/private_cache.h): the directory is private (refused
// otherwise), every entry is sealed under the per-user key, and an entry records the identity it
// answers, which must equal the asking task's identity in full — so an edited verdict, an entry
// copied from another pair, or a file someone committed to a checkout is a miss, recomputed and
// rewritten. Entries are written atomically (AtomicFile, 0600), so concurrent runs (--jobs,
// parallel CI shards) never see a partial entry. Verdicts decided by the wall-clock backstop are
// never stored (not deterministic).
//
// Location: --cache-dir, else ${XDG_CACHE_HOME}/flashproof/proofs, else
// $HOME/.cache/flashproof/proofs, else no cache: never the working directory, where a file
// committed to a checkout could flip a CI gate. Size: $FLASHPROOF_PROOF_CACHE_MAX, else 256 MiB,
// least recently used entries evicted.

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/support/private_cache.h"
#include "core/support/sha256.h"

namespace fp::verify {

// (The semantics version is core/ir.h's kSemanticsVersion; each tier member has its own version.)
// Bumped whenever the verify engine's encodings or checks change what a verdict means.
inline constexpr const char* kEngineVersion = "3";

inline constexpr std::uint64_t kDefaultProofCacheBytes = std::uint64_t{256} << 20;

// How a run uses the cache: use (read, then store what was computed), refresh (compute
// everything, store it), off (neither read nor write).
enum class CacheMode { Use, Refresh, Off };

// "use" | "refresh" | "off"; anything else is a usage error (64) naming `origin`.
CacheMode parse_cache_mode(std::string_view text, std::string_view origin);
// The mode of a run: --cache when given, else $FLASHPROOF_PROOF_CACHE, else use; --no-cache is
// --cache=off (together with another --cache value: a usage error).
CacheMode resolve_cache_mode(const std::string& flag, bool no_cache);
const char* cache_mode_name(CacheMode m);

class ProofCache {
 public:
  // `dir` empty: no cache (reads miss, writes are dropped). Nothing is touched until first use.
  explicit ProofCache(std::string dir, CacheMode mode = CacheMode::Use);

  // The value stored for exactly `identity`; nullopt when absent, unauthenticated, recorded for
  // another identity, or when the mode does not read.
  std::optional<nlohmann::json> get(const nlohmann::json& identity) const;
  void put(const nlohmann::json& identity, const nlohmann::json& value) const;
  // Creates and checks the directory now (UserError 73 when it is not private), so that a refused
  // directory is reported by the calling thread, not a worker.
  void open() const;

  bool reads() const { return !dir_.empty() && mode_ == CacheMode::Use; }
  bool writes() const { return !dir_.empty() && mode_ != CacheMode::Off; }
  const std::string& dir() const { return dir_; }

  // The file name of an identity's entry (its key: SHA-256 of the identity).
  static std::string key_of(const nlohmann::json& identity);
  // ${XDG_CACHE_HOME}/flashproof/proofs, else $HOME/.cache/flashproof/proofs (absolute values
  // only), else "" (no cache).
  static std::string default_dir();
  // $FLASHPROOF_PROOF_CACHE_MAX, else kDefaultProofCacheBytes.
  static std::uint64_t limit();
  static CacheSpec spec(const std::string& dir);

 private:
  const PrivateCache* store() const;

  std::string dir_;
  CacheMode mode_;
  mutable std::once_flag opened_;
  mutable std::unique_ptr<PrivateCache> store_;
};

}  // namespace fp::verify
