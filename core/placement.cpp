// Placement (core/placement.h, rules in docs/placement.md). Two phases:
//  1. Shape: from the access census, each candidate node either has a replayable definition — one
//     pointwise nest, or a fill and one accumulating nest — with every read after it, or is stored
//     with the reason it has none. This phase does not depend on any other node's decision.
//  2. Cost: candidates are decided readers-first (decreasing position of their definition), so
//     when a node is decided, every place its value is needed — read directly, or replayed inside
//     a recomputed reader's definition — is already known: its read sites, each a top-level
//     statement with how many times per cell that statement needs the value.

#include "core/placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/access_census.h"

namespace fp {

namespace {

constexpr std::int64_t kMany = std::numeric_limits<std::int64_t>::max();
constexpr int kCheapOps = 4;

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return a > kMany - b ? kMany : a + b;
}

// Top-level statements are numbered from 1 in messages.
std::string stmt_no(std::size_t pos) {
  return fmt::format("{}", pos + 1);
}

// A definition placement can replay at a read: the value of every cell follows from it alone.
struct Definition {
  enum class Shape { Pointwise, Reduction };
  Shape shape = Shape::Pointwise;
  std::size_t last = 0;             // position of the nest giving the final value
  const Expr* self_read = nullptr;  // Reduction: the accumulator read n[i] in n[i] = op(n[i], rhs)
  std::int64_t reduced_trip = 0;    // Reduction: product of extents of loops not indexing the target
  // Pointwise: cost of one replay.
  int ops = 0;
  std::string expensive_op;  // first op outside the trivially cheap set, if any
  // Nodes the definition reads (the accumulator excluded), each with its per-cell multiplicity
  // within the definition.
  std::vector<std::pair<std::string, std::int64_t>> reads;
};

// How a nest's target indices relate to its loops: a full cover visits each cell, and a loop not
// used by the target repeats every write (a reduced loop, for an accumulation).
struct Cover {
  bool full = false;
  std::string why_not;
  std::vector<const Stmt*> other_loops;
};

Cover target_cover(const Node& n, const Nest& nest) {
  Cover c;
  std::set<std::string> used;
  const auto& idx = nest.set->indices;
  for (std::size_t a = 0; a < idx.size() && a < n.dims.size(); ++a) {
    Index i = idx[a].canonical();
    if (i.is_fixed() && i.offset == 0 && n.dims[a] == 1) continue;
    const Stmt* loop = nullptr;
    if (i.is_plain_iterator())
      for (const Stmt* l : nest.loops)
        if (l->sym == i.terms[0].sym) loop = l;
    if (!loop || used.count(loop->sym) || loop->from != 0 || loop->to != n.dims[a] - 1) {
      c.why_not = fmt::format("its axis {} is not one full loop over 0..{}", a, n.dims[a] - 1);
      return c;
    }
    used.insert(loop->sym);
  }
  for (const Stmt* l : nest.loops)
    if (!used.count(l->sym)) c.other_loops.push_back(l);
  c.full = true;
  return c;
}

bool reads_node(const ExprP& e, const std::string& node) {
  if (!e) return false;
  if (e->kind == ExprKind::Get && e->name == node) return true;
  return std::any_of(e->args.begin(), e->args.end(), [&](const ExprP& a) { return reads_node(a, node); });
}

const Expr* first_local_read(const ExprP& e) {
  if (!e) return nullptr;
  if (e->kind == ExprKind::GetLocal) return e.get();
  for (const auto& a : e->args)
    if (const Expr* l = first_local_read(a)) return l;
  return nullptr;
}

// Operation count and the first operation that is not trivially cheap.
void measure(const ExprP& e, int& ops, std::string& expensive) {
  if (!e) return;
  const char* name = nullptr;
  bool cheap = true;
  if (e->kind == ExprKind::Unary) {
    name = unop_name(e->unop());
    cheap = e->unop() != UnOp::Exp && e->unop() != UnOp::Sqrt;
  } else if (e->kind == ExprKind::Binary) {
    name = binop_name(e->binop());
    cheap = e->binop() != BinOp::Div && e->binop() != BinOp::Pow;
  } else if (e->kind == ExprKind::Ternary) {
    name = ternop_name(e->ternop());
    cheap = e->ternop() != TernOp::Fma;
  }
  if (name) ++ops;
  if (!cheap && expensive.empty()) expensive = name;
  for (const auto& a : e->args) measure(a, ops, expensive);
}

// A reduction step n[i] = op(n[i], rhs) or op(rhs, n[i]), op add or max, rhs not reading n.
const Expr* accumulator_read(const Stmt& set) {
  const ExprP& v = set.value;
  if (!v || v->kind != ExprKind::Binary || v->args.size() != 2) return nullptr;
  if (v->binop() != BinOp::Add && v->binop() != BinOp::Max) return nullptr;
  auto is_self = [&](const ExprP& e) {
    if (!e || e->kind != ExprKind::Get || e->name != set.name || e->indices.size() != set.indices.size())
      return false;
    for (std::size_t a = 0; a < e->indices.size(); ++a)
      if (!(e->indices[a].canonical() == set.indices[a].canonical())) return false;
    return true;
  };
  for (int k = 0; k < 2; ++k)
    if (is_self(v->args[k]) && !reads_node(v->args[1 - k], set.name)) return v->args[k].get();
  return nullptr;
}

class Placer {
 public:
  Placer(const Routine& r, const PlacementConfig& cfg) : r_(r), cfg_(cfg), census_(r) {}

