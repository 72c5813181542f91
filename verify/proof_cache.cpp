#include "verify/proof_cache.h"

#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fp::verify {

namespace {


}  // namespace

ProofCache::ProofCache(std::string dir) : dir_(std::move(dir)) {}

std::string ProofCache::default_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  std::string base;
  if (xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    base = std::string(home && *home ? home : ".") + "/.cache";
  }
  return base + "/flashproof/proofs";
}

std::string ProofCache::path_of(const std::string& key) const {
  return dir_ + "/" + key.substr(0, 2) + "/" + key.substr(2) + ".json";
}

std::optional<nlohmann::json> ProofCache::get(const std::string& key) const {
  std::ifstream in(path_of(key));
  if (!in) return std::nullopt;
  try {
    nlohmann::json j;
    in >> j;
    return j;
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged entry is a miss
  }
}

void ProofCache::put(const std::string& key, const nlohmann::json& value) const {
  std::error_code ec;
  std::filesystem::path path(path_of(key));
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return;  // an unwritable cache only costs time
  std::ostringstream tid;
  tid << std::this_thread::get_id();
  std::string tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." + tid.str();
  {
    std::ofstream out(tmp);
    if (!out) return;
    out << value.dump(1) << "\n";
    if (!out) return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace fp::verify
