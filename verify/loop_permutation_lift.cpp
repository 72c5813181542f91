#include "verify/loop_permutation_lift.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "core/ir_visit.h"
#include "core/text_printer.h"
#include "verify/phase_clock.h"
#include "verify/smt/smt.h"
#include "verify/symbolic/symexec.h"

namespace fp::verify {

namespace {

struct Loop {
  std::string sym;
  std::int64_t from, to;
  bool operator<(const Loop& o) const { return std::tie(sym, from, to) < std::tie(o.sym, o.from, o.to); }
  bool operator==(const Loop& o) const = default;
};

// for* -> one statement: the loops and the innermost statement.
const Stmt* peel(const Stmt* s, std::vector<Loop>& loops) {
  while (s->kind == StmtKind::For && s->body.size() == 1) {
    loops.push_back(Loop{s->sym, s->from, s->to});
    s = s->body[0].get();
  }
  return s;
}

bool reads_node(const ExprP& e, const std::string& node) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || (x.kind == ExprKind::Get && x.name == node); });
  return found;
}

// Replaces every sub-expression structurally equal to `from` by `to`.
ExprP replace(const ExprP& e, const ExprP& from, const ExprP& to) {
  if (equal(e, from)) return to;
  if (e->args.empty()) return e;
  std::vector<ExprP> args;
  bool changed = false;
  for (const auto& a : e->args) {
    args.push_back(replace(a, from, to));
    changed = changed || args.back() != a;
  }
  if (!changed) return e;
  auto copy = std::make_shared<Expr>(*e);
  copy->args = std::move(args);
  return copy;
}

}  // namespace

