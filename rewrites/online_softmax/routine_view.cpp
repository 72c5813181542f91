#include "rewrites/online_softmax/routine_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/ir_visit.h"
#include "core/text_printer.h"

namespace fp::osm {

const NestLoop* Nest::loop(const std::string& sym) const {
  for (const auto& l : loops)
    if (l.sym == sym) return &l;
  return nullptr;
}

std::string read_text(const std::string& node, const std::vector<Index>& idx) {
  std::string s = node + "[";
  for (std::size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + print_index(idx[i]);
  return s + "]";
}

std::string cells_text(const std::string& node, const std::vector<Index>& idx, const std::vector<NestLoop>& loops) {
  std::string ranges;
  for (const auto& l : loops) {
    bool used = false;
    for (const auto& i : idx) used = used || i.mentions(l.sym);
    if (used) ranges += fmt::format("{}{} in {}..{}", ranges.empty() ? "" : ", ", l.sym, l.from, l.to);
  }
  const std::string cells = read_text(node, idx);
  return ranges.empty() ? cells : cells + " for " + ranges;
}

std::optional<Nest> nest_of(const Stmt& s) {
  Nest n;
  const Stmt* cur = &s;
  while (cur->kind == StmtKind::For) {
    if (cur->body.size() != 1) return std::nullopt;
    n.loops.push_back(NestLoop{cur->sym, cur->from, cur->to});
    cur = cur->body[0].get();
  }
  if (cur->kind != StmtKind::Set) return std::nullopt;
  n.store = cur;
  return n;
}

namespace {

bool reads_node(const ExprP& e, const std::string& node) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (x.kind == ExprKind::Get && x.name == node) found = true;
  });
  return found;
}

bool is_self_read(const ExprP& e, const Stmt& store) {
  return e && e->kind == ExprKind::Get && e->name == store.name && e->indices == store.indices;
}

}  // namespace

std::optional<Reduction> reduction_of(const Nest& n) {
  const Stmt& s = *n.store;
  const ExprP& v = s.value;
  if (!v || v->kind != ExprKind::Binary) return std::nullopt;
  Reduction r;
  r.op = v->binop();
  r.prec = v->prec;
  if (is_self_read(v->args[0], s)) {
    r.target_first = true;
    r.other = v->args[1];
  } else if ((r.op == BinOp::Add || r.op == BinOp::Max) && is_self_read(v->args[1], s)) {
    r.target_first = false;
    r.other = v->args[0];
  } else {
    return std::nullopt;
  }
  if (reads_node(r.other, s.name)) return std::nullopt;
  return r;
}

std::string pos_text(int pos) { return fmt::format("statement {}", pos + 1); }

bool is_pointwise(const Nest& n) {
  return !reads_node(n.store->value, n.store->name);
}

// Plain iterator of the nest at every axis (fixed allowed on unit axes), no symbol twice, all
// loops used: a store that writes one cell per iteration and every cell of `node`.
bool stores_whole(const Nest& nest, const Node& node) {
  std::set<std::string> seen;
  for (std::size_t a = 0; a < nest.store->indices.size(); ++a) {
    const Index i = nest.store->indices[a].canonical();
    if (i.is_fixed()) {
      if (node.dims[a] != 1 || i.offset != 0) return false;
      continue;
    }
    if (!i.is_plain_iterator()) return false;
    const NestLoop* l = nest.loop(i.terms[0].sym);
    if (!l || l->from != 0 || l->to != node.dims[a] - 1 || !seen.insert(l->sym).second) return false;
  }
  return seen.size() == nest.loops.size();
}

// A read of `node` at exactly the cell the nest stores.
bool reads_at_store(const Expr& g, const Nest& nest) {
  if (g.indices.size() != nest.store->indices.size()) return false;
  for (std::size_t a = 0; a < g.indices.size(); ++a)
    if (!(g.indices[a].canonical() == nest.store->indices[a].canonical())) return false;
  return true;
}

