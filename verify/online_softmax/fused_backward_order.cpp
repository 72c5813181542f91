#include "verify/online_softmax/fused_backward_order.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/ir_visit.h"
#include "core/text_printer.h"
#include "verify/online_softmax/smt/queries.h"
#include "verify/phase_clock.h"

namespace fp::verify {

namespace {

// A store (or a zeroing) with its enclosing loops inside one top-level statement.
struct Site {
  const Stmt* set = nullptr;  // a Set, or a Zero of the whole node
  std::vector<const Stmt*> loops;  // outermost first
  bool guarded = false;            // under an if or inside a scan
  std::size_t order = 0;           // depth-first position: program order of the sites
  std::size_t top = 0;             // 0-based top-level position
};

void collect(const StmtP& s, std::vector<const Stmt*>& loops, bool guarded, std::size_t top,
             std::vector<Site>& out) {
  switch (s->kind) {
    case StmtKind::Set:
    case StmtKind::Zero:
      out.push_back(Site{s.get(), loops, guarded, out.size(), top});
      return;
    case StmtKind::For:
      loops.push_back(s.get());
      for (const auto& b : s->body) collect(b, loops, guarded, top, out);
      loops.pop_back();
      return;
    case StmtKind::Seq:
    case StmtKind::If:
    case StmtKind::Scan:
      for (const auto& b : s->body) collect(b, loops, guarded || s->kind != StmtKind::Seq, top, out);
      return;
    default:
      return;
  }
}

// Every store and zeroing of `node`, except zeroings that are top-level statements of their own
// (they only set the state the accumulating statement starts from).
std::vector<Site> sites_writing(const Routine& r, const std::string& node) {
  std::vector<Site> all;
  const std::vector<StmtP> top = top_level_statements(r);
  for (std::size_t p = 0; p < top.size(); ++p) {
    std::vector<const Stmt*> loops;
    collect(top[p], loops, false, p, all);
  }
  std::vector<Site> out;
  for (const Site& s : all)
    if (s.set->name == node && !(s.set->kind == StmtKind::Zero && s.loops.empty() && !s.guarded)) out.push_back(s);
  return out;
}

// The factor read of `operand` when `s` is `node[c] = add(node[c], mul(a, b))` with a or b a read
// of `operand` (either operand order), else nullptr.
const Expr* accumulated_read(const Stmt& s, const std::string& operand) {
  if (s.kind != StmtKind::Set) return nullptr;
  const ExprP& v = s.value;
  if (!v || v->kind != ExprKind::Binary || v->binop() != BinOp::Add) return nullptr;
  auto self = [&](const ExprP& e) { return e->kind == ExprKind::Get && e->name == s.name && e->indices == s.indices; };
  const ExprP* prod = self(v->args[0]) ? &v->args[1] : self(v->args[1]) ? &v->args[0] : nullptr;
  if (!prod || (*prod)->kind != ExprKind::Binary || (*prod)->binop() != BinOp::Mul) return nullptr;
  for (const ExprP& f : (*prod)->args)
    if (f->kind == ExprKind::Get && f->name == operand) return f.get();
  return nullptr;
}

bool plain_in(const std::vector<Index>& idx, const std::string& sym) {
  return std::any_of(idx.begin(), idx.end(), [&](const Index& i) { return i.is_plain_iterator() && i.terms[0].sym == sym; });
}

// The two index lists mention the same loop symbols (so one cell of either names one of the other).
bool same_symbols(const std::vector<Index>& a, const std::vector<Index>& b) {
  auto syms = [](const std::vector<Index>& idx) {
    std::vector<std::string> s;
    for (const Index& i : idx)
      for (const auto& t : i.terms) s.push_back(t.sym);
    std::sort(s.begin(), s.end());
    return s;
  };
  return syms(a) == syms(b);
}

// Every index fixed or a plain iterator.
bool plain_cells(const std::vector<Index>& idx) {
  return std::all_of(idx.begin(), idx.end(), [](const Index& i) { return i.is_fixed() || i.is_plain_iterator(); });
}

// The loops of `s` that are not plain iterators of its stored cell.
std::vector<const Stmt*> pair_loops(const Site& s) {
  std::vector<const Stmt*> out;
  for (const Stmt* l : s.loops)
    if (!plain_in(s.set->indices, l->sym)) out.push_back(l);
  return out;
}

// The one axis of `read` whose index mentions any of `syms`, or nullopt (none or several, or a
// symbol of `syms` elsewhere).
std::optional<std::size_t> pair_axis(const Expr& read, const std::vector<const Stmt*>& syms) {
  std::optional<std::size_t> axis;
  for (std::size_t a = 0; a < read.indices.size(); ++a) {
    bool mentions = false;
    for (const Stmt* l : syms) mentions = mentions || read.indices[a].mentions(l->sym);
    if (!mentions) continue;
    if (axis) return std::nullopt;
    axis = a;
  }
  return axis;
}

std::int64_t coef_of(const Index& idx, const std::string& sym) {
  for (const auto& t : idx.terms)
    if (t.sym == sym) return t.coef;
  return 0;
}

struct SourceOrder {
  std::size_t axis = 0;
  std::int64_t pairs = 0;
};

std::optional<SourceOrder> read_source(const Routine& src, const std::string& g, const std::string& x, std::string* why) {
  const std::vector<Site> sites = sites_writing(src, g);
  if (sites.size() != 1) {
    *why = fmt::format("the source writes {} in {} stores, not one accumulation", g, sites.size());
    return std::nullopt;
  }
  const Site& s = sites[0];
  const Expr* read = accumulated_read(*s.set, x);
  if (!read || s.guarded || !plain_cells(s.set->indices)) {
    *why = fmt::format("the source's store into {} is not an unguarded accumulation of a product with {} at plain cells: {}",
                       g, x, print_stmt(*s.set));
    return std::nullopt;
  }
  const std::vector<const Stmt*> t = pair_loops(s);
  if (t.size() != 1 || t[0]->from != 0) {
    *why = fmt::format("the source's accumulation into {} has {} loops outside its cell, not one from 0", g, t.size());
    return std::nullopt;
  }
  const std::optional<std::size_t> axis = pair_axis(*read, t);
  if (!axis || !read->indices[*axis].is_plain_iterator()) {
    *why = fmt::format("{} is not read at the plain pair iterator {} on one axis in the source", x, t[0]->sym);
    return std::nullopt;
  }
  return SourceOrder{*axis, t[0]->to + 1};
}

struct TargetOrder {
  smt::BlockedOrderQuery query;
  std::int64_t blocks = 0, tail = 0, pairs = 0;
  std::string tile;
};

// The tile form's copies: `tile[c'] = g[c]` before and `g[c] = tile[c']` after, the same lists.
bool read_copies(const std::vector<Site>& tile_sites, const Site& out, const std::string& g, const std::string& tile,
                 const Site** in, std::string* why) {
  const ExprP& v = out.set->value;
  if (out.set->kind != StmtKind::Set || !v || v->kind != ExprKind::Get || v->name == g || out.guarded ||
      !plain_cells(out.set->indices) || !plain_cells(v->indices) || !same_symbols(out.set->indices, v->indices)) {
    *why = fmt::format("the target's store into {} is not an unguarded copy from a tile: {}", g, print_stmt(*out.set));
    return false;
  }
  for (const Site& s : tile_sites) {
    const ExprP& c = s.set->value;
    if (s.set->kind == StmtKind::Set && c && c->kind == ExprKind::Get && c->name == g) {
      if (*in || s.guarded || s.set->indices != v->indices || c->indices != out.set->indices) {
        *why = fmt::format("{} is not copied into {} once, by the copy-out's index lists", g, tile);
        return false;
      }
      *in = &s;
    }
  }
  if (!*in) *why = fmt::format("{} is never copied into the tile {}", g, tile);
  return *in != nullptr;
}

std::optional<TargetOrder> read_target(const Routine& tgt, const std::string& g, const std::string& x,
                                       std::size_t axis, std::string* why) {
  const std::vector<Site> g_sites = sites_writing(tgt, g);
  if (g_sites.size() != 1) {
    *why = fmt::format("the target writes {} in {} stores, not one copy from a tile", g, g_sites.size());
    return std::nullopt;
  }
  const Site& out = g_sites[0];
  const std::string tile = out.set->value && out.set->value->kind == ExprKind::Get ? out.set->value->name : "";
  const std::vector<Site> tile_sites = sites_writing(tgt, tile);
  const Site* in = nullptr;
  if (!read_copies(tile_sites, out, g, tile, &in, why)) return std::nullopt;
  std::vector<const Site*> acc;
  for (const Site& s : tile_sites) {
    if (s.set == in->set || s.top != out.top) continue;  // stores outside the statement do not reach g
    if (s.guarded || !accumulated_read(*s.set, x) || !plain_cells(s.set->indices)) {
      *why = fmt::format("the tile {} is written by another store than its copy-in and unguarded accumulations "
                         "with {} in the statement that writes {}: {}",
                         tile, x, g, print_stmt(*s.set));
      return std::nullopt;
    }
    acc.push_back(&s);
  }
  if (in->top != out.top || acc.empty() || acc.size() > 2 || in->order > acc.front()->order ||
      acc.back()->order > out.order) {
    *why = fmt::format("the tile {} is not copied in, accumulated by one or two stores, and copied out, in that "
                       "order, in one statement",
                       tile);
    return std::nullopt;
  }
  for (const Site* s : {in, &out})
    for (const Stmt* l : s->loops)
      if (!plain_in(in->set->indices, l->sym)) {
        *why = fmt::format("the copies of {} run under a loop {} that is not a plain iterator of the tile's cell", tile,
                           l->sym);
        return std::nullopt;
      }
  TargetOrder t;
  t.tile = tile;
  // The main accumulation: pair loops blk (enclosing) and j.
  const Site& main = *acc[0];
  const std::vector<const Stmt*> mp = pair_loops(main);
  const Expr* mread = accumulated_read(*main.set, x);
  if (mp.size() != 2 || mp[0]->from != 0 || mp[1]->from != 0 || pair_axis(*mread, mp) != axis) {
    *why = fmt::format("the main accumulation into {} is not under a block loop and a cell loop from 0 that index "
                       "{} on the source's pair axis only",
                       tile, x);
    return std::nullopt;
  }
  const Index& mi = mread->indices[axis];
  t.blocks = mp[0]->to + 1;
  t.query.block = mp[1]->to + 1;
  t.query.blk_coef = coef_of(mi, mp[0]->sym);
  t.query.j_coef = coef_of(mi, mp[1]->sym);
  t.query.offset = mi.offset;
  if (acc.size() == 2) {
    const Site& tail = *acc[1];
    const std::vector<const Stmt*> tp = pair_loops(tail);
    const Expr* tread = accumulated_read(*tail.set, x);
    const bool inside_block = std::find(tail.loops.begin(), tail.loops.end(), mp[0]) != tail.loops.end();
    if (inside_block || tp.size() != 1 || tp[0]->from != 0 || pair_axis(*tread, tp) != axis) {
      *why = fmt::format("the tail accumulation into {} is not after the block loop, under one cell loop from 0 "
                         "indexing {} on the source's pair axis only",
                         tile, x);
      return std::nullopt;
    }
    const Index& ti = tread->indices[axis];
    t.tail = tp[0]->to + 1;
    t.query.tail = true;
    t.query.tail_j_coef = coef_of(ti, tp[0]->sym);
    if (ti.offset != t.query.block * t.blocks || t.tail >= t.query.block) {
      *why = fmt::format("the tail's pair index {} (length {}) is not the template's: offset B·NB = {} and a length "
                         "below B = {}",
                         print_index(ti), t.tail, t.query.block * t.blocks, t.query.block);
      return std::nullopt;
    }
  }
  t.pairs = t.query.block * t.blocks + t.tail;
  return t;
}

}  // namespace

GradientOrderLift lift_gradient_order(const Routine& src, const Routine& tgt, const std::string& gradient,
                                      const std::string& operand, const Limits& limits,
                                      const std::string& dump_prefix) {
  ScopedPhase phase("all-sizes lift");
  GradientOrderLift res;
  auto fail = [&](std::string why) {
    res.why_not = std::move(why);
    res.steps.push_back(fmt::format("{}: per-cell summation order not lifted to all sizes: {}", gradient, res.why_not));
    return res;
  };
  std::string why;
  const std::optional<SourceOrder> s = read_source(src, gradient, operand, &why);
  if (!s) return fail(why);
  const std::optional<TargetOrder> t = read_target(tgt, gradient, operand, s->axis, &why);
  if (!t) return fail(why);
  if (t->pairs != s->pairs)
    return fail(fmt::format("the target reads {} pairs per cell, the source {}", t->pairs, s->pairs));
  res.steps.push_back(fmt::format(
      "{}: structure: the source adds {}'s pairs 0..{} in order; the target copies each cell into {}, adds the "
      "pairs of {} blocks of {} (index {}·blk + {}·j + {}){} and copies it back",
      gradient, operand, s->pairs - 1, t->tile, t->blocks, t->query.block, t->query.blk_coef, t->query.j_coef,
      t->query.offset,
      t->query.tail ? fmt::format(", then a tail of {} (index {}·j + B·NB)", t->tail, t->query.tail_j_coef) : ""));
  smt::SmtLimits lim;
  lim.rlimit = limits.rlimit;
  lim.timeout_s = limits.timeout_s;
  lim.dump_path = dump_prefix;
  for (const auto& f : smt::prove_blocked_order(t->query, lim)) {
    if (f.outcome.status != smt::SmtStatus::Unsat)
      return fail(fmt::format("Z3 fact '{}' ({}) is {}{}", f.name, f.statement, smt::smt_status_name(f.outcome.status),
                              f.outcome.reason.empty() ? "" : " (" + f.outcome.reason + ")"));
    res.steps.push_back(fmt::format("{}: Z3 (integers, every block count{}): '{}' — {} (unsat, {:.3f} s)", gradient,
                                    t->query.tail ? " and tail length" : "", f.name, f.statement, f.outcome.seconds));
  }
  res.proved = true;
  res.statement = fmt::format(
      "{}'s per-cell summation order is the composed one for every size of the template — {} pairs in blocks of {} "
      "{}, every block count (Z3)",
      gradient, "n = B·NB + R", t->query.block,
      t->query.tail ? "with a tail of 1 <= R < B" : "without a tail (R = 0)");
  return res;
}

}  // namespace fp::verify
