#include "rewrites/online_softmax/score_chain.h"

#include <fmt/format.h>

#include <set>

namespace fp::osm {

std::variant<ScoreChain, std::string> find_score_chain(const RoutineView& view, const std::string& xname) {
  ScoreChain fm;
  const Node* x = view.node(xname);
  std::set<std::string> visited;
  std::vector<std::string> todo = {xname};
  auto fail = [](std::string s) { return s; };
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (!visited.insert(name).second) continue;
    const Node* n = view.node(name);
    if (!n || n->dims != x->dims)
      return fail(fmt::format("{} in the chain of the scores {} does not have their shape", name, xname));
    const std::vector<int>& ws = view.writers(name);
    if (ws.size() == 2 && view.line(ws[0]).stmt->kind == StmtKind::Zero && view.line(ws[1]).nest) {
      const Nest& nest = *view.line(ws[1]).nest;
      auto red = reduction_of(nest);
      const ExprP& o = red ? red->other : nullptr;
      if (!red || red->op != BinOp::Add || !o || o->kind != ExprKind::Binary || o->binop() != BinOp::Mul ||
          !is_get(o->args[0]) || !is_get(o->args[1]))
        return fail(
            fmt::format("{} ({}) is not one accumulation of a product of two reads", name, pos_text(ws[1])));
      if (!fm.s.empty())
        return fail(fmt::format("the chain of {} reaches two contractions ({} and {})", xname, fm.s, name));
      // The contraction's target loops cover S; its other loops are the reduced ones.
      std::set<std::string> target;
      for (const auto& raw : nest.store->indices) {
        const Index i = raw.canonical();
        if (i.is_fixed()) continue;
        if (!i.is_plain_iterator()) return fail(fmt::format("{} is stored at a non-plain index", name));
        const NestLoop* l = nest.loop(i.terms[0].sym);
        if (!l || !target.insert(l->sym).second)
          return fail(fmt::format("{} is stored at a non-plain index", name));
      }
      for (std::size_t a = 0; a < nest.store->indices.size(); ++a) {
        const Index i = nest.store->indices[a].canonical();
        if (i.is_fixed()
                ? (n->dims[a] != 1 || i.offset != 0)
                : (nest.loop(i.terms[0].sym)->from != 0 || nest.loop(i.terms[0].sym)->to != n->dims[a] - 1))
          return fail(fmt::format("the contraction into {} does not write every cell of it", name));
      }
      for (const auto& l : nest.loops)
        if (l.dead())
          return fail(fmt::format("loop {} of the contraction into {} runs zero times", l.sym, name));
      fm.s = name;
      fm.s_zero = ws[0];
      fm.s_pos = ws[1];
      fm.score_nest = &nest;
      fm.s_prec = n->prec;
      continue;
    }
    auto def = view.definition(name);
    if (!def)
      return fail(
          fmt::format("{} in the chain of the scores {} is not defined once, pointwise", name, xname));
    const Nest& nest = *view.line(*def).nest;
    if (!stores_whole(nest, *n))
      return fail(fmt::format("{} ({}) does not store every cell of {} one per iteration", name,
                              pos_text(*def), name));
    fm.chain.push_back(*def);
    fm.chain_nests.push_back(&nest);
    std::vector<const Expr*> gets;
    collect_gets(nest.store->value, gets);
    for (const Expr* g : gets) {
      const Node* r = view.node(g->name);
      if (!r) continue;
      if (r->dims == x->dims && (view.definition(g->name) || view.writers(g->name).size() == 2) &&
          !r->is_input) {
        if (!reads_at_store(*g, nest))
          return fail(fmt::format("{} reads {} at another cell than the one it defines", name, g->name));
        todo.push_back(g->name);
      }
    }
  }
  if (fm.s.empty()) return fail(fmt::format("the chain of the scores {} reaches no contraction", xname));
  return fm;
}

}  // namespace fp::osm
