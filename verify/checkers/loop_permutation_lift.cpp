// `all-sizes-lift.loop-permutation`: a rewrite that moves loops inside a reduction, each moved
// loop indexing the reduction's target, keeps every cell's contributions and their order for
// every extent (verify/value_pass_lift.h, Z3 over integers); the bitwise check at the routines'
// own sizes runs too and can only agree.

#include <fmt/format.h>

#include "core/deadline.h"
#include "core/diagnostic.h"
#include "verify/case_attach.h"
#include "verify/checkers/builtin.h"
#include "verify/value_pass_lift.h"

namespace fp::verify {

namespace {

void lift_then_check(Verdict& v, const Task& t, const EngineOptions& o) {
  const std::string dump = dump_prefix(t, o);
  const std::vector<std::string> nodes = covered_nodes(t);
  const PairCheckOptions pco = pair_check_options(t, o);
  const LiftResult lift = lift_value_pass(t.src, t.tgt, t.app, o.limits, dump.empty() ? "" : dump + "-lift");
  for (const auto& s : lift.steps) v.steps.push_back(s);
  if (!lift.proved) {
    from_pair_check(v, check_pair(t.src, t.tgt, nodes, pco), t, o, nodes);
    if (v.kind == VerdictKind::Exact)
      v.message += "; all-sizes lift not established (" + lift.why_not + "): proved at the routine's sizes only";
    return;
  }
  // The all-sizes proof stands whatever the concrete check's budget allows.
  try {
    from_pair_check(v, check_pair(t.src, t.tgt, nodes, pco), t, o, nodes);
  } catch (const DeadlineExceeded& e) {
    v.kind = VerdictKind::Unknown;
    v.message = e.text();
    v.steps.push_back("concrete check stopped: " + e.text());
  }
  // The lift is a proof for every extent; the concrete check can only agree with it.
  FP_INTERNAL_CHECK(v.kind != VerdictKind::Refuted,
                    "the all-sizes lift of {} holds but the concrete check refutes it: {}", t.id, v.message);
  if (v.kind != VerdictKind::Exact && v.kind != VerdictKind::Unknown) return;
  const std::string concrete = v.kind == VerdictKind::Exact
                                   ? "bitwise equal at the routine's sizes"
                                   : "the concrete check was inconclusive (" + v.message + ")";
  v.kind = VerdictKind::Exact;
  v.reason = UnknownReason::None;
  v.scope = Scope{true, "all sizes"};
  v.message = fmt::format(
      "every target cell receives the same contributions in the same order for all extents (Z3, integer "
      "arithmetic), each computed from the same values; {}",
      concrete);
}

}  // namespace

Checker loop_permutation_lift_checker() {
  Checker c;
  c.id = "all-sizes-lift.loop-permutation";
  c.description =
      "loops moved inside a reduction keep every cell's summation order for all extents, plus the bitwise "
      "check at the routine's sizes";
  c.discharge = lift_then_check;
  return c;
}

}  // namespace fp::verify
