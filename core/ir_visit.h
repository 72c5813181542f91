#pragma once
// Generic traversals over the IR, shared by every analysis (checker, placement, rewrites).

#include <functional>

#include "core/ir.h"

namespace fp {

// Calls f on e and every sub-expression, pre-order.
void for_each_expr(const ExprP& e, const std::function<void(const Expr&)>& f);
// Calls f on s and every nested statement, pre-order.
void for_each_stmt(const StmtP& s, const std::function<void(const Stmt&)>& f);
// Calls f on every expression held directly by s (value/condition, carried inits), not nested
// statements' expressions.
void for_each_own_expr(const Stmt& s, const std::function<void(const ExprP&)>& f);

// The routine's top-level statements, nested top-level sequences looked through (the positions
// rewrites/ records in Application::statements, 1-based there).
std::vector<StmtP> top_level_statements(const Routine& r);

}  // namespace fp
