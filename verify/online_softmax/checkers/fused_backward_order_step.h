#pragma once
// The fused backward's order lift as a step of a verdict (verify/online_softmax/fused_backward_order.h), shared
// by the dV checker and the dQ / dK bound.

#include <string>

#include "verify/checkers.h"
#include "verify/online_softmax/fused_backward_order.h"

namespace fp::verify {

// The lift for `gradient` (its contraction operand read from the application).
GradientOrderLift gradient_order_lift(const Task& t, const EngineOptions& o, const std::string& gradient);
// The same, its steps (or why it did not run) appended to `v`.
GradientOrderLift gradient_order_step(Verdict& v, const Task& t, const EngineOptions& o, const std::string& gradient);

}  // namespace fp::verify
