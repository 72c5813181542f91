// The compiled executors' plan (exec/program_plan.h).

#include "exec/program_plan.h"

#include <algorithm>

#include "core/diagnostic.h"
#include "core/ir_visit.h"

namespace fp {

namespace {

bool reads_node(const ExprP& e, std::string_view node) {
  if (!e) return false;
  if (e->kind == ExprKind::Get && e->name == node) return true;
  for (const auto& a : e->args)
    if (reads_node(a, node)) return true;
  return false;
}

// Every read of `node` in `e` is at exactly `idx` (canonical forms equal).
bool reads_only_at(const ExprP& e, std::string_view node, const std::vector<Index>& idx) {
  if (!e) return true;
  if (e->kind == ExprKind::Get && e->name == node) {
    if (e->indices.size() != idx.size()) return false;
    for (std::size_t a = 0; a < idx.size(); ++a)
      if (!(e->indices[a].canonical() == idx[a].canonical())) return false;
  }
  for (const auto& a : e->args)
    if (!reads_only_at(a, node, idx)) return false;
  return true;
}

void collect_writes(const Stmt& s, std::set<std::string>& out) {
  if (s.kind == StmtKind::Set || s.kind == StmtKind::Zero) out.insert(s.name);
  for (const auto& b : s.body)
    if (b) collect_writes(*b, out);
}

// A nest storing one constant to every cell of `n` (a fill), with its value.
std::optional<ExprP> constant_fill(const Stmt& s, const Node& n) {
  std::optional<Nest> nest = as_nest(s);
  if (!nest || nest->set->name != n.name || !nest->set->value || nest->set->value->kind != ExprKind::Const)
    return std::nullopt;
  std::optional<NestShape> shape = nest_shape(s);
  if (!shape || !shape->reduced.empty()) return std::nullopt;
  return nest->set->value;
}

}  // namespace

std::set<std::string> written_nodes(const Stmt& s) {
  std::set<std::string> out;
  collect_writes(s, out);
  return out;
}

std::optional<NestShape> nest_shape(const Stmt& s) {
  std::optional<Nest> nest = as_nest(s);
  if (!nest) return std::nullopt;
  NestShape shape;
  shape.nest = *nest;
  const Stmt& set = *nest->set;
  std::vector<int> axis_of(nest->loops.size(), -1);
  for (std::size_t a = 0; a < set.indices.size(); ++a) {
    const Index idx = set.indices[a].canonical();
    if (idx.is_fixed()) continue;
    if (!idx.is_plain_iterator()) return std::nullopt;
    bool found = false;
    for (std::size_t l = 0; l < nest->loops.size(); ++l) {
      if (nest->loops[l]->sym != idx.terms[0].sym) continue;
      if (axis_of[l] >= 0) return std::nullopt;  // one loop serving two axes
      axis_of[l] = static_cast<int>(a);
      found = true;
    }
    if (!found) return std::nullopt;
  }
  for (std::size_t l = 0; l < nest->loops.size(); ++l) {
    if (nest->loops[l]->is_dead_loop()) return std::nullopt;
    if (axis_of[l] >= 0) {
      shape.target.push_back(nest->loops[l]);
      shape.target_axis.push_back(axis_of[l]);
    } else {
      shape.reduced.push_back(nest->loops[l]);
    }
  }
  if (!reads_only_at(set.value, set.name, set.indices)) return std::nullopt;
  shape.self_read = reads_node(set.value, set.name);
  return shape;
}

const Node& ProgramPlan::node(std::string_view name) const {
  auto it = node_index.find(name);
  FP_INTERNAL_CHECK(it != node_index.end(), "unknown node '{}'", name);
  return placed.nodes[static_cast<std::size_t>(it->second)];
}

int ProgramPlan::position_of(const Stmt* s) const {
  auto it = position_.find(s);
  return it == position_.end() ? -1 : it->second;
}

std::vector<int> ProgramPlan::starting_at(int p) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < span.size(); ++i)
    if (span[i].first == p) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> ProgramPlan::ending_at(int p) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < span.size(); ++i)
    if (span[i].first >= 0 && span[i].last == p) out.push_back(static_cast<int>(i));
  return out;
}

bool ProgramPlan::overwritten_first(int i) const {
  const Node& n = placed.nodes[static_cast<std::size_t>(i)];
  const int pos = span[static_cast<std::size_t>(i)].first;
  if (pos < 0 || static_cast<std::size_t>(pos) >= top.size() || n.is_input) return false;
  const Stmt& s = *top[static_cast<std::size_t>(pos)];
  if (s.kind == StmtKind::Zero) return s.name == n.name;
  std::optional<NestShape> shape = nest_shape(s);
  if (!shape || shape->nest.set->name != n.name || shape->self_read || !shape->reduced.empty()) return false;
  std::vector<bool> covered(n.dims.size(), false);
  for (std::size_t k = 0; k < shape->target.size(); ++k) {
    const Stmt* l = shape->target[k];
    const auto axis = static_cast<std::size_t>(shape->target_axis[k]);
    if (l->from != 0 || l->to != n.dims[axis] - 1) return false;
    covered[axis] = true;
  }
  for (std::size_t a = 0; a < n.dims.size(); ++a)
    if (!covered[a] && n.dims[a] != 1) return false;
  return true;
}

