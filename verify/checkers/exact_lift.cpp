#include "verify/checkers/exact_lift.h"

#include <fmt/format.h>

#include "core/deadline.h"
#include "core/diagnostic.h"
#include "verify/case_attach.h"
#include "verify/size_reduction.h"

namespace fp::verify {

void discharge_exact_lift(Verdict& v, const Task& t, const EngineOptions& o, const ExactLift& lift) {
  const std::vector<std::string> nodes = covered_nodes(t);
  const PairCheckOptions pco = pair_check_options(t, o);
  for (const auto& s : lift.steps) v.steps.push_back(s);
  if (!lift.proved) {
    from_pair_check(v, check_pair(t.src, t.tgt, nodes, pco), t, o, nodes);
    if (v.kind == VerdictKind::Exact)
      v.message += "; all-sizes lift not established (" + lift.why_not + "): proved at the routine's sizes only";
    return;
  }
  // The proof covers every extent; a small instance of the family is the cross-check.
  const ShrunkPair small = shrink_pair(t.src, t.tgt);
  const std::string where =
      small.extents.empty() ? "at the routine's sizes" : fmt::format("at reduced sizes ({})", extents_text(small.extents));
  Task shrunk = t;
  shrunk.src = small.src;
  shrunk.tgt = small.tgt;
  try {
    from_pair_check(v, check_pair(shrunk.src, shrunk.tgt, nodes, pco), shrunk, o, nodes);
  } catch (const DeadlineExceeded& e) {
    v.kind = VerdictKind::Unknown;
    v.message = e.text();
    v.steps.push_back("concrete check stopped: " + e.text());
  }
  FP_INTERNAL_CHECK(v.kind != VerdictKind::Refuted, "the all-sizes lift of {} holds but the concrete check {} refutes it: {}",
                    t.id, where, v.message);
  if (v.kind != VerdictKind::Exact && v.kind != VerdictKind::Unknown) return;
  const std::string concrete = v.kind == VerdictKind::Exact
                                   ? "bitwise equal " + where
                                   : "the concrete check " + where + " was inconclusive (" + v.message + ")";
  v.kind = VerdictKind::Exact;
  v.reason = UnknownReason::None;
  v.scope = Scope{true, "all sizes"};
  v.message = fmt::format("{}; {}", lift.proof, concrete);
}

}  // namespace fp::verify
