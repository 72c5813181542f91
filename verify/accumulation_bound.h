#pragma once
// A certified per-cell bound for an output that only accumulates products, carried from the
// certified checks of its factors (`flashproof diff --rewrite`, verify/diff_plan.h): a self-attention
// step's projection gradients (grad_x += grad_q·w_q, grad_w_q += x·grad_q, ...) and grad_w_o
// (+= o·dout), whose factors dQ, dK, dV and O carry certified bounds (docs/bounds.md §8.1, §7).
//
// Applies when every statement that writes Y, in the original and in the rewrite alike, is `zero Y`
// or a perfect nest `Y[W] = Y[W] + a·b` at Y's precision over factors of that precision, the same
// statements in the same order in both routines, each after the last writer of its factors; each
// product has at most one perturbed factor, and a perturbed factor has a certified check
// (|a_tgt - a_src| <= E_a per cell: rel·|a| + abs, or rel·scale + abs). Then every cell of Y is
// the same left-to-right sum of M products on both sides (M the terms over all its statements), and
// with y = fl(a·b) (|δ| <= u, |η| <= ω; sums exact below the normal range):
//   |Y_tgt - Y_src| <= Σ_t |y'_t - y_t| + γ_M·Σ_t (|y_t| + |y'_t|)          (contraction.term)
//   |y'_t - y_t| <= |b|·E_a + u·|b|(2|a| + E_a) + 2ω,  |y_t| + |y'_t| <= |b|(2|a| + E_a)(1 + u) + 2ω
// (E_a = 0 for an unperturbed product). The completion evaluates both sums in f64 on the diff's
// first executor (a copy of each statement accumulating them) and raises the result for that
// evaluation's own rounding.

#include <optional>
#include <set>
#include <string>

#include "core/ir.h"
#include "verify/compare.h"
#include "verify/downstream_bounds.h"

namespace fp::verify {

// What the plan knows about how the rewrite perturbs each node.
struct PerturbedNodes {
  std::set<std::string> reached;         // every node a bounded claim may perturb
  std::map<std::string, NodeCheck> checks;  // the ones with a certified check that holds alone
};

// The plan of output `y`, or nullopt with `why`. Its one check is Scaled against the scale node the
// completion adds; `watched` names the source nodes the completion reads.
std::optional<DownstreamPlan> accumulation_plan(const Routine& original, const Routine& rewritten,
                                                const std::string& y, const PerturbedNodes& perturbed,
                                                std::string* why);

}  // namespace fp::verify