  PlacementResult run() {
    std::map<std::string, std::string> reasons;
    std::map<std::string, MemMode> modes;
    std::map<std::string, Definition> defs;
    for (const Node& n : r_.nodes) {
      if (auto fixed = fixed_reason(n)) {
        reasons[n.name] = *fixed;
        modes[n.name] = n.mode;
        continue;
      }
      std::string why;
      if (auto d = definition(n, why))
        defs.emplace(n.name, std::move(*d));
      else {
        reasons[n.name] = why;
        modes[n.name] = MemMode::Materialized;
      }
    }
    seed_sites(defs);

    std::vector<std::pair<std::size_t, std::string>> order;
    for (const auto& [name, d] : defs) order.emplace_back(d.last, name);
    std::sort(order.rbegin(), order.rend());  // readers first: a reader's definition comes later
    for (const auto& [pos, name] : order) {
      const Definition& d = defs.at(name);
      bool recompute = decide(name, d, reasons[name]);
      modes[name] = recompute ? MemMode::Virtual : MemMode::Materialized;
      propagate(name, d, recompute);
    }

    PlacementResult out{r_, {}};
    for (Node& n : out.routine.nodes) {
      n.mode = modes.at(n.name);
      out.decisions.push_back({n.name, n.mode, reasons.at(n.name)});
    }
    return out;
  }

 private:
  // Nodes placement never moves.
  std::optional<std::string> fixed_reason(const Node& n) const {
    if (n.is_input) return std::string("input: the caller binds its buffer");
    if (n.is_output) return std::string("output: the caller reads its buffer");
    if (n.mode == MemMode::Requested) return std::string("requested: kept stored as asked");
    if (n.mode == MemMode::Local) return std::string("local: routine scratch, placed by its producer");
    return std::nullopt;
  }

  // ---- phase 1: shape -------------------------------------------------------------------------

  std::optional<Definition> definition(const Node& n, std::string& why) const {
    auto writes = census_.writes_of(n.name);
    if (writes.empty()) return fail(why, "never written (its cells stay 0): kept stored");
    for (const Access* w : writes) {
      if (w->scan_bodies > 0)
        return fail(why,
                    fmt::format("written inside a scan body (statement {}): a recurrence is never replayed",
                                stmt_no(w->top)));
      if (w->guards > 0)
        return fail(
            why, fmt::format("written inside an 'if' (statement {}): a conditional write is not a definition",
                             stmt_no(w->top)));
    }
    auto pos = census_.writer_positions(n.name);
    std::optional<Definition> d;
    if (pos.size() == 1)
      d = pointwise(n, pos[0], why);
    else if (pos.size() == 2)
      d = reduction(n, pos[0], pos[1], why);
    else
      return fail(
          why, fmt::format("written by {} statements ({}): not one definition", pos.size(), positions(pos)));
    if (!d) return d;
    if (!reads_after(n, *d, why)) return std::nullopt;
    const Stmt& last = *census_.top_level()[d->last];
    if (const Expr* l = first_local_read(as_nest(last)->set->value))
      return fail(why, fmt::format("its definition (statement {}) reads scalar local '{}'", stmt_no(d->last),
                                   l->name));
    for (const Access* a : census_.at(d->last))
      if (!a->is_write() && a->get != d->self_read) d->reads.emplace_back(a->node, a->per_cell);
    return d;
  }

