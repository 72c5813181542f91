#pragma once
// The fused backward's order lift as a step of a verdict (verify/fused_backward_order.h), shared
// by the dV checker and the dQ / dK bound.

#include <string>

#include "verify/checkers.h"
#include "verify/fused_backward_order.h"

namespace fp::verify {

// The operand whose index carries the pair's other axis in `gradient`'s contraction: k for dQ, q
// for dK, dO for dV (the application's roles); "" for another node.
std::string pair_operand(const Application& app, const std::string& gradient);

// Runs the lift for `gradient` and appends its steps to `v`.
GradientOrderLift gradient_order_step(Verdict& v, const Task& t, const EngineOptions& o, const std::string& gradient);

}  // namespace fp::verify
