#pragma once
// Raw lowering of a tensor-expression program to the loop IR, the way a tensor compiler's first
// lowering does it (docs/frontend.md, "Lowering"): every assignment becomes ONE top-level nest of
// serial `for` loops (target axes outermost, in the target's order, then the reduced axes) around
// a single `set`, with loop symbols equal to the axis names and every operation at the target's
// precision. A sum becomes `zero T` plus an accumulating nest `T = add(T, rhs)`; a max becomes a
// nest filling T with -inf plus `T = max(T, rhs)`. Nothing is fused, hoisted or simplified: the
// rewrite tier recognizes exactly these shapes.

#include <string>
#include <vector>

#include "frontend/tensor_expr.h"
#include "core/ir.h"

namespace fp::fe {

// The routine computing `p`: one node per tensor (inputs `materialized input`, outputs
// `materialized output`, everything else `materialized`), the nests of every assignment in order.
Routine lower(const Program& p);

// ---- pieces shared with autodiff -------------------------------------------------------------

// The IR node of a tensor declaration (mode materialized; input/output flags as declared).
Node node_of(const TensorDecl& t);
// Loops over `axes` (outermost first, each 0..extent-1, symbol = axis name) around `body`.
StmtP nest(const Program& p, const std::vector<std::string>& axes, StmtP body);
// Plain iterators for `axes`.
std::vector<fp::Index> iterators(const std::vector<std::string>& axes);
// The loops of an assignment's (accumulating) nest: its target axes, then its reduced axes.
std::vector<std::string> loop_axes(const Assignment& a);
// `e` as an IR expression computed at `prec`. Reads take their tensor's precision from `p`;
// comparisons of axis index expressions are computed at i32 (`lt.i32(idx.i32(t), idx.i32(s +
// 1))` for `t <= s`), everything else at `prec`.
ExprP lower_expr(const Program& p, const Te& e, Prec prec);
// The statements of one assignment (1 for a pointwise one, 2 for a reduction).
std::vector<StmtP> lower_assignment(const Program& p, const Assignment& a);

}  // namespace fp::fe
