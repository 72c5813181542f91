#include "rewrites/name_minter.h"

namespace fp {

namespace {

void note_indices(const std::vector<Index>& idx, std::unordered_set<std::string>& used) {
  for (const auto& i : idx)
    for (const auto& t : i.terms) used.insert(t.sym);
}

void note_expr(const Expr& e, std::unordered_set<std::string>& used) {
  if (!e.name.empty()) used.insert(e.name);
  note_indices(e.indices, used);
  for (const auto& a : e.args) note_expr(*a, used);
}

void note_stmt(const Stmt& s, std::unordered_set<std::string>& used) {
  if (!s.sym.empty()) used.insert(s.sym);
  if (!s.name.empty() && s.kind != StmtKind::Comment) used.insert(s.name);
  for (const auto& c : s.carried) {
    used.insert(c.prev);
    used.insert(c.next);
    if (c.init) note_expr(*c.init, used);
  }
  note_indices(s.indices, used);
  if (s.value) note_expr(*s.value, used);
  for (const auto& b : s.body) note_stmt(*b, used);
}

}  // namespace

NameMinter::NameMinter(const Routine& r) {
  used_.insert(r.name);
  for (const auto& n : r.nodes) used_.insert(n.name);
  if (r.body) note_stmt(*r.body, used_);
}

std::string NameMinter::mint(const std::string& base) {
  std::string name = base;
  for (int k = 2; used_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

}  // namespace fp
