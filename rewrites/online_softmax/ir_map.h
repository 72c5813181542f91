#pragma once
// Bottom-up rewriting of expressions and statement trees, for the shapes' mutants (planted bugs:
// mutants.cpp, backward_mutants.cpp).

#include <functional>

#include "core/ir.h"

namespace fp::osm {

using ExprMap = std::function<ExprP(const ExprP&)>;

// Bottom-up rewrite of an expression.
inline ExprP map_expr(const ExprP& e, const ExprMap& f) {
  if (!e) return e;
  if (e->args.empty()) return f(e);
  auto copy = std::make_shared<Expr>(*e);
  for (auto& a : copy->args) a = map_expr(a, f);
  return f(copy);
}

// Bottom-up rewrite of a statement tree: `f` sees each statement with its children rewritten.
inline StmtP map_stmt(const StmtP& s, const std::function<StmtP(const StmtP&)>& f) {
  if (s->body.empty()) return f(s);
  auto copy = std::make_shared<Stmt>(*s);
  for (auto& b : copy->body) b = map_stmt(b, f);
  return f(copy);
}

// Every own expression of every statement in the tree.
inline StmtP map_exprs(const StmtP& s, const ExprMap& f) {
  return map_stmt(s, [&](const StmtP& st) {
    auto copy = std::make_shared<Stmt>(*st);
    if (copy->value) copy->value = map_expr(copy->value, f);
    for (auto& c : copy->carried) c.init = map_expr(c.init, f);
    return StmtP(copy);
  });
}

}  // namespace fp::osm