  static std::optional<Definition> fail(std::string& why, std::string reason) {
    why = std::move(reason);
    return std::nullopt;
  }

  static std::string positions(const std::vector<std::size_t>& pos) {
    std::vector<std::string> s;
    for (auto p : pos) s.push_back(stmt_no(p));
    return fmt::format("statements {}", fmt::join(s, ", "));
  }

  std::optional<Nest> plain_nest(std::size_t pos, std::string& why) const {
    auto nest = as_nest(*census_.top_level()[pos]);
    if (!nest)
      why = fmt::format(
          "written by statement {}, which is not a plain nest (for loops around one set; no locals, "
          "guards, scans or several statements)",
          stmt_no(pos));
    return nest;
  }

  std::optional<Definition> pointwise(const Node& n, std::size_t pos, std::string& why) const {
    auto nest = plain_nest(pos, why);
    if (!nest) return std::nullopt;
    Cover c = target_cover(n, *nest);
    if (!c.full)
      return fail(why,
                  fmt::format("statement {} does not write every cell once: {}", stmt_no(pos), c.why_not));
    if (reads_node(nest->set->value, n.name))
      return fail(why,
                  accumulator_read(*nest->set)
                      ? fmt::format("statement {} accumulates into it without a preceding fill", stmt_no(pos))
                      : fmt::format("statement {} reads the node it writes", stmt_no(pos)));
    if (!c.other_loops.empty())
      return fail(why, fmt::format("statement {} writes each cell again on every iteration of 'for {}'",
                                   stmt_no(pos), c.other_loops.front()->sym));
    Definition d;
    d.shape = Definition::Shape::Pointwise;
    d.last = pos;
    measure(nest->set->value, d.ops, d.expensive_op);
    return d;
  }

  std::optional<Definition> reduction(const Node& n, std::size_t fill, std::size_t acc,
                                      std::string& why) const {
    if (!is_fill(n, fill))
      return fail(
          why,
          fmt::format("written by statements {} and {}, and statement {} is not a whole-node fill (zero, "
                      "or one constant stored to every cell)",
                      stmt_no(fill), stmt_no(acc), stmt_no(fill)));
    auto nest = plain_nest(acc, why);
    if (!nest) return std::nullopt;
    const Expr* self = accumulator_read(*nest->set);
    if (!self)
      return fail(
          why,
          fmt::format("statement {} is not an accumulation n[i] = add/max(n[i], rhs) with rhs not reading "
                      "'{}'",
                      stmt_no(acc), n.name));
    Cover c = target_cover(n, *nest);
    if (!c.full)
      return fail(why, fmt::format("the accumulation (statement {}) does not cover every cell: {}",
                                   stmt_no(acc), c.why_not));
    Definition d;
    d.shape = Definition::Shape::Reduction;
    d.last = acc;
    d.self_read = self;
    d.reduced_trip = 1;
    for (const Stmt* l : c.other_loops) {
      EnclosingLoop el{l, l->sym, l->from, l->to, false};
      if (el.extent() == 0)
        return fail(why, fmt::format("the accumulation (statement {}) has a dead loop 'for {}'", stmt_no(acc),
                                     l->sym));
      d.reduced_trip = saturating_mul(d.reduced_trip, el.extent());
    }
    return d;
  }

  bool is_fill(const Node& n, std::size_t pos) const {
    const Stmt& s = *census_.top_level()[pos];
    if (s.kind == StmtKind::Zero) return true;
    auto nest = as_nest(s);
    if (!nest || !nest->set->value || nest->set->value->kind != ExprKind::Const) return false;
    Cover c = target_cover(n, *nest);
    return c.full && c.other_loops.empty();
  }

  // A replayed definition must be complete before anything reads the node: a read before it (or
  // between a fill and its accumulation) sees a value that replaying would not give.
  bool reads_after(const Node& n, const Definition& d, std::string& why) const {
    for (const Access* r : census_.reads_of(n.name)) {
      if (r->top > d.last || r->get == d.self_read) continue;
      why = fmt::format("read at statement {}, before its definition is complete (statement {})",
                        stmt_no(r->top), stmt_no(d.last));
      return false;
    }
    return true;
  }

  // ---- phase 2: cost --------------------------------------------------------------------------

  // Reads in statements that are not a candidate's definition are read sites as they stand.
  void seed_sites(const std::map<std::string, Definition>& defs) {
    std::set<std::size_t> owned;
    for (const auto& [name, d] : defs) owned.insert(d.last);
    for (const Access& a : census_.accesses())
      if (!a.is_write() && !owned.count(a.top)) add_site(a.node, a.top, a.per_cell);
  }