LiftResult lift_loop_permutation(const Routine& src, const Routine& tgt, const Application& app,
                           const Limits& limits, const std::string& dump_prefix) {
  ScopedPhase phase("all-sizes lift");
  LiftResult res;
  auto fail = [&](std::string why) {
    res.why_not = std::move(why);
    res.steps.push_back("all-sizes lift not established: " + res.why_not);
    return res;
  };
  if (app.statements.size() != 1) return fail("the application does not name exactly one statement");
  if (src.nodes.size() != tgt.nodes.size() ||
      !std::equal(src.nodes.begin(), src.nodes.end(), tgt.nodes.begin()))
    return fail("source and target declare different nodes");
  std::vector<StmtP> S = top_level_statements(src), T = top_level_statements(tgt);
  const std::size_t pos = static_cast<std::size_t>(app.statements[0] - 1);
  if (S.size() != T.size() || pos >= S.size())
    return fail("source and target have different top-level statements");
  for (std::size_t i = 0; i < S.size(); ++i)
    if (i != pos && !equal(S[i], T[i]))
      return fail(fmt::format("top-level statement {} differs outside the application", i + 1));
  res.steps.push_back(fmt::format("structure: {} top-level statements identical outside statement {}",
                                  S.size() - 1, pos + 1));

  // Source: for L { T[ti] = add(T[ti], mul(A, B)) }.
  std::vector<Loop> L;
  const Stmt* store = peel(S[pos].get(), L);
  if (store->kind != StmtKind::Set) return fail("the source statement is not a loop nest around one store");
  const ExprP& v = store->value;
  if (!v || v->kind != ExprKind::Binary || v->binop() != BinOp::Add)
    return fail("the source store is not an add");
  auto self_read = [&](const ExprP& e) {
    return e->kind == ExprKind::Get && e->name == store->name && e->indices == store->indices;
  };
  int prod_at = self_read(v->args[0]) ? 1 : self_read(v->args[1]) ? 0 : -1;
  if (prod_at < 0) return fail("the source add does not read its target at the stored cell");
  const ExprP& prod = v->args[static_cast<std::size_t>(prod_at)];
  if (prod->kind != ExprKind::Binary || prod->binop() != BinOp::Mul)
    return fail("the accumulated value is not a product");
  if (reads_node(prod, store->name)) return fail("the accumulated product reads the target node");
  std::set<std::string> syms;
  for (const auto& l : L)
    if (!syms.insert(l.sym).second) return fail("the source nest binds a loop symbol twice");

  // Target: for O { local p; p := R; for I { S' } } (or a sequence of the three without O).
  std::vector<Loop> O;
  const Stmt* body = peel(T[pos].get(), O);
  const std::vector<StmtP>* list = nullptr;
  if (body->kind == StmtKind::For || body->kind == StmtKind::Seq) list = &body->body;
  if (body->kind == StmtKind::For) {
    O.push_back(Loop{body->sym, body->from, body->to});
  }
  if (!list || list->size() != 3)
    return fail("the target statement is not loops around (local, read, inner loops)");
  const Stmt& decl = *(*list)[0];
  const Stmt& read = *(*list)[1];
  if (decl.kind != StmtKind::DeclareLocal || read.kind != StmtKind::SetLocal || read.name != decl.name)
    return fail("the target does not declare a local and read into it");
  std::vector<Loop> I;
  const Stmt* inner = peel((*list)[2].get(), I);
  if (inner->kind != StmtKind::Set) return fail("the target's inner loops do not hold one store");
  const ExprP& R = read.value;
  if (!equal(R, prod->args[0]) && !equal(R, prod->args[1]))
    return fail("the hoisted read is neither factor of the source product");
  if (R->kind != ExprKind::Get || R->name == store->name)
    return fail("the hoisted expression is not a read of a node other than the target");
  if (decl.prec != R->prec)
    return fail(fmt::format("the local is {} but the hoisted read is {}: storing it would convert",
                            prec_name(decl.prec), prec_name(R->prec)));
  ExprP expected = replace(store->value, R, get_local(decl.name, decl.prec));
  if (inner->name != store->name || inner->indices != store->indices || !equal(inner->value, expected))
    return fail(fmt::format("the target store is not the source store with {} replaced by {}: {}",
                            print_expr(*R), decl.name, print_stmt(*inner)));
  // The local must not shadow a name the store reads otherwise.
  bool local_read_elsewhere = false;
  for_each_expr(store->value, [&](const Expr& x) {
    local_read_elsewhere = local_read_elsewhere || (x.kind == ExprKind::GetLocal && x.name == decl.name);
  });
  if (local_read_elsewhere) return fail("the local's name is already read by the source store");
  std::vector<Loop> perm = O;
  perm.insert(perm.end(), I.begin(), I.end());
  std::vector<Loop> a = L, b = perm;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b)
    return fail("the target's loops are not a permutation of the source's (same symbols and ranges)");
  res.steps.push_back(
      fmt::format("structure: target = for ({}) {{ {} := {} }} for ({}) {{ source store with the read "
                  "replaced }}; loops a "
                  "permutation, local at the read's precision {}",
                  fmt::join(
                      [&] {
                        std::vector<std::string> s;
                        for (const auto& l : O) s.push_back(l.sym);
                        return s;
                      }(),
                      ", "),
                  decl.name, print_expr(*R),
                  fmt::join(
                      [&] {
                        std::vector<std::string> s;
                        for (const auto& l : I) s.push_back(l.sym);
                        return s;
                      }(),
                      ", "),
                  prec_name(decl.prec)));

  smt::OrderQuery q;
  for (const auto& l : L) q.src_loops.push_back(l.sym);
  for (const auto& l : perm) q.tgt_loops.push_back(l.sym);
  q.outer = static_cast<int>(O.size());
  q.target = store->indices;
  q.hoisted = R->indices;
  for (const auto& idx : R->indices)
    for (const auto& t : idx.terms)
      if (!syms.count(t.sym)) return fail("the hoisted read uses a symbol that is not a loop of the nest");
  smt::SmtLimits lim;
  lim.rlimit = limits.rlimit;
  lim.timeout_s = limits.timeout_s;
  for (const auto& f : smt::prove_order(q, lim, dump_prefix)) {
    if (f.outcome.status == smt::SmtStatus::Unsat) {
      res.steps.push_back(
          f.shared ? fmt::format("Z3 (integers, symbolic extents): fact '{}' holds for all extents (unsat; the "
                                 "same query as an earlier obligation's)",
                                 f.name)
                   : fmt::format("Z3 (integers, symbolic extents): fact '{}' holds for all extents (unsat, {:.3f}s)",
                                 f.name, f.outcome.seconds));
      continue;
    }
    if (f.outcome.status == smt::SmtStatus::Unknown) {
      res.unknown = true;
      return fail(fmt::format("Z3 could not decide fact '{}' ({})", f.name, f.outcome.reason));
    }
    return fail(fmt::format("fact '{}' fails: {}", f.name, f.witness));
  }
  res.proved = true;
  return res;
}

}  // namespace fp::verify
