#pragma once
// A perfect loop nest around one statement, as the bounded checks read it: the loops peeled off a
// chain of single-statement `for`s, their trip counts and whether an index mentions a loop symbol.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"

namespace fp::verify {

struct Loop {
  std::string sym;
  std::int64_t from = 0, to = -1;
};

// The innermost statement of the chain of single-statement `for` loops starting at `s`; the
// loops, outermost first, are appended to `loops`.
inline const Stmt* peel(const Stmt* s, std::vector<Loop>& loops) {
  while (s->kind == StmtKind::For && s->body.size() == 1) {
    loops.push_back(Loop{s->sym, s->from, s->to});
    s = s->body[0].get();
  }
  return s;
}

inline std::int64_t trips(const Loop& l) { return std::max<std::int64_t>(0, l.to - l.from + 1); }

// The product a·b of `st` when it is one accumulation `st.name[idx] = st.name[idx] + a·b` (the
// sum's operands in either order: IEEE addition commutes exactly), else nullptr.
inline ExprP reduction_product(const Stmt& st) {
  const ExprP& v = st.value;
  if (st.kind != StmtKind::Set || !v || v->kind != ExprKind::Binary || v->binop() != BinOp::Add) return nullptr;
  auto is_self = [&](const ExprP& e) {
    return e->kind == ExprKind::Get && e->name == st.name && e->indices == st.indices;
  };
  const ExprP& prod = is_self(v->args[0]) ? v->args[1] : v->args[0];
  if (!is_self(v->args[0]) && !is_self(v->args[1])) return nullptr;
  return prod->kind == ExprKind::Binary && prod->binop() == BinOp::Mul ? prod : nullptr;
}

inline bool mentions(const std::vector<Index>& idx, const std::string& sym) {
  return std::any_of(idx.begin(), idx.end(), [&](const Index& i) { return i.mentions(sym); });
}

}  // namespace fp::verify