  void add_site(const std::string& node, std::size_t pos, std::int64_t per_cell) {
    if (per_cell == 0) return;  // under a dead loop: never runs
    auto& m = sites_[node][pos];
    m = saturating_add(m, per_cell);
  }

  // Decides one candidate whose read sites are all known; true to recompute it.
  bool decide(const std::string& name, const Definition& d, std::string& reason) const {
    auto it = sites_.find(name);
    std::map<std::size_t, std::int64_t> sites;
    if (it != sites_.end()) sites = it->second;
    if (sites.empty()) {
      reason = "never read: dead code stays stored (placement deletes no computation)";
      return false;
    }
    if (auto stale = stale_input(d, sites.rbegin()->first)) {
      reason = *stale;
      return false;
    }
    std::vector<std::size_t> where;
    std::int64_t most = 0;
    for (const auto& [pos, per_cell] : sites) {
      where.push_back(pos);
      most = std::max(most, per_cell);
    }
    std::string at = sites.size() == 1 ? fmt::format("statement {}", stmt_no(where[0])) : positions(where);
    if (d.shape == Definition::Shape::Reduction) return decide_reduction(d, sites.size(), at, reason);

    if (sites.size() == 1 && most == 1) {
      reason = fmt::format("pointwise, read once per cell at one site ({}): recomputed there", at);
      return true;
    }
    std::string reads = sites.size() > 1 ? fmt::format("read at {} sites ({})", sites.size(), at)
                                         : fmt::format("read {} times per cell at {}", most, at);
    if (d.expensive_op.empty() && d.ops <= kCheapOps) {
      reason = fmt::format("{}, but trivially cheap ({} operation{}): recomputed at every site", reads, d.ops,
                           d.ops == 1 ? "" : "s");
      return true;
    }
    reason = fmt::format("{}, and not trivially cheap ({})", reads,
                         d.expensive_op.empty() ? fmt::format("{} operations > {}", d.ops, kCheapOps)
                                                : fmt::format("uses {}", d.expensive_op));
    return false;
  }

  bool decide_reduction(const Definition& d, std::size_t site_count, const std::string& at,
                        std::string& reason) const {
    if (cfg_.max_inline_reduction < 0) {
      reason = fmt::format(
          "reduction over {} iterations; recomputing reductions is disabled "
          "(virtualize_max_inline_reduction < 0)",
          d.reduced_trip);
      return false;
    }
    if (d.reduced_trip > cfg_.max_inline_reduction) {
      reason = fmt::format("reduction over {} iterations exceeds virtualize_max_inline_reduction = {}",
                           d.reduced_trip, cfg_.max_inline_reduction);
      return false;
    }
    reason =
        fmt::format("reduction over {} iterations (cap {}): recomputed at each of its {} read site{} ({})",
                    d.reduced_trip, cfg_.max_inline_reduction, site_count, site_count == 1 ? "" : "s", at);
    return true;
  }

  // A replay reads the definition's inputs where the node is read: if one of them is written again
  // in between, the replay would see the new value.
  std::optional<std::string> stale_input(const Definition& d, std::size_t last_site) const {
    for (const auto& [input, per_cell] : d.reads)
      for (std::size_t w : census_.writer_positions(input))
        if (w > d.last && w <= last_site)
          return fmt::format(
              "its definition reads '{}', which statement {} writes before a read at statement {}", input,
              stmt_no(w), stmt_no(last_site));
    return std::nullopt;
  }

  // A recomputed node's reads happen wherever it is replayed (site by site, multiplicities
  // multiplied); a stored one's happen once, at its definition.
  void propagate(const std::string& name, const Definition& d, bool recomputed) {
    if (!recomputed) {
      for (const auto& [input, per_cell] : d.reads) add_site(input, d.last, per_cell);
      return;
    }
    auto sites = sites_[name];  // a copy: an input's entry may be created while iterating
    for (const auto& [input, per_cell] : d.reads)
      for (const auto& [pos, times] : sites) add_site(input, pos, saturating_mul(times, per_cell));
  }

  const Routine& r_;
  PlacementConfig cfg_;
  AccessCensus census_;
  std::map<std::string, std::map<std::size_t, std::int64_t>> sites_;
};

}  // namespace

PlacementResult place(const Routine& r, const PlacementConfig& cfg) {
  return Placer(r, cfg).run();
}

}  // namespace fp
