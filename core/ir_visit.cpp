#include "core/ir_visit.h"

namespace fp {

void for_each_expr(const ExprP& e, const std::function<void(const Expr&)>& f) {
  if (!e) return;
  f(*e);
  for (const auto& a : e->args) for_each_expr(a, f);
}

void for_each_stmt(const StmtP& s, const std::function<void(const Stmt&)>& f) {
  if (!s) return;
  f(*s);
  for (const auto& b : s->body) for_each_stmt(b, f);
}

void for_each_own_expr(const Stmt& s, const std::function<void(const ExprP&)>& f) {
  if (s.value) f(s.value);
  for (const auto& c : s.carried)
    if (c.init) f(c.init);
}

namespace {

void flatten(const StmtP& s, std::vector<StmtP>& out) {
  if (s->kind == StmtKind::Seq) {
    for (const auto& b : s->body) flatten(b, out);
  } else {
    out.push_back(s);
  }
}

}  // namespace

std::vector<StmtP> top_level_statements(const Routine& r) {
  std::vector<StmtP> out;
  if (r.body) flatten(r.body, out);
  return out;
}

}  // namespace fp
