#include "verify/checkers.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/diagnostic.h"
#include "rewrites/members.h"
#include "verify/case_writer.h"

namespace fp::verify {

const Checker* checker_for(const Task& t, std::string* why) {
  std::string id;
  if (t.hand_pair) {
    id = t.rel                                           ? "relative"
         : t.obligation.kind == ObligationKind::Bounded ? "unrecognized-pair"
                                                          : "bitwise";
  } else {
    const ClaimSpec* claim = find_claim(t.shape, t.obligation.claim);
    if (!claim || claim->kind != t.obligation.kind) {
      if (why)
        *why = fmt::format("the shape {} declares no {} claim {}", t.shape, obligation_kind_name(t.obligation.kind),
                           t.obligation.claim);
      return nullptr;
    }
    id = claim->checker;
  }
  const Checker* c = find_checker(id);
  if (!c && why)
    *why = fmt::format("no checker '{}' is registered for the claim {} of {} (known: {})", id, t.obligation.claim,
                       t.shape, fmt::join(checker_ids(), ", "));
  return c;
}

std::vector<std::string> covered_nodes(const Task& t) {
  std::vector<std::string> nodes;
  for (const auto& c : t.obligation.covers) nodes.push_back(c.node);
  return nodes;
}

std::string dump_prefix(const Task& t, const EngineOptions& o) {
  if (o.dump_smt_dir.empty()) return "";
  return (std::filesystem::path(o.dump_smt_dir) / sanitize_id(t.artifact())).string();
}

PairCheckOptions pair_check_options(const Task& t, const EngineOptions& o) {
  PairCheckOptions pco;
  pco.limits = o.limits;
  pco.dump_prefix = dump_prefix(t, o);
  pco.rel = t.rel;
  return pco;
}

}  // namespace fp::verify
