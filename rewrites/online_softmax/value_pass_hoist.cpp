#include "rewrites/online_softmax/value_pass_hoist.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/ir_visit.h"
#include "core/text_printer.h"

namespace fp::osm {

std::set<std::string> normalized_nodes(const RoutineView& view, const std::vector<Normalizer>& normalizers) {
  std::set<std::string> sources;
  for (const auto& nz : normalizers) sources.insert(nz.l);
  std::set<std::string> out;
  // Program order is not assumed: iterate to a fixpoint (each pass adds at least one node or stops).
  for (bool grew = true; grew;) {
    grew = false;
    for (int p = 0; p < view.size(); ++p) {
      const Line& line = view.line(p);
      if (!line.nest) continue;
      const std::string& node = line.nest->store->name;
      if (out.count(node) || !view.definition(node)) continue;
      for (const auto& rd : line.reads)
        if (sources.count(rd) || out.count(rd)) {
          out.insert(node);
          grew = true;
          break;
        }
    }
  }
  return out;
}

namespace {

bool plain_or_fixed(const std::vector<Index>& idx, const Nest& nest) {
  for (const auto& raw : idx) {
    Index i = raw.canonical();
    if (i.is_fixed()) continue;
    if (!i.is_plain_iterator() || !nest.loop(i.terms[0].sym)) return false;
  }
  return true;
}

bool plain_in(const std::vector<Index>& idx, const std::string& sym) {
  for (const auto& raw : idx) {
    Index i = raw.canonical();
    if (i.is_plain_iterator() && i.terms[0].sym == sym) return true;
  }
  return false;
}

}  // namespace

std::optional<std::variant<Hoist, Decline>> match_hoist(const RoutineView& view, int pos,
                                                        const std::set<std::string>& normalized) {
  const Line& line = view.line(pos);
  if (!line.nest) return std::nullopt;
  const Nest& nest = *line.nest;
  auto red = reduction_of(nest);
  if (!red || red->op != BinOp::Add) return std::nullopt;
  const ExprP& prod = red->other;
  if (prod->kind != ExprKind::Binary || prod->binop() != BinOp::Mul) return std::nullopt;
  const ExprP& f0 = prod->args[0];
  const ExprP& f1 = prod->args[1];
  if (f0->kind != ExprKind::Get || f1->kind != ExprKind::Get) return std::nullopt;
  Hoist h;
  h.pos = pos;
  h.target = nest.store->name;
  if (normalized.count(f0->name)) {
    h.w_first = true;
  } else if (normalized.count(f1->name)) {
    h.w_first = false;
  } else {
    return std::nullopt;
  }
  const Expr& w = h.w_first ? *f0 : *f1;
  const Expr& v = h.w_first ? *f1 : *f0;
  h.w = w.name;
  h.v = v.name;
  auto decline = [&](const char* code, std::string sentence) {
    return Decline{"online-softmax",   kValuePassHoistId, 0, pos + 1, view.source_line(pos), code,
                   std::move(sentence), ""};
  };
  const std::string what = fmt::format("the reduction into {} (of {} * {})", h.target, h.w, h.v);
  for (const Expr* f : {&w, &v})
    if (!plain_or_fixed(f->indices, nest))
      return decline(
          "non-plain-index",
          fmt::format("{} reads {}, whose indices are not all plain iterators of its loops or fixed "
                      "indices",
                      what, read_text(f->name, f->indices)));
  for (const auto& l : nest.loops) (plain_in(w.indices, l.sym) ? h.outer : h.inner).push_back(l);
  if (h.inner.empty())
    return decline("nothing-to-hoist",
                   fmt::format("{}: every loop indexes {}, so there is no loop to move", what, h.w));
  for (const auto& l : h.inner) {
    if (l.dead())
      return decline(
          "dead-moved-loop",
          fmt::format("{}: loop {} would move behind the read of {} but runs zero times ({}..{}); the "
                      "hoisted read would be a phantom read",
                      what, l.sym, h.w, l.from, l.to));
    if (!plain_in(nest.store->indices, l.sym))
      return decline(
          "moved-loop-not-in-target",
          fmt::format("{}: loop {} would move behind the read of {} but does not index the target {} as a "
                      "plain iterator; moving it could change a cell's summation order",
                      what, l.sym, h.w, read_text(h.target, nest.store->indices)));
  }
  return h;
}

StmtP emit_hoist(const Hoist& h, const RoutineView& view, NameMinter& names) {
  const Nest& nest = *view.line(h.pos).nest;
  const Stmt& store = *nest.store;
  const Expr& add = *store.value;
  const ExprP& prod = add.args[reduction_of(nest)->target_first ? 1 : 0];
  const ExprP& wread = prod->args[h.w_first ? 0 : 1];
  const std::string p = names.mint("os_p_" + h.w);
  ExprP local = get_local(p, wread->prec);
  ExprP new_prod =
      binary(BinOp::Mul, h.w_first ? local : prod->args[0], h.w_first ? prod->args[1] : local, prod->prec);
  ExprP new_add = binary(BinOp::Add, add.args[0] == prod ? new_prod : add.args[0],
                         add.args[1] == prod ? new_prod : add.args[1], add.prec);
  StmtP inner = set(store.name, store.indices, new_add);
  for (auto it = h.inner.rbegin(); it != h.inner.rend(); ++it)
    inner = for_loop(it->sym, it->from, it->to, {inner});
  std::vector<StmtP> body = {declare_local(p, wread->prec), set_local(p, wread), inner};
  StmtP s;
  if (h.outer.empty()) {
    s = seq(std::move(body));
  } else {
    s = for_loop(h.outer.back().sym, h.outer.back().from, h.outer.back().to, std::move(body));
    for (auto it = h.outer.rbegin() + 1; it != h.outer.rend(); ++it)
      s = for_loop(it->sym, it->from, it->to, {s});
  }
  return s;
}

Application hoist_application(const Hoist& h, const RoutineView& view, const Stmt& emitted) {
  Application app;
  app.member = "online-softmax";
  app.shape = kValuePassHoistId;
  app.statements = {h.pos + 1};
  app.lines = {view.source_line(h.pos)};
  app.anchor_run = 1;
  app.matched = matched_roles(HoistRoles{h.target, h.w, h.v});
  auto syms = [](const std::vector<NestLoop>& ls) {
    std::string s;
    for (const auto& l : ls) s += (s.empty() ? "" : ", ") + l.sym;
    return s;
  };
  std::string local;
  for_each_stmt(std::make_shared<const Stmt>(emitted), [&](const Stmt& s) {
    if (s.kind == StmtKind::DeclareLocal && local.empty()) local = s.name;
  });
  app.emitted =
      fmt::format("{}read {} once into local {}, then loop {} innermost",
                  h.outer.empty() ? "" : fmt::format("for {}: ", syms(h.outer)), h.w, local, syms(h.inner));
  const Stmt& store = *view.line(h.pos).nest->store;
  Obligation o;
  o.kind = ObligationKind::Exact;
  o.claim = claim::kValuePass;
  o.description = fmt::format(
      "every cell of {} is bitwise equal to the original: the moved loops ({}) index it as plain iterators, "
      "so no "
      "cell's summation order changes, and {} is read once per outer iteration at its own precision",
      h.target, syms(h.inner), h.w);
  o.covers = {Cover{h.target, cells_text(h.target, store.indices, view.line(h.pos).nest->loops)}};
  app.obligations = {o};
  return app;
}

}  // namespace fp::osm