const std::set<std::string>& ProgramPlan::replay_reads(const std::string& name) const {
  return replay_reads_.at(name);
}

ProgramPlan make_plan(const Routine& r, const PlacementConfig& cfg) {
  ProgramPlan plan;
  plan.placed = place(r, cfg).routine;
  const Routine& pr = plan.placed;
  for (std::size_t i = 0; i < pr.nodes.size(); ++i) plan.node_index[pr.nodes[i].name] = static_cast<int>(i);
  AccessCensus census(pr);
  plan.top = census.top_level();
  for (std::size_t p = 0; p < plan.top.size(); ++p) plan.position_[plan.top[p]] = static_cast<int>(p);

  // Virtual definitions (placement guarantees one of the two shapes).
  for (const Node& n : pr.nodes) {
    // Inputs and outputs are always stored (the caller binds or reads them), whatever their mode.
    if (n.mode != MemMode::Virtual || n.is_input || n.is_output) continue;
    std::vector<std::size_t> writers = census.writer_positions(n.name);
    VirtualDef def;
    if (writers.size() == 1) {
      std::optional<NestShape> shape = nest_shape(*plan.top[writers[0]]);
      FP_INTERNAL_CHECK(
          shape && shape->reduced.empty() && !shape->self_read && shape->nest.set->name == n.name,
          "virtual node '{}' has no pointwise definition (placement's contract)", n.name);
      def.kind = VirtualDef::Kind::Pointwise;
      def.nest = shape->nest;
    } else {
      FP_INTERNAL_CHECK(writers.size() == 2, "virtual node '{}' has {} writers (placement's contract)",
                        n.name, writers.size());
      const Stmt& fill = *plan.top[writers[0]];
      std::optional<NestShape> acc = nest_shape(*plan.top[writers[1]]);
      FP_INTERNAL_CHECK(acc && acc->self_read && acc->nest.set->name == n.name,
                        "virtual node '{}' has no accumulating definition (placement's contract)", n.name);
      def.kind = VirtualDef::Kind::Reduction;
      def.nest = acc->nest;
      if (fill.kind == StmtKind::Zero) {
        FP_INTERNAL_CHECK(fill.name == n.name, "virtual node '{}': bad fill", n.name);
      } else {
        std::optional<ExprP> v = constant_fill(fill, n);
        FP_INTERNAL_CHECK(v.has_value(), "virtual node '{}' has no fill (placement's contract)", n.name);
        def.fill_value = *v;
      }
    }
    plan.virtuals.emplace(n.name, std::move(def));
  }

  // Replay reads (memoized, transitive through virtual nodes).
  std::function<const std::set<std::string>&(const std::string&)> replay =
      [&](const std::string& v) -> const std::set<std::string>& {
    auto it = plan.replay_reads_.find(v);
    if (it != plan.replay_reads_.end()) return it->second;
    std::set<std::string> out;
    plan.replay_reads_[v];  // a cycle (impossible after placement) contributes nothing twice
    for (std::size_t pos : census.writer_positions(v))
      for (const Access* a : census.at(pos)) {
        if (a->is_write() || a->node == v) continue;
        if (plan.virtuals.count(a->node)) {
          const auto& via = replay(a->node);
          out.insert(via.begin(), via.end());
        } else {
          out.insert(a->node);
        }
      }
    return plan.replay_reads_[v] = std::move(out);
  };
  for (const auto& [name, def] : plan.virtuals) replay(name);

  // Replayed positions and buffer spans: the memory report's rules.
  plan.replayed.assign(plan.top.size(), false);
  for (std::size_t p = 0; p < plan.top.size(); ++p) {
    bool wrote = false, only_virtual = true;
    for (const Access* a : census.at(p)) {
      if (!a->is_write()) continue;
      wrote = true;
      if (!plan.virtuals.count(a->node)) only_virtual = false;
    }
    plan.replayed[p] = wrote && only_virtual;
  }
  plan.span.assign(pr.nodes.size(), BufferSpan{});
  auto touch = [&](const std::string& name, int pos) {
    BufferSpan& s = plan.span[static_cast<std::size_t>(plan.node_index.at(name))];
    if (s.first < 0) {
      s.first = s.last = pos;
    } else {
      s.first = std::min(s.first, pos);
      s.last = std::max(s.last, pos);
    }
  };
  for (std::size_t p = 0; p < plan.top.size(); ++p) {
    if (plan.replayed[p]) continue;
    for (const Access* a : census.at(p)) {
      if (plan.virtuals.count(a->node)) {
        if (!a->is_write())
          for (const auto& via : plan.replay_reads_.at(a->node)) touch(via, static_cast<int>(p));
      } else {
        touch(a->node, static_cast<int>(p));
      }
    }
  }
  const int n_pos = std::max<int>(static_cast<int>(plan.top.size()), 1);
  for (const Node& n : pr.nodes) {
    if (plan.virtuals.count(n.name)) continue;
    if (n.is_input) touch(n.name, 0);
    if (n.is_output) touch(n.name, n_pos - 1);
  }
  for (const Stmt* s : plan.top)
    if (s->kind == StmtKind::DeclareLocal) plan.top_level_locals = true;
  plan.report = memory_report(pr);
  return plan;
}

}  // namespace fp
