#include "verify/checkers.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/diagnostic.h"
#include "rewrites/members.h"
#include "verify/case_writer.h"
#include "verify/checkers/builtin.h"
#include "verify/proofs.h"

namespace fp::verify {

namespace {

// The engine's checkers, then every product member's (verify/proofs.cpp).
std::vector<Checker> product_checkers() {
  std::vector<Checker> checkers = {
      bitwise_checker(),
      relative_checker(),
      loop_permutation_lift_checker(),
  };
  for (auto& c : member_checkers()) checkers.push_back(std::move(c));
  return checkers;
}

std::vector<Checker>& registry() {
  static std::vector<Checker> checkers = product_checkers();
  return checkers;
}

}  // namespace

const Checker* find_checker(const std::string& id) {
  for (const auto& c : registry())
    if (c.id == id) return &c;
  return nullptr;
}

std::vector<std::string> checker_ids() {
  std::vector<std::string> ids;
  for (const auto& c : registry()) ids.push_back(c.id);
  return ids;
}

const Checker* checker_for(const Task& t, std::string* why) {
  std::string id;
  if (t.hand_pair) {
    id = t.rel ? "relative" : "bitwise";
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

ScopedCheckerRegistration::ScopedCheckerRegistration(Checker c) : ScopedCheckerRegistration(std::vector{std::move(c)}) {}

ScopedCheckerRegistration::ScopedCheckerRegistration(std::vector<Checker> checkers) {
  for (auto& c : checkers) {
    FP_INTERNAL_CHECK(find_checker(c.id) == nullptr, "a checker '{}' is already registered", c.id);
    ids_.push_back(c.id);
    registry().push_back(std::move(c));
  }
}

ScopedCheckerRegistration::~ScopedCheckerRegistration() {
  auto& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(),
                         [&](const Checker& c) { return std::find(ids_.begin(), ids_.end(), c.id) != ids_.end(); }),
          r.end());
}

std::vector<std::string> covered_nodes(const Task& t) {
  std::vector<std::string> nodes;
  for (const auto& c : t.obligation.covers) nodes.push_back(c.node);
  return nodes;
}

std::string dump_prefix(const Task& t, const EngineOptions& o) {
  if (o.dump_smt_dir.empty()) return "";
  return (std::filesystem::path(o.dump_smt_dir) / sanitize_id(t.id)).string();
}

PairCheckOptions pair_check_options(const Task& t, const EngineOptions& o) {
  PairCheckOptions pco;
  pco.limits = o.limits;
  pco.dump_prefix = dump_prefix(t, o);
  pco.rel = t.rel;
  return pco;
}

}  // namespace fp::verify
