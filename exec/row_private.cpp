// Row-private nodes (exec/row_private.h).

#include "exec/row_private.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "core/ir_visit.h"

namespace fp::codegen {
namespace {

// One access to a node: a read or a store (its indices), or a `zero` (no indices).
struct Access {
  const std::vector<Index>* indices = nullptr;
  bool zero = false;
};
using AccessMap = std::map<std::string, std::vector<Access>>;

// Every access inside `s`, and the symbols of the loops and scans below `s`'s leading `depth`
// loops (those must not rebind a row symbol).
void collect(const Stmt& s, AccessMap& out, std::multiset<std::string>& bound) {
  std::function<void(const Stmt&)> walk = [&](const Stmt& t) {
    if (t.kind == StmtKind::For || t.kind == StmtKind::Scan) bound.insert(t.sym);
    if (t.kind == StmtKind::Set) out[t.name].push_back({&t.indices, false});
    if (t.kind == StmtKind::Zero) out[t.name].push_back({nullptr, true});
    for_each_own_expr(t, [&](const ExprP& e) {
      for_each_expr(e, [&](const Expr& x) {
        if (x.kind == ExprKind::Get) out[x.name].push_back({&x.indices, false});
      });
    });
    for (const auto& b : t.body)
      if (b) walk(*b);
  };
  walk(s);
}

// The axis every access indexes with `sym`'s plain iterator (the lowest when several), or -1.
int common_axis(const std::vector<Access>& accesses, const std::string& sym) {
  std::set<std::size_t> axes;
  bool first = true;
  for (const Access& a : accesses) {
    if (a.zero) return -1;
    std::set<std::size_t> mine;
    for (std::size_t k = 0; k < a.indices->size(); ++k) {
      const Index c = (*a.indices)[k].canonical();
      if (c.is_plain_iterator() && c.terms[0].sym == sym) mine.insert(k);
    }
    if (first) {
      axes = std::move(mine);
      first = false;
      continue;
    }
    std::set<std::size_t> both;
    for (std::size_t k : axes)
      if (mine.count(k)) both.insert(k);
    axes = std::move(both);
  }
  return axes.empty() ? -1 : static_cast<int>(*axes.begin());
}

bool eligible_kind(const ProgramPlan& plan, const Node& n) {
  return !n.is_input && !n.is_output && n.mode != MemMode::Requested && n.mode != MemMode::Virtual &&
         !plan.is_virtual(n.name);
}

}  // namespace

std::int64_t slice_cells(const Node& n, const RowPrivateNode& r) {
  std::int64_t cells = 1;
  for (std::size_t a = 0; a < n.dims.size(); ++a)
    if (std::find(r.axis.begin(), r.axis.end(), a) == r.axis.end()) cells *= n.dims[a];
  return cells;
}

std::vector<RowPrivateNode> row_private_nodes(const ProgramPlan& plan, int position,
                                              const std::vector<const Stmt*>& rows) {
  if (rows.empty() || position < 0 || static_cast<std::size_t>(position) >= plan.top.size() ||
      plan.replayed[static_cast<std::size_t>(position)] || rows.front() != plan.top[static_cast<std::size_t>(position)])
    return {};
  // Accesses in P, and the nodes touched anywhere else (other statements, virtual replays).
  AccessMap in_p;
  std::multiset<std::string> bound;
  collect(*rows.front(), in_p, bound);
  std::set<std::string> elsewhere;
  for (std::size_t q = 0; q < plan.top.size(); ++q) {
    if (static_cast<int>(q) == position) continue;
    AccessMap other;
    std::multiset<std::string> ignored;
    collect(*plan.top[q], other, ignored);
    for (const auto& [name, list] : other) elsewhere.insert(name);
  }
  for (const auto& [name, def] : plan.virtuals)
    for (const std::string& r : plan.replay_reads(name)) elsewhere.insert(r);
  // A row symbol bound again below the rows (each row loop binds its own once).
  for (const Stmt* l : rows)
    if (bound.count(l->sym) != 1) return {};

  std::vector<RowPrivateNode> out;
  for (std::size_t i = 0; i < plan.placed.nodes.size(); ++i) {
    const Node& n = plan.placed.nodes[i];
    auto it = in_p.find(n.name);
    if (it == in_p.end() || elsewhere.count(n.name) || !eligible_kind(plan, n)) continue;
    RowPrivateNode r{static_cast<int>(i), {}};
    for (const Stmt* l : rows) {
      const int a = common_axis(it->second, l->sym);
      if (a < 0) break;
      r.axis.push_back(static_cast<std::size_t>(a));
    }
    if (r.axis.size() == rows.size()) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fp::codegen
