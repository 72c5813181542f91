#pragma once
// The content-addressed proof cache: a verdict (or a bound certificate) is stored under the
// SHA-256 of everything it depends on — the routines' text, the rewrite (member, shape, tool
// version), the semantics version, the solver and its version, and the limits — so an unchanged
// rerun answers from the cache and any change to an input misses it. Default directory
// ${XDG_CACHE_HOME:-~/.cache}/flashproof/proofs; one JSON file per entry, written atomically
// (temporary file + rename), so concurrent runs (--jobs, parallel CI shards) never see a partial
// entry. Verdicts decided by the wall-clock backstop are never stored (not deterministic).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/sha256.h"

namespace fp::verify {

// (The semantics version is core/ir.h's kSemanticsVersion; each tier member has its own version.)
// Bumped whenever the verify engine's encodings or checks change what a verdict means.
inline constexpr const char* kEngineVersion = "1";

class ProofCache {
 public:
  explicit ProofCache(std::string dir);
  std::optional<nlohmann::json> get(const std::string& key) const;
  void put(const std::string& key, const nlohmann::json& value) const;
  const std::string& dir() const { return dir_; }

  // ${XDG_CACHE_HOME:-$HOME/.cache}/flashproof/proofs
  static std::string default_dir();

 private:
  std::string path_of(const std::string& key) const;
  std::string dir_;
};

}  // namespace fp::verify
