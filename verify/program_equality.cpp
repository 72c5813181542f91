#include "verify/program_equality.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

#include "core/text_printer.h"

namespace fp::verify {

Index sorted_index(const Index& i) {
  Index c = i.canonical();
  std::sort(c.terms.begin(), c.terms.end(), [](const Index::Term& a, const Index::Term& b) { return a.sym < b.sym; });
  return c;
}

bool same_indices(const std::vector<Index>& a, const std::vector<Index>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(sorted_index(a[i]) == sorted_index(b[i]))) return false;
  return true;
}

bool same_up_to_commutation(const ExprP& a, const ExprP& b) {
  if (!a || !b) return a == b;
  if (a == b) return true;
  if (a->kind != b->kind || a->prec != b->prec || a->op != b->op || a->args.size() != b->args.size()) return false;
  switch (a->kind) {
    case ExprKind::Get:
      return a->name == b->name && same_indices(a->indices, b->indices);
    case ExprKind::GetLocal:
      return a->name == b->name;
    case ExprKind::Const:
      return equal(a, b);
    case ExprKind::EmbedIndex:
      return same_indices(a->indices, b->indices);
    default:
      break;
  }
  bool in_order = true;
  for (std::size_t i = 0; i < a->args.size() && in_order; ++i) in_order = same_up_to_commutation(a->args[i], b->args[i]);
  if (in_order) return true;
  const bool commutes = (a->kind == ExprKind::Binary && (a->binop() == BinOp::Add || a->binop() == BinOp::Mul)) ||
                        (a->kind == ExprKind::Ternary && a->ternop() == TernOp::Fma);
  return commutes && same_up_to_commutation(a->args[0], b->args[1]) &&
         same_up_to_commutation(a->args[1], b->args[0]) &&
         (a->args.size() < 3 || same_up_to_commutation(a->args[2], b->args[2]));
}

namespace {

std::vector<StmtP> spliced_body(const std::vector<StmtP>& body) {
  std::vector<StmtP> out;
  for (const StmtP& s : body) {
    StmtP c = canonical_blocks(s);
    if (c && c->kind == StmtKind::Seq) {
      out.insert(out.end(), c->body.begin(), c->body.end());
    } else {
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::string statement_difference(const StmtP& a, const StmtP& b);

std::string body_difference(const std::vector<StmtP>& a, const std::vector<StmtP>& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (std::string d = statement_difference(a[i], b[i]); !d.empty()) return d;
  if (a.size() != b.size())
    return fmt::format("one body has {} statements, the other {}", a.size(), b.size());
  return "";
}

bool same_carried(const std::vector<Carried>& a, const std::vector<Carried>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].prev != b[i].prev || a[i].next != b[i].next || a[i].prec != b[i].prec ||
        !same_up_to_commutation(a[i].init, b[i].init))
      return false;
  return true;
}

std::string statement_difference(const StmtP& a, const StmtP& b) {
  const bool same = a->kind == b->kind && a->sym == b->sym && a->from == b->from && a->to == b->to &&
                    a->dir == b->dir && same_carried(a->carried, b->carried) && a->name == b->name &&
                    same_indices(a->indices, b->indices) && same_up_to_commutation(a->value, b->value) &&
                    (a->kind != StmtKind::DeclareLocal || a->prec == b->prec);
  if (!same) {
    const std::string line = print_stmt(*a);
    return fmt::format("line {}: `{}` differs", a->loc.line, line.substr(0, line.find('\n')));
  }
  return body_difference(a->body, b->body);
}

}  // namespace

StmtP canonical_blocks(const StmtP& s) {
  if (!s || s->body.empty()) return s;
  auto out = std::make_shared<Stmt>(*s);
  out->body = spliced_body(s->body);
  if (out->kind == StmtKind::For && out->body.size() > 1) out->body = {seq(std::move(out->body))};
  return out;
}

Routine canonical_blocks(const Routine& r) {
  Routine out = r;
  out.body = seq(spliced_body(r.body->body));
  return out;
}

std::string declarations_signature(const Routine& r) {
  std::string sig;
  for (const Node& n : r.nodes)
    sig += fmt::format("{}:{}:{}:{}{}{};", n.name, fmt::join(n.dims, ","), prec_name(n.prec), n.is_input,
                       n.is_output, static_cast<int>(n.mode));
  return sig;
}

std::string program_difference(const Routine& a, const Routine& b) {
  if (a.nodes.size() != b.nodes.size()) return "the programs declare different nodes";
  for (std::size_t i = 0; i < a.nodes.size(); ++i)
    if (!(a.nodes[i] == b.nodes[i])) return fmt::format("the node {} is declared differently", a.nodes[i].name);
  const Routine ca = canonical_blocks(a), cb = canonical_blocks(b);
  return body_difference(ca.body->body, cb.body->body);
}

}  // namespace fp::verify
