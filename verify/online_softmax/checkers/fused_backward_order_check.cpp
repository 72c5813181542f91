// `bitwise.fused-backward-dv`: the fused backward's dV (claim `backward-dv`) bit for bit for every
// extent: the structural lift of verify/online_softmax/fused_backward_lift.h (each pair's term the
// source's, bit for bit) with the per-cell summation order of verify/online_softmax/
// fused_backward_order.h (Z3 over the integers), then the bitwise check of a small instance the
// tier emits for a shrunk source as a cross-check (verify/checkers/exact_lift.h). Without the lift,
// the bitwise check at the routines' sizes decides, scoped to them. The order step is also the one
// of `certified-bound.fused-backward` (dQ, dK).

#include <fmt/format.h>

#include "rewrites/online_softmax/claims.h"
#include "verify/checkers/exact_lift.h"
#include "verify/online_softmax/checkers/checkers.h"
#include "verify/online_softmax/checkers/fused_backward_order_step.h"
#include "verify/online_softmax/fused_backward_lift.h"
#include "verify/online_softmax/fused_backward_order.h"
#include "verify/size_reduction.h"

namespace fp::verify {

GradientOrderLift gradient_order_lift(const Task& t, const EngineOptions& o, const std::string& gradient) {
  const std::string operand = osm::contraction_operand(osm::backward_roles(t.app), gradient);
  GradientOrderLift lift;
  if (operand.empty()) {
    lift.why_not = fmt::format("{} is not a gradient the application matched", gradient);
    return lift;
  }
  const std::string dump = dump_prefix(t, o);
  return lift_gradient_order(t.src, t.tgt, gradient, operand, o.limits, dump.empty() ? "" : dump + "-order");
}

GradientOrderLift gradient_order_step(Verdict& v, const Task& t, const EngineOptions& o, const std::string& gradient) {
  const GradientOrderLift lift = gradient_order_lift(t, o, gradient);
  if (osm::contraction_operand(osm::backward_roles(t.app), gradient).empty())
    v.steps.push_back("per-cell summation order not lifted to all sizes: " + lift.why_not);
  for (const auto& s : lift.steps) v.steps.push_back(s);
  return lift;
}

ShrunkPair fused_backward_instance(const Task& t, const std::string& gradient) {
  const osm::BackwardRoles roles = osm::backward_roles(t.app);
  return tier_cross_check_instance(t, t.reemit, [&](const ShrunkPair& p) {
    return lift_fused_backward(p.src, p.tgt, roles, gradient).proved;
  });
}

namespace {

ExactLift dv_lift(const Task& t, const EngineOptions& o) {
  const osm::BackwardRoles roles = osm::backward_roles(t.app);
  const std::vector<std::string> nodes = covered_nodes(t);
  ExactLift out;
  if (nodes.size() != 1 || nodes[0] != roles.d_v || roles.d_v.empty()) {
    out.why_not = "the claim does not cover the application's dV";
    return out;
  }
  const BackwardLift lift = lift_fused_backward(t.src, t.tgt, roles, roles.d_v);
  out.steps = lift.steps;
  if (!lift.proved) {
    out.why_not = lift.why_not;
    return out;
  }
  const GradientOrderLift order = gradient_order_lift(t, o, roles.d_v);
  for (const auto& s : order.steps) out.steps.push_back(s);
  if (!order.proved) {
    out.why_not = "the per-cell summation order is not lifted: " + order.why_not;
    return out;
  }
  out.proved = true;
  out.proof = fmt::format(
      "every cell of {} adds, in the inner axis's order, the same products of {} recomputed bit for bit and {}, for "
      "every extent (structural over symbolic extents, {} pairs in blocks of {}{}; {})",
      roles.d_v, roles.p, roles.d_out, lift.pairs, lift.block, lift.tail ? " and a tail" : "", order.statement);
  out.instance = fused_backward_instance(t, roles.d_v);
  return out;
}

}  // namespace

Checker fused_backward_dv_checker() {
  return exact_lift_checker(
      "bitwise.fused-backward-dv",
      "dV bitwise equal for every extent: each pair's term the composed one and the per-cell summation order the "
      "composed one (structural over symbolic extents, Z3 over the integers), plus the bitwise check of a small "
      "instance the tier emits; else bitwise at the routines' sizes",
      dv_lift);
}

}  // namespace fp::verify
