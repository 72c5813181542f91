#pragma once
// Reverse-mode differentiation of a tensor-expression program, emitted as a tensor compiler's
// autodiff emits it: a TRAINING STEP routine holding the forward nests, then `zero grad_X` for
// every gradient node, then the backward — for each forward assignment, in reverse order, one
// adjoint nest per differentiated operand, each an accumulation
//   grad_X[x-axes] = add(grad_X[x-axes], contribution)
// over the loops of the forward assignment's (accumulating) nest. Gradient nodes are named
// `grad_<name>`; the loss is Σ output·seed over the requested (output, seed) pairs, so the
// gradient of such an output is its seed input itself.
//
// Rules (docs/frontend.md, "Differentiation"; adj is the adjoint of the operation's value):
//   a + b, a - b, -a      adj, adj (or -adj)
//   a * b                 adj * b to a, a * adj to b (each factor keeps its place)
//   a / b                 adj / b to a, adj * (-a / (b * b)) to b   (never pow)
//   exp(a)                adj * exp(a); adj * T when exp is the whole pointwise rhs of T
//   sum over axes         adj broadcast (the nest's loops include the reduced axes)
//   where(c, a, b)        where(c, adj, 0) to a, where(c, 0, adj) to b; nothing to c
//   comparisons, consts   nothing
//   max over axes         nothing (default: the max of a softmax is not differentiated), or
//                         adj * eq(rhs, T) with differentiable_max (every tied maximum gets it)
// Only tensors that both depend on a requested leaf and reach the loss get gradients.

#include <string>
#include <utility>
#include <vector>

#include "frontend/tensor_expr.h"
#include "core/ir.h"

namespace fp::fe {

struct GradRequest {
  // Inputs whose gradients the step outputs (as grad_<name>, in this order).
  std::vector<std::string> wrt;
  // (computed tensor, input of the same dims): loss = Σ over the pairs of Σ tensor·seed.
  std::vector<std::pair<std::string, std::string>> loss;
  // Differentiate max reductions (adj * eq(x, m)) instead of treating them as constants.
  bool differentiable_max = false;
};

// The gradient node name of tensor `name`.
std::string grad_name(const std::string& name);

// The training step of `forward` for `req`: forward + zeroing + backward in one routine named
// `<program name>_train` unless `routine_name` is given. Its outputs are the gradients of `wrt`
// only. Throws UserError(kExitMalformed, file) for a request that does not fit the program.
Routine lower_training_step(const Program& forward, const GradRequest& req, const std::string& file = "",
                            const std::string& routine_name = "");

}  // namespace fp::fe