void collect_gets(const ExprP& e, std::vector<const Expr*>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Get) out.push_back(e.get());
  for (const auto& a : e->args) collect_gets(a, out);
}


namespace {

// Direct recursion (no std::function): the census runs over every statement of every round.
void census_expr(const Expr& e, std::set<std::string>& reads) {
  if (e.kind == ExprKind::Get) reads.insert(e.name);
  for (const auto& a : e.args) census_expr(*a, reads);
}

void census_stmt(const Stmt& s, Line& line) {
  if (s.kind == StmtKind::Set || s.kind == StmtKind::Zero) line.writes.insert(s.name);
  if (s.value) census_expr(*s.value, line.reads);
  for (const auto& c : s.carried)
    if (c.init) census_expr(*c.init, line.reads);
  for (const auto& b : s.body) census_stmt(*b, line);
}

}  // namespace

RoutineView::RoutineView(const Routine& r) : routine_(&r) {
  nodes_.reserve(r.nodes.size());
  for (const auto& n : r.nodes) nodes_.emplace(n.name, &n);
  // Flatten top-level sequences in program order.
  auto flatten = [&](auto&& self, const StmtP& s) -> void {
    if (s->kind == StmtKind::Seq) {
      for (const auto& b : s->body) self(self, b);
      return;
    }
    Line line;
    line.stmt = s;
    line.nest = nest_of(*s);
    census_stmt(*s, line);
    lines_.push_back(std::move(line));
  };
  if (r.body) flatten(flatten, r.body);
  for (int i = 0; i < size(); ++i) {
    for (const auto& w : lines_[static_cast<std::size_t>(i)].writes) writers_[w].push_back(i);
    for (const auto& rd : lines_[static_cast<std::size_t>(i)].reads) readers_[rd].push_back(i);
  }
}

const Node* RoutineView::node(const std::string& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second;
}

const std::vector<int>& RoutineView::writers(const std::string& node) const {
  static const std::vector<int> none;
  auto it = writers_.find(node);
  return it == writers_.end() ? none : it->second;
}

const std::vector<int>& RoutineView::readers(const std::string& node) const {
  static const std::vector<int> none;
  auto it = readers_.find(node);
  return it == readers_.end() ? none : it->second;
}

int RoutineView::read_between(const std::string& node, int lo, int hi) const {
  for (int p : readers(node))
    if (p > lo && p < hi) return p;
  return -1;
}

int RoutineView::write_after(const std::string& node, int pos) const {
  for (int p : writers(node))
    if (p > pos) return p;
  return -1;
}

std::optional<int> RoutineView::definition(const std::string& node) const {
  const auto& w = writers(node);
  if (w.size() != 1) return std::nullopt;
  const Line& l = line(w[0]);
  if (!l.nest || l.nest->store->name != node || !is_pointwise(*l.nest)) return std::nullopt;
  return w[0];
}

Routine RoutineView::rebuild(const std::map<int, std::vector<StmtP>>& replacements) const {
  int counter = 0;
  auto rebuild_seq = [&](auto&& self, const StmtP& s) -> StmtP {
    std::vector<StmtP> body;
    bool changed = false;
    for (const auto& b : s->body) {
      if (b->kind == StmtKind::Seq) {
        StmtP nb = self(self, b);
        changed = changed || nb != b;
        body.push_back(nb);
        continue;
      }
      auto it = replacements.find(counter++);
      if (it == replacements.end()) {
        body.push_back(b);
      } else {
        changed = true;
        for (const auto& x : it->second) body.push_back(x);
      }
    }
    if (!changed) return s;
    Stmt copy = *s;
    copy.body = std::move(body);
    return std::make_shared<const Stmt>(std::move(copy));
  };
  Routine out = *routine_;
  if (out.body && out.body->kind == StmtKind::Seq) out.body = rebuild_seq(rebuild_seq, out.body);
  return out;
}

}  // namespace fp::osm
