// The checkers that compare covered cells at the routines' own sizes (verify/pair_check.h):
// `bitwise` for exact claims, `relative` for a hand-written bounded:REL pair.

#include <fmt/format.h>

#include <string>
#include <utility>

#include "verify/case_attach.h"
#include "verify/checkers/builtin.h"

namespace fp::verify {

namespace {

void check_cells(Verdict& v, const Task& t, const EngineOptions& o) {
  const std::vector<std::string> nodes = covered_nodes(t);
  from_pair_check(v, check_pair(t.src, t.tgt, nodes, pair_check_options(t, o)), t, o, nodes);
}

Checker cell_checker(std::string id, std::string description) {
  Checker c;
  c.id = std::move(id);
  c.description = std::move(description);
  c.discharge = check_cells;
  return c;
}

}  // namespace

Checker bitwise_checker() {
  return cell_checker("bitwise", "every covered cell bitwise equal for every input, at the routines' sizes");
}

// A pair under the claim `bounded` that no member recognized: unknown, with every member's reason
// and the claims that would check it anyway.
Checker unrecognized_pair_checker() {
  Checker c;
  c.id = "unrecognized-pair";
  c.description = "a pair claimed within a rewrite's certified bounds that no rewrite recognizes: unknown, with why";
  c.discharge = [](Verdict& v, const Task& t, const EngineOptions&) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = fmt::format("no rewrite recognizes the pair, so it has no certified bound ({}); --claim bounded:REL "
                            "checks a relative bound you state, --claim exact a bitwise one",
                            t.unrecognized);
  };
  return c;
}

Checker relative_checker() {
  return cell_checker("relative", "every covered cell within REL·|source| for every input (NaN positions exact)");
}

}  // namespace fp::verify
