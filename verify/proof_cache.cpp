// The proof cache (verify/proof_cache.h).

#include "verify/proof_cache.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/diagnostic.h"

namespace fp::verify {

namespace {

constexpr const char* kEntryFormat = "flashproof-proof-cache 2";

std::string name_of(const std::string& key) {
  return key.substr(0, 2) + "/" + key.substr(2) + ".json";
}

}  // namespace

CacheMode parse_cache_mode(std::string_view text, std::string_view origin) {
  if (text == "use") return CacheMode::Use;
  if (text == "refresh") return CacheMode::Refresh;
  if (text == "off") return CacheMode::Off;
  throw UserError(kExitUsage, "", 0, 0,
                  fmt::format("{} expects use, refresh or off, found '{}'", origin, text));
}

CacheMode resolve_cache_mode(const std::string& flag, bool no_cache) {
  if (no_cache) {
    if (!flag.empty() && flag != "off")
      throw UserError(kExitUsage, "", 0, 0, fmt::format("--no-cache contradicts --cache={}", flag));
    return CacheMode::Off;
  }
  if (!flag.empty()) return parse_cache_mode(flag, "--cache");
  if (const char* e = std::getenv("FLASHPROOF_PROOF_CACHE"); e && *e)
    return parse_cache_mode(e, "FLASHPROOF_PROOF_CACHE");
  return CacheMode::Use;
}

const char* cache_mode_name(CacheMode m) {
  switch (m) {
    case CacheMode::Use:
      return "use";
    case CacheMode::Refresh:
      return "refresh";
    case CacheMode::Off:
      return "off";
  }
  return "?";
}

ProofCache::ProofCache(std::string dir, CacheMode mode) : dir_(std::move(dir)), mode_(mode) {}

std::string ProofCache::default_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/')
    return std::string(x) + "/flashproof/proofs";
  if (const char* h = std::getenv("HOME"); h && h[0] == '/')
    return std::string(h) + "/.cache/flashproof/proofs";
  return "";
}

std::uint64_t ProofCache::limit() {
  return cache_size_limit("FLASHPROOF_PROOF_CACHE_MAX", kDefaultProofCacheBytes);
}

CacheSpec ProofCache::spec(const std::string& dir) {
  CacheSpec s;
  s.dir = dir;
  s.what = "proof cache";
  s.tag = "proofs";
  s.max_bytes = limit();
  s.max_entry_bytes = std::min<std::uint64_t>(s.max_bytes, std::uint64_t{64} << 20);
  return s;
}

std::string ProofCache::key_of(const nlohmann::json& identity) {
  return sha256_hex(std::string(kEntryFormat) + "\n" + identity.dump());
}

void ProofCache::open() const {
  if (!dir_.empty() && mode_ != CacheMode::Off)
    std::call_once(opened_, [this] { store_ = std::make_unique<PrivateCache>(spec(dir_)); });
}

const PrivateCache* ProofCache::store() const {
  open();
  return store_.get();
}

std::optional<nlohmann::json> ProofCache::get(const nlohmann::json& identity) const {
  if (!reads()) return std::nullopt;
  std::optional<std::string> bytes = store()->read_sealed(name_of(key_of(identity)));
  if (!bytes) return std::nullopt;
  try {
    nlohmann::json entry = nlohmann::json::parse(*bytes);
    // The seal says who wrote the entry; this says what it answers.
    if (entry.at("format") != kEntryFormat || entry.at("identity") != identity) return std::nullopt;
    return entry.at("value");
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void ProofCache::put(const nlohmann::json& identity, const nlohmann::json& value) const {
  if (!writes()) return;
  const nlohmann::json entry{{"format", kEntryFormat}, {"identity", identity}, {"value", value}};
  store()->write_sealed(name_of(key_of(identity)), entry.dump(1) + "\n");
}

}  // namespace fp::verify
