// `flashproof cache info|clean`: what the two caches hold, and emptying them.
//
//   flashproof cache info  [--jit] [--proofs] [--format text|json] [-o FILE]
//   flashproof cache clean [--jit] [--proofs]
//
// Both caches by default; --jit or --proofs selects one. The JIT cache (compiled C objects and
// CUDA cubins, exec/jit.h) is $FLASHPROOF_JIT_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/
// flashproof/jit; the proof cache (verify/proof_cache.h) ${XDG_CACHE_HOME:-$HOME/.cache}/
// flashproof/proofs; --jit-cache-dir and --proof-cache-dir name others. `info` reports each
// cache's path, entries, bytes, limit, stale temporaries and the per-user key's status, and
// creates nothing. `clean` removes every entry and every temporary older than an hour (a younger
// one may belong to a compile still running), and refuses a directory that is not private
// (exit 73): it deletes nothing in a directory someone else controls.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/diagnostic.h"
#include "core/support/cache_auth_key.h"
#include "core/support/private_cache.h"
#include "exec/jit.h"
#include "tools/command.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"
#include "verify/proof_cache.h"

namespace fp::cli {
namespace {

struct CacheOptions {
  bool jit = false, proofs = false;
  std::string format = "text";
  std::string output;
  std::string jit_dir, proof_dir;
};

// One cache as `cache` sees it: where it is, or why there is none.
struct CacheSite {
  std::string name;  // "jit", "proofs"
  std::string what;  // "JIT cache", "proof cache"
  std::string dir;   // "" when there is no persistent cache
  std::string none;  // why there is none
  std::string limit_env;
  std::uint64_t limit = 0;
};

std::vector<CacheSite> selected_sites(const CacheOptions& o) {
  const bool both = !o.jit && !o.proofs;
  std::vector<CacheSite> sites;
  if (both || o.jit) {
    CacheSite s{"jit",
                "JIT cache",
                o.jit_dir.empty() ? configured_cache_dir() : o.jit_dir,
                "",
                "FLASHPROOF_JIT_CACHE_MAX",
                jit_cache_limit()};
    if (s.dir.empty())
      s.none = "neither XDG_CACHE_HOME nor HOME is set: each process compiles into a fresh private directory";
    sites.push_back(std::move(s));
  }
  if (both || o.proofs) {
    CacheSite s{"proofs",
                "proof cache",
                o.proof_dir.empty() ? verify::ProofCache::default_dir() : o.proof_dir,
                "",
                "FLASHPROOF_PROOF_CACHE_MAX",
                verify::ProofCache::limit()};
    if (s.dir.empty())
      s.none = "neither XDG_CACHE_HOME nor HOME is set: verify caches nothing without --cache-dir";
    sites.push_back(std::move(s));
  }
  return sites;
}

std::string size_text(std::uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string key_status(const CacheAuthKey& k) {
  if (k.available()) return "ok";
  if (k.path.empty()) return "none";
  return k.absent ? "absent" : "unusable";
}

void run_info(const CacheOptions& o) {
  const CacheAuthKey key = load_cache_auth_key(false);
  nlohmann::json caches = nlohmann::json::array();
  std::string text;
  for (const CacheSite& s : selected_sites(o)) {
    nlohmann::json j{{"name", s.name},
                     {"path", s.dir.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.dir)},
                     {"limit_bytes", s.limit},
                     {"limit_env", s.limit_env}};
    if (s.dir.empty()) {
      j["status"] = "none";
      j["problem"] = s.none;
      text += fmt::format("{}: none ({})\n", s.what, s.none);
    } else {
      const CacheUsage u = measure_cache(s.dir);
      const bool absent = u.problem == "it does not exist";
      j["status"] = u.problem.empty() ? "ok" : absent ? "absent" : "refused";
      j["problem"] = u.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(u.problem);
      j["entries"] = u.entries;
      j["bytes"] = u.bytes;
      j["temporaries"] = u.temporaries;
      j["temporary_bytes"] = u.temporary_bytes;
      text += fmt::format("{}: {}\n", s.what, s.dir);
      if (absent)
        text += "  not created yet\n";
      else if (!u.problem.empty())
        text += fmt::format("  refused: {}\n", u.problem);
      else
        text += fmt::format("  {} entr{}, {} ({} bytes); {} temporar{} ({})\n", u.entries,
                            u.entries == 1 ? "y" : "ies", size_text(u.bytes), u.bytes, u.temporaries,
                            u.temporaries == 1 ? "y" : "ies", size_text(u.temporary_bytes));
      text += fmt::format("  limit: {} (${})\n", size_text(s.limit), s.limit_env);
    }
    caches.push_back(std::move(j));
  }
  const std::string status = key_status(key);
  text += fmt::format("key: {} ({})\n", key.path.empty() ? "none" : key.path,
                      status == "ok"       ? "ok"
                      : status == "absent" ? "absent: created on first use"
                                           : key.problem + "; the caches are off");
  if (o.format == "json") {
    nlohmann::json out{
        {"caches", caches},
        {"key",
         {{"path", key.path.empty() ? nlohmann::json(nullptr) : nlohmann::json(key.path)},
          {"status", status},
          {"problem", key.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(key.problem)}}}};
    text = out.dump(2) + "\n";
  }
  write_text_output(o.output, text);
}

void run_clean(const CacheOptions& o) {
  for (const CacheSite& s : selected_sites(o)) {
    if (s.dir.empty()) {
      fmt::print("{}: none ({})\n", s.what, s.none);
      continue;
    }
    const CacheUsage removed = clean_cache(s.dir, s.what);
    fmt::print("{} {}: removed {} entr{} ({}) and {} stale temporar{}\n", s.what, s.dir, removed.entries,
               removed.entries == 1 ? "y" : "ies", size_text(removed.bytes), removed.temporaries,
               removed.temporaries == 1 ? "y" : "ies");
  }
}

void add_selection(CLI::App& sub, CacheOptions& o) {
  sub.add_flag("--jit", o.jit, "Only the JIT cache (compiled C objects and CUDA cubins)");
  sub.add_flag("--proofs", o.proofs, "Only the proof cache (verify's verdicts and certificates)");
  sub.add_option("--jit-cache-dir", o.jit_dir,
                 "The JIT cache directory (default $FLASHPROOF_JIT_CACHE, else "
                 "${XDG_CACHE_HOME:-$HOME/.cache}/flashproof/jit)");
  sub.add_option("--proof-cache-dir", o.proof_dir,
                 "The proof cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/flashproof/proofs)");
}

void setup_cache(CLI::App& app) {
  auto o = std::make_shared<CacheOptions>();
  CLI::App* sub = app.add_subcommand("cache", "Report on or empty the JIT and proof caches");
  sub->require_subcommand(1);
  CLI::App* info = sub->add_subcommand(
      "info", "Each cache's path, entries, bytes, size limit and stale temporaries, and the key's status");
  add_selection(*info, *o);
  add_format_option(*info, o->format, {"text", "json"});
  add_output_option(*info, o->output, "the report");
  info->callback([o] { run_info(*o); });
  CLI::App* clean = sub->add_subcommand(
      "clean", "Remove every cache entry and every temporary older than an hour (both caches by default)");
  add_selection(*clean, *o);
  clean->callback([o] { run_clean(*o); });
}

}  // namespace
FP_REGISTER_COMMAND("cache", setup_cache);
}  // namespace fp::cli
