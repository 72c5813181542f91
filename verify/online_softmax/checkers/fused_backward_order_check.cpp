// `bitwise.fused-backward-dv`: the fused backward's dV (claim `backward-dv`) bit for bit at the
// routines' sizes (verify/pair_check.h, as `bitwise`), plus the per-cell summation order of dV
// lifted to every size of the blocked template (verify/online_softmax/fused_backward_order.h). The lift is a
// step of the verdict, not its scope: what each pair's term is stays proved at the routine's
// sizes. Also the order step of `certified-bound.fused-backward` (dQ, dK).

#include <fmt/format.h>

#include "rewrites/online_softmax/claims.h"
#include "verify/case_attach.h"
#include "verify/online_softmax/checkers/checkers.h"
#include "verify/online_softmax/checkers/fused_backward_order_step.h"
#include "verify/online_softmax/fused_backward_order.h"

namespace fp::verify {

GradientOrderLift gradient_order_step(Verdict& v, const Task& t, const EngineOptions& o, const std::string& gradient) {
  const std::string operand = osm::contraction_operand(osm::backward_roles(t.app), gradient);
  GradientOrderLift lift;
  if (operand.empty()) {
    lift.why_not = fmt::format("{} is not a gradient the application matched", gradient);
    v.steps.push_back("per-cell summation order not lifted to all sizes: " + lift.why_not);
    return lift;
  }
  const std::string dump = dump_prefix(t, o);
  lift = lift_gradient_order(t.src, t.tgt, gradient, operand, o.limits, dump.empty() ? "" : dump + "-order");
  for (const auto& s : lift.steps) v.steps.push_back(s);
  return lift;
}

namespace {

void check_dv(Verdict& v, const Task& t, const EngineOptions& o) {
  const std::vector<std::string> nodes = covered_nodes(t);
  from_pair_check(v, check_pair(t.src, t.tgt, nodes, pair_check_options(t, o)), t, o, nodes);
  if (v.kind != VerdictKind::Exact || nodes.size() != 1) return;
  const GradientOrderLift lift = gradient_order_step(v, t, o, nodes[0]);
  v.message += lift.proved ? "; " + lift.statement
                           : "; per-cell summation order not lifted to all sizes (" + lift.why_not + ")";
}

}  // namespace

Checker fused_backward_dv_checker() {
  Checker c;
  c.id = "bitwise.fused-backward-dv";
  c.description =
      "dV bitwise equal at the routines' sizes, and its per-cell summation order the composed one for every size "
      "of the blocked template (Z3 over the integers)";
  c.discharge = check_dv;
  return c;
}

}  // namespace fp::verify
