#include "verify/verdict_cache.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/support/build_identity.h"
#include "core/support/sha256.h"
#include "core/text_printer.h"
#include "flashproof/version.h"
#include "rewrites/members.h"
#include "verify/smt/smt.h"

namespace fp::verify {

namespace {

// A cached verdict is about the task asking: the identity check already says so; this says the
// verdict itself agrees (a mismatch is a miss, never an answer).
bool verdict_answers(const Verdict& v, const Task& t) {
  return v.claim == t.obligation.claim && v.claimed == t.obligation.kind && v.member == t.member &&
         v.rewrite == t.shape;
}

}  // namespace

ProofCache engine_cache(const EngineOptions& o) {
  const CacheMode mode = !o.use_cache      ? CacheMode::Off
                         : o.refresh_cache ? CacheMode::Refresh
                                           : CacheMode::Use;
  return ProofCache(o.cache_dir.empty() ? ProofCache::default_dir() : o.cache_dir, mode);
}

nlohmann::json task_identity(const Task& t, const Limits& limits) {
  nlohmann::json covers = nlohmann::json::array();
  for (const auto& c : t.obligation.covers) covers.push_back({c.node, c.cells});
  nlohmann::json bound = nullptr;
  if (const auto& b = t.obligation.bound) bound = b->identity();
  const Member* m = find_member(t.member);
  return {{"kind", "verdict"},
          {"build", build_identity()},
          {"tool", FLASHPROOF_VERSION},
          {"engine", kEngineVersion},
          {"semantics", kSemanticsVersion},
          {"solver", smt::solver_version()},
          {"member", t.member},
          {"member_version", m ? m->version : ""},  // hand pairs: no member
          {"shape", t.shape},
          {"hand_pair", t.hand_pair},
          {"claim", t.obligation.claim},
          {"claimed", obligation_kind_name(t.obligation.kind)},
          {"rel", t.rel ? nlohmann::json(fmt::format("{:.17g}", *t.rel)) : nlohmann::json(nullptr)},
          {"covers", covers},
          {"bound", bound},
          {"statements", t.app.statements},
          {"limits", to_json(limits)},
          {"src_sha256", sha256_hex(print_routine(t.src))},
          {"tgt_sha256", sha256_hex(print_routine(t.tgt))}};
}

std::string cache_key(const Task& t, const Limits& limits) {
  return ProofCache::key_of(task_identity(t, limits));
}

std::optional<Verdict> cached_verdict(const ProofCache& cache, const Task& t, const Limits& limits) {
  auto j = cache.get(task_identity(t, limits));
  if (!j) return std::nullopt;
  try {
    Verdict v = verdict_from_json(*j);
    if (!verdict_answers(v, t) || (v.counterexample && !std::filesystem::exists(v.counterexample->dir)))
      return std::nullopt;
    v.id = t.id;
    v.repro = t.repro;
    v.file = t.file;
    v.cached = true;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;  // a stale or damaged entry is a miss
  }
}

}  // namespace fp::verify
