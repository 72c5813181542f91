// The registry of checkers (verify/checkers.h): the engine's own (verify/checkers/builtin.h), then
// each product member's proof folder, one line per member in tier order (rewrites/members.cpp),
// then any a test registers for its scope; and the members' recognizers of hand-written pairs,
// one line per member that has one. The one file of the engine that names members: their
// registration lines (docs/adding-a-rewrite.md).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <utility>

#include "core/diagnostic.h"
#include "verify/checkers.h"
#include "verify/checkers/builtin.h"
#include "verify/online_softmax/proofs.h"

namespace fp::verify {

namespace {

std::vector<Checker> product_checkers() {
  std::vector<Checker> checkers = {
      bitwise_checker(),
      relative_checker(),
      unrecognized_pair_checker(),
      loop_permutation_lift_checker(),
  };
  // One line per member: its proof folder's checkers.
  const std::vector<std::vector<Checker>> members = {
      online_softmax_checkers(),
  };
  for (const auto& m : members) checkers.insert(checkers.end(), m.begin(), m.end());
  return checkers;
}

std::vector<Checker>& registry() {
  static std::vector<Checker> checkers = product_checkers();
  return checkers;
}

}  // namespace

PairRecognition recognize_pair(const Routine& src, const Routine& tgt, const Limits& limits) {
  // One line per member that recognizes hand-written pairs.
  const std::vector<PairRecognizer> recognizers = {
      online_softmax_pair_recognizer(),
  };
  std::vector<std::string> why;
  for (const auto& recognize : recognizers) {
    PairRecognition r = recognize(src, tgt, limits);
    if (!r.tasks.empty()) return r;
    why.push_back(r.why_not);
  }
  return PairRecognition{{}, fmt::format("{}", fmt::join(why, "; "))};
}

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

}  // namespace fp::verify
