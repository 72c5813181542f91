// The fused backward's all-sizes lift of dV (verify/online_softmax/fused_backward_lift.h).

#include "verify/online_softmax/fused_backward_lift.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/ir_visit.h"
#include "core/support/deadline.h"
#include "rewrites/online_softmax/claims.h"
#include "verify/loop_nest.h"
#include "verify/online_softmax/lift_support.h"
#include "verify/phase_clock.h"
#include "verify/program_equality.h"
#include "verify/routine_pair_memo.h"

namespace fp::verify {

namespace {

using namespace lift;

const Expect kBackward{"the fused backward"};

// One link of P's line: a single-writer pointwise nest reading the next link at its own cell.
struct Link {
  std::size_t pos = 0;
  std::vector<Loop> loops;
  const Stmt* store = nullptr;
  std::string prev;  // the link it reads (the contraction's node for the last one)
};

// A node read where the source reads it: its value there must be the one the nest reads.
struct LeafRead {
  std::string node;
  std::size_t pos = 0;
};

// The target's statements as the source's kept ones in order, the consumed ones dropped and new
// ones inserted.
struct Alignment {
  std::vector<bool> kept_src;         // per source statement
  std::vector<bool> new_tgt;          // per target statement
  std::vector<std::size_t> rank_src;  // per source statement: kept statements before it
  std::vector<std::size_t> rank_tgt;  // per target statement: kept statements before it
  std::vector<std::size_t> kept;      // the kept source statements, in order
};

Alignment align_statements(const std::vector<StmtP>& S, const std::vector<StmtP>& T) {
  Alignment a;
  a.kept_src.assign(S.size(), false);
  a.new_tgt.assign(T.size(), true);
  std::size_t j = 0;
  for (std::size_t i = 0; i < S.size(); ++i) {
    std::size_t k = j;
    while (k < T.size() && !equal(S[i], T[k])) ++k;
    if (k == T.size()) continue;  // consumed
    a.kept_src[i] = true;
    a.new_tgt[k] = false;
    a.kept.push_back(i);
    j = k + 1;
  }
  std::size_t r = 0;
  for (std::size_t i = 0; i < S.size(); ++i) {
    a.rank_src.push_back(r);
    r += a.kept_src[i];
  }
  r = 0;
  for (std::size_t t = 0; t < T.size(); ++t) {
    a.rank_tgt.push_back(r);
    r += !a.new_tgt[t];
  }
  return a;
}

// Every index of every access under `s` within its node's axes for every iteration of the loops
// around it (interval arithmetic over the loop ranges; guards are not used).
void require_in_bounds(const Routine& r, const Stmt& s,
                       std::map<std::string, std::pair<std::int64_t, std::int64_t>>& ranges) {
  auto check = [&](const std::string& node, const std::vector<Index>& idx) {
    const Node& n = node_of(r, node);
    require(idx.size() == n.dims.size(), fmt::format("{} is indexed with {} indices", node, idx.size()));
    for (std::size_t a = 0; a < idx.size(); ++a) {
      const Index c = idx[a].canonical();
      __int128 lo = c.offset, hi = c.offset;
      for (const auto& t : c.terms) {
        auto it = ranges.find(t.sym);
        require(it != ranges.end(), fmt::format("{} is indexed with {}, which no loop binds", node, t.sym));
        const __int128 x = static_cast<__int128>(t.coef) * it->second.first;
        const __int128 y = static_cast<__int128>(t.coef) * it->second.second;
        lo += std::min(x, y);
        hi += std::max(x, y);
      }
      require(lo >= 0 && hi < n.dims[a],
              fmt::format("an access of {} is not within its axis {} (0..{}) for every iteration", node, a,
                          n.dims[a] - 1));
    }
  };
  auto exprs = [&](const ExprP& e) {
    for_each_expr(e, [&](const Expr& x) {
      if (x.kind == ExprKind::Get) check(x.name, x.indices);
    });
  };
  switch (s.kind) {
    case StmtKind::For:
      if (s.from > s.to) return;  // never runs
      ranges[s.sym] = {s.from, s.to};
      for (const StmtP& b : s.body) require_in_bounds(r, *b, ranges);
      ranges.erase(s.sym);
      return;
    case StmtKind::Set:
      check(s.name, s.indices);
      exprs(s.value);
      return;
    default:
      for_each_own_expr(s, exprs);
      for (const StmtP& b : s.body) require_in_bounds(r, *b, ranges);
      return;
  }
}

// A zeroed node's one accumulation: `zero N`, then N[c] = add(N[c], f) over N's cell loops (and, for
// a contraction, reduced ones).
struct Accumulation {
  std::string node;
  std::size_t zero_pos = 0, pos = 0;
  std::vector<Loop> loops, reduced;
  const Stmt* store = nullptr;
  ExprP f;           // the added value
  AxisOf axis_of;    // cell loop symbol -> N's axis
  std::string prev;  // a gradient link's: the node it reads
};

class BackwardLifter {
 public:
  BackwardLifter(const Routine& src, const Routine& tgt, const osm::BackwardRoles& roles,
                 std::string gradient)
      : src_(src),
        tgt_(tgt),
        S_(top_level_statements(src)),
        T_(top_level_statements(tgt)),
        roles_(roles),
        g_(std::move(gradient)) {
    for (const StmtP& s : S_) census_.push_back(census_of(s));
    for (const StmtP& s : T_) tcensus_.push_back(census_of(s));
    ds_ = g_ != roles.d_v;
    scalar_ = ds_ ? roles.d_s : roles.p;
  }

  BackwardLift run() {
    BackwardLift res;
    ScopedPhase phase("all-sizes lift");
    check_deadline("the fused backward's all-sizes lift");
    try {
      require(!g_.empty() && !scalar_.empty() && !roles_.p.empty() &&
                  (g_ == roles_.d_v || g_ == roles_.d_q || g_ == roles_.d_k),
              "the application records no gradient, probabilities or score gradient for " + g_);
      require(!ds_ || (!roles_.d_p.empty() && !roles_.d_out.empty() && !roles_.o.empty()),
              "the application records no probability gradient, output gradient or output");
      accumulation();
      line();
      if (ds_) score_gradient();
      align();
      nest();
      res.steps.push_back(structure_note());
      res.steps.push_back(statements_note_);
      if (skips_)
        res.steps.push_back(
            "skipped steps: a block's steps before the mask's where run under the predicate at its cell "
            "where it is true "
            "longest (the predicate monotone in the block's cell), so a skipped block has the predicate "
            "false at every "
            "cell and the where gives its fill whatever the tiles held");
      res.proved = true;
      res.pairs = n_;
      res.block = block_;
      res.tail = rem_ > 0;
      res.skips = skips_;
      res.keys = keys_;
      res.width = width_;
    } catch (const NotLifted& e) {
      res.why_not = e.what();
      res.steps.push_back(std::string("all-sizes lift not established: ") + e.what());
    }
    return res;
  }

 private:
  std::string structure_note() const {
    const std::string blocks =
        fmt::format("in blocks of B = {} ({} full block{}{}{})", block_, full_, full_ == 1 ? "" : "s",
                    rem_ > 0 ? fmt::format(", a tail of {}", rem_) : "",
                    skips_ ? ", skipping blocks the mask hides" : "");
    const std::string line = fmt::format("{} the line of {} pointwise step{} over the contraction {}",
                                         roles_.p, links_.size(), links_.size() == 1 ? "" : "s", s_.node);
    if (!ds_)
      return fmt::format(
          "structure: {} accumulates {}·{} over the inner axis (n = {} here), {}; the target's nest "
          "recomputes {} per "
          "pair in tiles {}, each link the source's definition at the pair, and adds the same products in "
          "the same "
          "order; every index of the scores' shape a plain loop symbol over a whole axis, the block "
          "constants the inner "
          "extent's",
          g_, scalar_, osm::contraction_operand(roles_, g_), n_, line, roles_.p, blocks);
    return fmt::format(
        "structure: {} accumulates {}·{} over the inner axis (n = {} here), {} {} link{} over the composed "
        "score "
        "gradient ({} = (dP / l + {})·e, {} = Σ over the {} keys of dP·(−e / (l·l)) from 0, dP = {} a "
        "contraction), {}; "
        "the target's nest recomputes p (the source's {}, link by link) and dP (the same contraction) "
        "per pair {}, takes ds = p·(dP − D) with D = Σ over the {} value columns of {}·{} from 0 (the row "
        "dot, "
        "statement {}), applies the source's links and adds the same operands in the same order; every index "
        "of the "
        "scores' shape a plain loop symbol over a whole axis, the block constants the inner extent's",
        g_, scalar_, osm::contraction_operand(roles_, g_), n_, scalar_, dlinks_.size(),
        dlinks_.size() == 1 ? "" : "s", ng_.node, lg_.node, lg_.node, keys_, roles_.d_p, line, roles_.p,
        blocks, width_, roles_.d_out, roles_.o, rowdot_pos_ + 1);
  }

  // ---- source ------------------------------------------------------------------------------------

  std::vector<std::size_t> writers_of(const std::string& node) const {
    std::vector<std::size_t> w;
    for (std::size_t i = 0; i < S_.size(); ++i)
      if (census_[i].writes.count(node)) w.push_back(i);
    return w;
  }

  void leaves_of(const ExprP& e, std::size_t pos, const std::set<std::string>& besides) {
    for_each_expr(e, [&](const Expr& g) {
      if (g.kind == ExprKind::Get && !besides.count(g.name)) leaves_.push_back(LeafRead{g.name, pos});
    });
  }

  bool of_scores_shape(const std::string& node) const {
    const Node* r = src_.find_node(node);
    return r && !r->is_input && r->dims == node_of(src_, roles_.p).dims && !writers_of(node).empty();
  }

  // G[c] = add(G[c], mul(Y[..], X[..])), Y the scalar the nest recomputes (P for dV, the score
  // gradient for dQ and dK): G's axes and the inner loop.
  void accumulation() {
    std::optional<std::size_t> found;
    for (std::size_t i : writers_of(g_)) {
      std::vector<Loop> loops;
      const Stmt* st = peel(S_[i].get(), loops);
      const ExprP prod = reduction_product(*st);
      if (!prod || st->name != g_) continue;
      const bool first = prod->args[0]->kind == ExprKind::Get && prod->args[0]->name == scalar_;
      const bool second = prod->args[1]->kind == ExprKind::Get && prod->args[1]->name == scalar_;
      if (first == second) continue;
      require(!found, fmt::format("{} is accumulated from {} by two nests", g_, scalar_));
      found = i;
      acc_loops_ = loops;
      acc_store_ = st;
      y_read_ = prod->args[first ? 0 : 1];
    }
    require(found.has_value(), fmt::format("no nest accumulates {} = add({}, mul({}, ·))", g_, g_, scalar_));
    acc_pos_ = *found;
    const Node& g = node_of(src_, g_);
    require(acc_store_->value->prec == g.prec,
            fmt::format("{}'s accumulation is not at {}'s precision", g_, g_));
    require(node_of(src_, scalar_).dims == node_of(src_, roles_.p).dims,
            fmt::format("{} does not have the probabilities' cells", scalar_));
    g_axis_of_ = plain_axes(src_, g_, acc_store_->indices, acc_loops_, "the gradient's accumulation");
    std::vector<Loop> inner;
    for (const Loop& l : acc_loops_)
      if (!g_axis_of_.count(l.sym)) inner.push_back(l);
    require(inner.size() == 1,
            fmt::format("{}'s accumulation does not run over exactly one loop besides {}'s axes", g_, g_));
    inner_ = inner[0].sym;
    require(inner[0].from == 0 && inner[0].to >= 0, "the inner loop does not run from 0 at least once");
    n_ = inner[0].to + 1;
    const AxisOf y_axes =
        plain_axes(src_, scalar_, y_read_->indices, acc_loops_, "the gradient's accumulation");
    require(y_axes.count(inner_) == 1, fmt::format("{} is not read along the inner loop", scalar_));
    for (const Index& i : y_read_->indices) pair_sym_.push_back(i.terms[0].sym);
    leaves_of(acc_store_->value, acc_pos_, {g_, scalar_});
  }

  // P's definition through single-writer pointwise nests of P's shape down to `zero S` and S's
  // contraction.
  void line() {
    const Node& pn = node_of(src_, roles_.p);
    prec_ = pn.prec;
    require(is_float(prec_), fmt::format("{} is not at a floating-point precision", roles_.p));
    require(node_of(src_, g_).prec == prec_ && node_of(src_, scalar_).prec == prec_,
            fmt::format("{}, {} and {} are not at one precision", g_, scalar_, roles_.p));
    std::string node = roles_.p;
    for (int guard = 0;; ++guard) {
      require(guard < 64, fmt::format("{}'s line does not end", roles_.p));
      const Node& nd = node_of(src_, node);
      require(nd.dims == pn.dims && nd.prec == prec_ && !nd.is_input,
              fmt::format("{} in {}'s line is not a computed node of its shape at {}", node, roles_.p,
                          prec_name(prec_)));
      const std::vector<std::size_t> w = writers_of(node);
      if (w.size() == 2 && S_[w[0]]->kind == StmtKind::Zero && S_[w[0]]->name == node) {
        s_ = contraction(node, w[0], w[1]);
        break;
      }
      require(w.size() == 1, fmt::format("{} in {}'s line has {} writers", node, roles_.p, w.size()));
      Link lk;
      lk.pos = w[0];
      lk.store = peel(S_[w[0]].get(), lk.loops);
      require(lk.store->kind == StmtKind::Set && lk.store->name == node && lk.store->value &&
                  lk.store->value->prec == prec_,
              fmt::format("{}'s definition is not one pointwise store at {}", node, prec_name(prec_)));
      const AxisOf axes = plain_axes(src_, node, lk.store->indices, lk.loops, "a link of the line");
      require_bijection(lk.loops, axes, "a link of the line");
      for_each_expr(lk.store->value, [&](const Expr& g) {
        if (g.kind != ExprKind::Get || !of_scores_shape(g.name)) return;
        require(lk.prev.empty() || lk.prev == g.name,
                fmt::format("{}'s definition reads two computed nodes of its shape", node));
        require(same_indices(g.indices, lk.store->indices),
                fmt::format("{} reads {} at another cell", node, g.name));
        lk.prev = g.name;
      });
      require(
          !lk.prev.empty(),
          fmt::format("{}'s definition reads no computed node of its shape: no contraction under it", node));
      leaves_of(lk.store->value, lk.pos, {lk.prev});
      links_.push_back(lk);
      node = lk.prev;
    }
    // Each writer before its reader: zero S < S < the last link < … < P < the accumulation.
    std::size_t before = s_.pos;
    for (auto it = links_.rbegin(); it != links_.rend(); ++it) {
      require(it->pos > before,
              fmt::format("{}'s definition comes before the node it reads", it->store->name));
      before = it->pos;
    }
    require(before < acc_pos_, fmt::format("{} is accumulated before {} is computed", g_, roles_.p));
  }

  // `zero N` then N[c] = add(N[c], f): N's two writers, f at N's precision.
  Accumulation zeroed(const std::string& node, const char* what) const {
    const std::vector<std::size_t> w = writers_of(node);
    require(w.size() == 2 && S_[w[0]]->kind == StmtKind::Zero && S_[w[0]]->name == node,
            fmt::format("{} ({}) is not written by `zero {}` and one accumulation", node, what, node));
    Accumulation a;
    a.node = node;
    a.zero_pos = w[0];
    a.pos = w[1];
    a.store = peel(S_[w[1]].get(), a.loops);
    require(a.store->kind == StmtKind::Set && a.store->name == node && a.store->value &&
                a.store->value->prec == prec_ && node_of(src_, node).prec == prec_,
            fmt::format("{} ({}) is not accumulated at {}", node, what, prec_name(prec_)));
    a.f = other_operand(a.store->value, BinOp::Add, *a.store);
    require(a.f != nullptr,
            fmt::format("{} ({}) is not accumulated as {} = add({}, ·)", node, what, node, node));
    a.axis_of = plain_axes(src_, node, a.store->indices, a.loops, what);
    for (const Loop& l : a.loops)
      if (!a.axis_of.count(l.sym)) a.reduced.push_back(l);
    return a;
  }

  Accumulation contraction(const std::string& node, std::size_t zero_pos, std::size_t pos) {
    Accumulation c = zeroed(node, "a contraction");
    require(c.zero_pos == zero_pos && c.pos == pos, fmt::format("{} is not one contraction", node));
    const ExprP prod = reduction_product(*c.store);
    require(prod != nullptr,
            fmt::format("{} is not one accumulation of a product at {}", node, prec_name(prec_)));
    require(c.axis_of.size() == node_of(src_, node).dims.size(),
            "the contraction does not store one cell per iteration");
    for (const Loop& l : c.reduced)
      require(l.from <= l.to, fmt::format("loop {} of the contraction into {} runs zero times", l.sym, node));
    for (const ExprP& f : prod->args) {
      require(!reads(f, node), fmt::format("the contraction into {} reads {} in a factor", node, node));
      leaves_of(f, pos, {});
    }
    return c;
  }

  static bool reads(const ExprP& e, const std::string& node) {
    bool found = false;
    for_each_expr(e, [&](const Expr& g) { found = found || (g.kind == ExprKind::Get && g.name == node); });
    return found;
  }
  static bool is_read(const ExprP& e, const std::string& node, const std::vector<Index>& idx) {
    return e->kind == ExprKind::Get && e->name == node && same_indices(e->indices, idx);
  }

  // The composed score gradient (docs/bounds.md §8) under the scalar: the links from the scalar
  // down to ng, each `zero N; N += f(prev)` with f one of prev, where(pred, prev, 0) and prev·c (at
  // most one scale); ng += eg·e (e = P's exponentials); eg: `zero`, += dP / l, += lg; lg: `zero`,
  // += dP·(−e / (l·l)) over the key axis; dP a contraction. Every read of a node of the scores'
  // shape at the cell being written; l at P's rows.
  void score_gradient() {
    std::string node = scalar_;
    bool scaled = false;
    for (int guard = 0;; ++guard) {
      require(guard < 64, fmt::format("{}'s chain does not end", scalar_));
      require(of_scores_shape(node),
              fmt::format("{} in {}'s chain is not a computed node of the scores' shape", node, scalar_));
      Accumulation a = zeroed(node, "a link of the score gradient");
      require(a.reduced.empty(), fmt::format("{} is accumulated over a loop besides its axes", node));
      std::vector<std::string> prevs;
      for_each_expr(a.f, [&](const Expr& g) {
        if (g.kind != ExprKind::Get || !of_scores_shape(g.name)) return;
        require(same_indices(g.indices, a.store->indices),
                fmt::format("{} reads {} at another cell", node, g.name));
        if (std::find(prevs.begin(), prevs.end(), g.name) == prevs.end()) prevs.push_back(g.name);
      });
      if (prevs.size() == 2) {
        ng_ = a;
        require(ng_.reduced.empty(), fmt::format("{} is accumulated over a loop besides its axes", node));
        break;
      }
      require(prevs.size() == 1, fmt::format("{}'s accumulation reads no node of the scores' shape", node));
      a.prev = prevs[0];
      require(link_form(a.f, a.prev, scaled),
              fmt::format("{}'s link is not one of y, where(pred, y, 0) and y·c (one scale at most)", node));
      leaves_of(a.f, a.pos, {a.prev});
      dlinks_.push_back(a);
      node = a.prev;
    }
    // P = e / l, read at P's cell and rows.
    require(!links_.empty(), fmt::format("{} is a contraction, not e / l", roles_.p));
    const Link& pdef = links_.front();
    const ExprP& pv = pdef.store->value;
    require(pv->kind == ExprKind::Binary && pv->binop() == BinOp::Div && pv->args[0]->kind == ExprKind::Get &&
                pv->args[1]->kind == ExprKind::Get && pv->args[0]->name == pdef.prev,
            fmt::format("{}'s definition is not e / l", roles_.p));
    e_ = pdef.prev;
    l_ = pv->args[1]->name;
    const AxisOf p_axes = plain_axes(src_, roles_.p, pdef.store->indices, pdef.loops, "the probabilities");
    l_rows_ = in_reference(pv->args[1]->indices, p_axes);
    // ng += eg·e.
    const ExprP& f = ng_.f;
    require(f->kind == ExprKind::Binary && f->binop() == BinOp::Mul && f->prec == prec_,
            fmt::format("{} is not accumulated as a product", ng_.node));
    const int e_at = is_read(f->args[0], e_, ng_.store->indices)   ? 0
                     : is_read(f->args[1], e_, ng_.store->indices) ? 1
                                                                   : -1;
    require(e_at >= 0 && f->args[1 - e_at]->kind == ExprKind::Get,
            fmt::format("{} is not accumulated as eg·{} at its cell", ng_.node, e_));
    const std::string eg = f->args[1 - e_at]->name;
    // eg: zero, += dP / l, += lg.
    const std::vector<std::size_t> w = writers_of(eg);
    require(w.size() == 3 && S_[w[0]]->kind == StmtKind::Zero && S_[w[0]]->name == eg,
            fmt::format("{} is not written by `zero {}`, dP / l and the sum gradient", eg, eg));
    const ExprP a = eg_term(w[1], eg, "dP / l");
    require(a->kind == ExprKind::Binary && a->binop() == BinOp::Div && a->prec == prec_ &&
                a->args[0]->kind == ExprKind::Get && a->args[0]->name == roles_.d_p &&
                a->args[1]->kind == ExprKind::Get && a->args[1]->name == l_,
            fmt::format("{}'s first accumulation is not {} / {}", eg, roles_.d_p, l_));
    require(same_indices(a->args[0]->indices, eg_store_->indices),
            fmt::format("{} reads {} at another cell", eg, roles_.d_p));
    require(in_reference(a->args[1]->indices, eg_axes_) == l_rows_,
            fmt::format("{} reads {} at another row", eg, l_));
    const std::size_t pos_a = w[1];
    const ExprP lg_read = eg_term(w[2], eg, "the sum gradient");
    require(lg_read->kind == ExprKind::Get && !of_scores_shape(lg_read->name),
            fmt::format("{}'s second accumulation is not a read of the sum gradient", eg));
    lg_ = zeroed(lg_read->name, "the sum gradient");
    require(in_reference(lg_read->indices, eg_axes_) == l_rows_,
            fmt::format("{} reads the sum gradient at another row than {}'s", eg, l_));
    sum_gradient();
    const std::vector<std::size_t> dp_writers = writers_of(roles_.d_p);
    require(dp_writers.size() == 2, fmt::format("{} is not written by `zero {}` and one contraction", roles_.d_p, roles_.d_p));
    dp_ = contraction(roles_.d_p, dp_writers[0], dp_writers[1]);
    require(dp_.reduced.size() == 1, fmt::format("{} is not a contraction over one loop", roles_.d_p));
    // The order of the writers, and e and l unchanged from P's definition to their last read.
    require(dp_.pos < pos_a && dp_.pos < lg_.pos && lg_.pos < w[2] && pos_a < w[2] && w[2] < ng_.pos &&
                ng_.zero_pos < ng_.pos && pdef.pos < pos_a && pdef.pos < lg_.pos,
            "the composed score gradient's statements are not in the order dP < dP / l, the sum gradient < "
            "eg < ng");
    std::size_t last = ng_.pos;
    for (auto it = dlinks_.rbegin(); it != dlinks_.rend(); ++it) {
      require(it->pos > last && it->zero_pos < it->pos,
              fmt::format("{}'s link comes before what it reads", it->node));
      last = it->pos;
    }
    require(last < acc_pos_, fmt::format("{} is accumulated before {} is computed", g_, scalar_));
    for (std::size_t i = pdef.pos + 1; i < ng_.pos; ++i)
      require(
          !census_[i].writes.count(e_) && !census_[i].writes.count(l_),
          fmt::format("source statement {} writes {} or {} between the probabilities and the score gradient",
                      i + 1, e_, l_));
  }

  // One accumulation of eg (`eg[c] = add(eg[c], y)`): y, with eg's loops as its cell's.
  ExprP eg_term(std::size_t pos, const std::string& eg, const char* what) {
    std::vector<Loop> loops;
    const Stmt* st = peel(S_[pos].get(), loops);
    require(st->kind == StmtKind::Set && st->name == eg && st->value->prec == prec_ &&
                node_of(src_, eg).prec == prec_,
            fmt::format("{}'s accumulation of {} is not one store at {}", eg, what, prec_name(prec_)));
    const ExprP y = other_operand(st->value, BinOp::Add, *st);
    require(y != nullptr, fmt::format("{}'s accumulation of {} is not {} = add({}, ·)", eg, what, eg, eg));
    eg_axes_ = plain_axes(src_, eg, st->indices, loops, "the exponentials' gradient");
    require_bijection(loops, eg_axes_, "the exponentials' gradient");
    eg_store_ = st;
    return y;
  }

  // lg[rows] += dP[c]·(−e[c] / (l[rows]·l[rows])) over the key loop, rows those of l.
  void sum_gradient() {
    const ExprP& f = lg_.f;
    require(lg_.reduced.size() == 1 && f->kind == ExprKind::Binary && f->binop() == BinOp::Mul &&
                f->prec == prec_,
            fmt::format("{} is not a sum of products over one key loop", lg_.node));
    const int dp_at = f->args[0]->kind == ExprKind::Get && f->args[0]->name == roles_.d_p ? 0 : 1;
    const ExprP& dp = f->args[static_cast<std::size_t>(dp_at)];
    const ExprP& w = f->args[static_cast<std::size_t>(1 - dp_at)];
    require(dp->kind == ExprKind::Get && dp->name == roles_.d_p,
            fmt::format("{} does not read {}", lg_.node, roles_.d_p));
    const AxisOf x_axes = plain_axes(src_, roles_.d_p, dp->indices, lg_.loops, "the sum gradient");
    require_bijection(lg_.loops, x_axes, "the sum gradient");
    require(w->kind == ExprKind::Binary && w->binop() == BinOp::Div && w->prec == prec_ &&
                w->args[0]->kind == ExprKind::Unary && w->args[0]->unop() == UnOp::Neg &&
                w->args[0]->prec == prec_ && is_read(w->args[0]->args[0], e_, dp->indices) &&
                w->args[1]->kind == ExprKind::Binary && w->args[1]->binop() == BinOp::Mul &&
                w->args[1]->prec == prec_,
            fmt::format("{}'s term is not dP·(−e / (l·l))", lg_.node));
    for (const ExprP& l : w->args[1]->args)
      require(l->kind == ExprKind::Get && l->name == l_ && in_reference(l->indices, x_axes) == l_rows_,
              fmt::format("{}'s term does not divide by {}·{} at the row", lg_.node, l_, l_));
    require(in_reference(lg_.store->indices, x_axes) == l_rows_,
            fmt::format("{} is not stored at {}'s rows", lg_.node, l_));
    const Loop& key = lg_.reduced[0];
    require(key.from == 0, fmt::format("{}'s key loop does not start at 0", lg_.node));
    keys_ = key.to + 1;
  }

  // f(prev) is prev, where(pred, prev, 0) or prev·c (c a constant, at most one along the chain),
  // with prev read once.
  bool link_form(const ExprP& f, const std::string& prev, bool& scaled) const {
    auto is_prev = [&](const ExprP& e) { return e->kind == ExprKind::Get && e->name == prev; };
    auto zero = [&](const ExprP& e) { return e->kind == ExprKind::Const && e->value == 0; };
    if (is_prev(f)) return true;
    if (f->kind == ExprKind::Ternary && f->ternop() == TernOp::Where && is_prev(f->args[1]) &&
        zero(f->args[2]))
      return !reads(f->args[0], prev);
    if (f->kind == ExprKind::Binary && f->binop() == BinOp::Mul && !scaled) {
      const bool a = is_prev(f->args[0]) && f->args[1]->kind == ExprKind::Const;
      const bool b = is_prev(f->args[1]) && f->args[0]->kind == ExprKind::Const;
      scaled = a || b;
      return scaled;
    }
    return false;
  }

  // ---- the target's top-level statements ---------------------------------------------------------

  void align() {
    for (const Node& n : src_.nodes)
      if (const Node* t = tgt_.find_node(n.name))
        require(*t == n, fmt::format("the target declares {} differently", n.name));
    for (const Node& n : tgt_.nodes)
      if (!src_.find_node(n.name)) {
        require(!n.is_input && !n.is_output,
                fmt::format("the target's new node {} is an input or an output", n.name));
        target_only_.insert(n.name);
      }
    a_ = align_statements(S_, T_);
    std::vector<std::size_t> nests;
    for (std::size_t t = 0; t < T_.size(); ++t)
      if (a_.new_tgt[t] && tcensus_[t].writes.count(g_)) nests.push_back(t);
    require(nests.size() == 1, fmt::format("{} new target statements write {}, not one", nests.size(), g_));
    nest_pos_ = nests[0];
    require(!a_.kept_src[acc_pos_], fmt::format("the target keeps {}'s accumulation", g_));
    for (std::size_t i : writers_of(g_))
      require(
          a_.kept_src[i] || i == acc_pos_,
          fmt::format("source statement {} writes {} and is dropped, besides its accumulation", i + 1, g_));
    crossed(
        a_.rank_src[acc_pos_], nest_pos_,
        [&](const Census& c) { return c.reads.count(g_) || c.writes.count(g_); },
        fmt::format("touches {} between its accumulation and the nest", g_));
    for (const LeafRead& lr : leaves_) same_value(lr.node, a_.rank_src[lr.pos], nest_pos_, "the nest");
    for (std::size_t t = 0; t < T_.size(); ++t) {
      if (t == nest_pos_) continue;
      for (const std::string& n : tcensus_[nest_pos_].writes)
        require(!target_only_.count(n) || (!tcensus_[t].writes.count(n) && !tcensus_[t].reads.count(n)),
                fmt::format("target statement {} touches the nest's {}", t + 1, n));
    }
    for (const std::string& n : tcensus_[nest_pos_].writes)
      require(n == g_ || target_only_.count(n),
              fmt::format("the nest writes {}, besides {} and its own tiles", n, g_));
    statements_note_ = fmt::format(
        "statements: the target's {} top-level statements are the source's {} kept in order and {} new; the "
        "nest "
        "(statement {}) is the only new writer of {}, {}'s accumulation the only dropped one; no kept "
        "statement it moved "
        "across touches {} or writes what the nest reads ({} reads, none written by a dropped or new "
        "statement)",
        T_.size(), a_.kept.size(), T_.size() - a_.kept.size(), nest_pos_ + 1, g_, g_, g_, leaves_.size());
  }

  // No kept statement between the two places (ranks in [min, max)) is `bad`.
  template <typename Bad>
  void crossed(std::size_t r_src, std::size_t tgt_pos, Bad&& bad, const std::string& why) const {
    const std::size_t r_tgt = a_.rank_tgt[tgt_pos];
    for (std::size_t k = std::min(r_src, r_tgt); k < std::max(r_src, r_tgt); ++k)
      require(!bad(census_[a_.kept[k]]), fmt::format("kept statement {} {}", a_.kept[k] + 1, why));
  }

  // `node` holds at target statement `tgt_pos` what it held where the source read it (after `r_src`
  // kept statements): only kept statements write it, and none between the two places.
  void same_value(const std::string& node, std::size_t r_src, std::size_t tgt_pos, const char* reader) const {
    require(node != g_ && !target_only_.count(node), fmt::format("{} reads {}", reader, node));
    for (std::size_t i = 0; i < S_.size(); ++i)
      require(a_.kept_src[i] || !census_[i].writes.count(node),
              fmt::format("the dropped source statement {} writes {}, which {} reads", i + 1, node, reader));
    for (std::size_t t = 0; t < T_.size(); ++t)
      require(!a_.new_tgt[t] || !tcensus_[t].writes.count(node),
              fmt::format("the new target statement {} writes {}, which {} reads", t + 1, node, reader));
    crossed(
        r_src, tgt_pos, [&](const Census& c) { return c.writes.count(node) > 0; },
        fmt::format("writes {} between its read in the source and {}", node, reader));
  }

  // ---- the gradient's nest -----------------------------------------------------------------------

  void nest() {
    const StmtP& top = T_[nest_pos_];
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges;
    require_in_bounds(tgt_, *top, ranges);
    const Stmt* st = peel(top.get(), outer_);
    if (st->kind == StmtKind::For) {
      outer_.push_back(Loop{st->sym, st->from, st->to});
    } else {
      require(st->kind == StmtKind::Seq && !outer_.empty(),
              "the nest is not G's row loops around its row's statements");
    }
    const std::vector<StmtP>& R = st->body;
    require(R.size() >= 3, "the nest's row body is not a copy in, blocks and a copy back");
    // The copy-in: the first statement reading G.
    std::size_t ci = 0;
    while (ci < R.size() && !census_of(R[ci]).reads.count(g_)) ++ci;
    require(ci + 2 < R.size(), fmt::format("the nest does not copy {} into a tile before its blocks", g_));
    for (std::size_t c = 0; c < ci; ++c) copies_.push_back(R[c].get());
    gradient_tile(R[ci], R.back());
    std::size_t k = ci + 1;
    const std::size_t end = R.size() - 1;
    // The block loop: a loop around a block's several statements (one sequence in canonical form).
    if (R[k]->kind == StmtKind::For && R[k]->body.size() == 1 && R[k]->body[0]->kind == StmtKind::Seq) {
      const Stmt& blocks = *R[k++];
      require(blocks.from == 0 && blocks.to >= 0, "the block loop does not run from 0");
      full_ = blocks.to + 1;
      block_ = block(blocks.body[0]->body, Index{{Index::Term{1, blocks.sym}}, 0}, /*scaled=*/true);
    }
    if (k < end) {
      std::vector<StmtP> tail(R.begin() + static_cast<std::ptrdiff_t>(k),
                              R.begin() + static_cast<std::ptrdiff_t>(end));
      rem_ = block(tail, Index::fixed(full_ * block_), /*scaled=*/false);
      if (full_ == 0) block_ = rem_;
    }
    require(
        block_ >= 1 && full_ * block_ + rem_ == n_ && (full_ == 0 || rem_ < block_),
        fmt::format(
            "the nest runs {} block{} of {} and a tail of {} over {} pairs, not n div B blocks and n mod B",
            full_, full_ == 1 ? "" : "s", block_, rem_, n_));
  }

  // `for c { Tg[c, rows] = G[..] }` first and `for c { G[..] = Tg[c, rows] }` last; G's indices
  // the row loops and c, each over its whole axis.
  void gradient_tile(const StmtP& in, const StmtP& out) {
    require(in->kind == StmtKind::For && in->body.size() == 1,
            fmt::format("{}'s copy into its tile is not one loop", g_));
    chan_ = Loop{in->sym, in->from, in->to};
    const Stmt* ci = kBackward.under_loop(in, chan_.sym, chan_.from, chan_.to, "gradient copy");
    require(ci->kind == StmtKind::Set && ci->value->kind == ExprKind::Get && ci->value->name == g_,
            fmt::format("{}'s copy into its tile is not Tg = {}", g_, g_));
    tg_ = ci->name;
    gix_ = ci->indices;
    gat_ = ci->value->indices;
    require(target_only_.count(tg_) && node_of(tgt_, tg_).prec == node_of(src_, g_).prec &&
                ci->value->prec == node_of(src_, g_).prec,
            fmt::format("{}'s tile is not a node of the nest's own at its precision", g_));
    require(!gix_.empty() && gix_[0] == Index::iter(chan_.sym),
            "the gradient tile is not indexed first by its channel");
    for (std::size_t a = 1; a < gix_.size(); ++a)
      require(!gix_[a].mentions(chan_.sym), "the gradient tile's row part depends on the channel");
    std::vector<Loop> all = outer_;
    all.push_back(chan_);
    const AxisOf axes = plain_axes(tgt_, g_, gat_, all, "the gradient copy");
    require_bijection(all, axes, "the gradient copy");
    kBackward.set(kBackward.under_loop(out, chan_.sym, chan_.from, chan_.to, "gradient copy back"), g_, gat_,
                  get(tg_, gix_, node_of(src_, g_).prec), "gradient copy back");
    // The accumulation's symbols at the nest's: G's axes through its two index lists.
    for (const auto& [sym, axis] : g_axis_of_) by_[sym] = gat_[static_cast<std::size_t>(axis)];
  }

  // A tile the block writes over its cells: `for j { T[j, ..] = v }` — T the nest's own, at the
  // line's precision, indexed first by j and then by what does not depend on j.
  struct Tile {
    std::string node;
    std::vector<Index> idx;
  };
  Tile tile_of(const Stmt* s, const std::string& j, std::int64_t count, const char* what) const {
    const Stmt* st =
        kBackward.under_loop(std::shared_ptr<const Stmt>(s, [](const Stmt*) {}), j, 0, count - 1, what);
    require(st->kind == StmtKind::Set && target_only_.count(st->name) &&
                node_of(tgt_, st->name).prec == prec_ && st->name != tg_,
            fmt::format("the {} is not a tile of the nest's own at the line's precision", what));
    require(!st->indices.empty() && st->indices[0] == Index::iter(j),
            fmt::format("the {} is not indexed first by the block's cell", what));
    for (std::size_t a = 1; a < st->indices.size(); ++a)
      require(!st->indices[a].mentions(j), fmt::format("the {}'s row part depends on the cell", what));
    return Tile{st->name, st->indices};
  }

  // One block's statements, its pairs the inner index `off` (times B when `scaled`) plus the cell
  // j: returns its count of cells. Steps, one statement over the cells each: p's (T = 0, the
  // contraction, the line's links) and, for dQ and dK, dP's (DP = 0, its contraction), ds =
  // p·(dP − D) and the score gradient's links; then the accumulation. At most two `if`s, each
  // around the steps before a mask's where.
  std::int64_t block(const std::vector<StmtP>& B, Index off, bool scaled) {
    require(!B.empty(), "a block is empty");
    std::vector<const Stmt*> steps;
    std::vector<std::pair<const Stmt*, std::pair<std::size_t, std::size_t>>> guards;  // (if, [first, last))
    for (std::size_t i = 0; i + 1 < B.size(); ++i) {
      if (B[i]->kind == StmtKind::If) {
        const std::size_t first = steps.size();
        for (const StmtP& s : B[i]->body) steps.push_back(s.get());
        guards.push_back({B[i].get(), {first, steps.size()}});
      } else {
        steps.push_back(B[i].get());
      }
    }
    const std::size_t p_steps = links_.size() + 2, all = p_steps + (ds_ ? 3 + dlinks_.size() : 0);
    require(steps.size() == all,
            fmt::format("a block has {} steps before its accumulation, not {}", steps.size(), all));
    require(steps[0]->kind == StmtKind::For && steps[0]->from == 0 && steps[0]->to >= 0,
            "a block does not start with T = 0 over its cells");
    const std::string j = steps[0]->sym;
    const std::int64_t count = steps[0]->to + 1;
    const Tile t = tile_of(steps[0], j, count, "score tile");
    const ExprP cell = get(t.node, t.idx, prec_);
    kBackward.set(steps[0]->body[0].get(), t.node, t.idx, constant(0.0, prec_), "tile clearing");
    // The pair's indices: the accumulation's symbols at the nest's, the inner one off + j.
    if (scaled) off = Index{{Index::Term{count, off.terms[0].sym}}, 0};
    Index pair = off;
    pair.terms.push_back(Index::Term{1, j});
    std::map<std::string, Index> by = by_;
    by[inner_] = pair.canonical();
    // The scores' axis a at the pair.
    std::vector<Index> at_p;
    for (const std::string& sym : pair_sym_) at_p.push_back(by.at(sym));
    contraction_step(steps[1], j, count, cell, at_p, s_);
    // p's links, from the one reading S up to P.
    std::optional<std::pair<std::size_t, ExprP>> p_where;
    for (std::size_t i = 0; i < links_.size(); ++i) {
      const Link& lk = links_[links_.size() - 1 - i];
      const ExprP expected = substituted(lk.store->value, cell_map(lk.store->indices, at_p),
                                         [&](const Expr& g, const std::vector<Index>&) -> ExprP {
                                           return g.name == lk.prev ? cell : nullptr;
                                         });
      kBackward.set(kBackward.under_loop(std::shared_ptr<const Stmt>(steps[2 + i], [](const Stmt*) {}), j, 0,
                                         count - 1, "recomputed " + lk.store->name),
                    t.node, t.idx, expected, "recomputed " + lk.store->name);
      if (!p_where && expected->kind == ExprKind::Ternary && expected->ternop() == TernOp::Where &&
          same(expected->args[1], cell) && !reads(expected->args[0], t.node) &&
          !reads(expected->args[2], t.node))
        p_where = std::make_pair(2 + i, expected->args[0]);
    }
    ExprP scalar = cell;
    std::optional<std::pair<std::size_t, ExprP>> ds_where;
    if (ds_) scalar = score_gradient_steps(steps, p_steps, j, count, cell, at_p, ds_where);
    // At most one guard around the steps before each where.
    for (const auto& [guard, range] : guards) {
      const auto& where = range.first == 0 ? p_where : ds_where;
      require(where && range.first == (range.first == 0 ? 0 : p_steps) && range.second == where->first,
              "a block's guarded steps are not exactly the ones before a mask's where(pred, T, fill)");
      skip_guard(*guard, where->second, j, count);
    }
    // Tg[c, rows] += Y·X at the pair, for every c.
    const Stmt* acc = kBackward.under_loop(B.back(), chan_.sym, chan_.from, chan_.to, "accumulation");
    const ExprP expected =
        substituted(acc_store_->value, by, [&](const Expr& g, const std::vector<Index>&) -> ExprP {
          if (g.name == g_) return get(tg_, gix_, g.prec);
          if (g.name == scalar_) return scalar;
          return nullptr;
        });
    kBackward.set(kBackward.under_loop(std::shared_ptr<const Stmt>(acc, [](const Stmt*) {}), j, 0, count - 1,
                                       "accumulation"),
                  tg_, gix_, expected, "accumulation");
    return count;
  }

  // A store's symbols (plain, one per axis of the scores' shape) -> the pair's indices.
  static std::map<std::string, Index> cell_map(const std::vector<Index>& store,
                                               const std::vector<Index>& at_p) {
    std::map<std::string, Index> by;
    for (std::size_t a = 0; a < store.size(); ++a) by[store[a].terms[0].sym] = at_p[a];
    return by;
  }

  // DP = 0, its contraction, ds = p·(dP − D), then the score gradient's links from the one reading
  // ng up to the scalar: returns the scalar's cell; `where` the first link `0 + where(pred, ds, 0)`.
  ExprP score_gradient_steps(const std::vector<const Stmt*>& steps, std::size_t k, const std::string& j,
                             std::int64_t count, const ExprP& p_cell, const std::vector<Index>& at_p,
                             std::optional<std::pair<std::size_t, ExprP>>& where) {
    const Tile dpt = tile_of(steps[k], j, count, "probability gradient tile");
    require(dpt.node != p_cell->name, "the probability gradient's tile is the score tile");
    const ExprP dp_cell = get(dpt.node, dpt.idx, prec_);
    kBackward.set(steps[k]->body[0].get(), dpt.node, dpt.idx, constant(0.0, prec_),
                  "probability gradient clearing");
    contraction_step(steps[k + 1], j, count, dp_cell, at_p, dp_);
    // ds = p·(dP − D[row]), at the line's precision (a wider one, which the bound also covers, is
    // left to the term identity at the routine's sizes).
    {
      std::vector<Loop> none;
      const Stmt* st = peel(steps[k + 2], none);
      require(
          st->kind != StmtKind::Set || !st->value || st->value->prec == prec_,
          fmt::format(
              "the block's score gradient is computed at {}, wider than the line's {}: this lift covers one "
              "precision",
              st->value ? prec_name(st->value->prec) : "?", prec_name(prec_)));
    }
    const Tile dst = tile_of(steps[k + 2], j, count, "score gradient tile");
    require(dst.node != p_cell->name, "the score gradient's tile is the score tile");
    const ExprP ds_cell = get(dst.node, dst.idx, prec_);
    const Stmt* ds = steps[k + 2]->body[0].get();
    const ExprP& v = ds->value;
    require(v->kind == ExprKind::Binary && v->binop() == BinOp::Mul && v->prec == prec_,
            "the block's score gradient is not p·(dP − D)");
    const ExprP diff = same(v->args[0], p_cell)   ? v->args[1]
                       : same(v->args[1], p_cell) ? v->args[0]
                                                  : nullptr;
    require(diff && diff->kind == ExprKind::Binary && diff->binop() == BinOp::Sub && diff->prec == prec_ &&
                same(diff->args[0], dp_cell) && diff->args[1]->kind == ExprKind::Get &&
                target_only_.count(diff->args[1]->name) && diff->args[1]->prec == prec_,
            "the block's score gradient is not p·(dP − D) with D a row dot of the target's own");
    rowdot(diff->args[1]->name, diff->args[1]->indices, at_p);
    // The links, each the source's with its own cell read as 0 and the previous link's as ds.
    for (std::size_t i = 0; i < dlinks_.size(); ++i) {
      const Accumulation& lk = dlinks_[dlinks_.size() - 1 - i];
      const ExprP expected = substituted(lk.store->value, cell_map(lk.store->indices, at_p),
                                         [&](const Expr& g, const std::vector<Index>&) -> ExprP {
                                           if (g.name == lk.node)
                                             return constant(0.0, node_of(src_, lk.node).prec);
                                           return g.name == lk.prev ? ds_cell : nullptr;
                                         });
      kBackward.set(kBackward.under_loop(std::shared_ptr<const Stmt>(steps[k + 3 + i], [](const Stmt*) {}), j,
                                         0, count - 1, "score gradient link " + lk.node),
                    dst.node, dst.idx, expected, "score gradient link " + lk.node);
      const ExprP& w = lk.f;
      if (!where && w->kind == ExprKind::Ternary && w->ternop() == TernOp::Where)
        where = std::make_pair(k + 3 + i, substituted(w->args[0], cell_map(lk.store->indices, at_p)));
    }
    return ds_cell;
  }

  // D: written by one new statement before the nest, D[rows] = Σ_e dO[rows, e]·O[rows, e] from 0
  // through a local at the line's precision, the pair's row holding the output-gradient cells the
  // pair's dP reads (the same e range), each with O at its own cell.
  void rowdot(const std::string& d, const std::vector<Index>& at_row, const std::vector<Index>& at_p) {
    std::vector<std::size_t> writers;
    for (std::size_t t = 0; t < T_.size(); ++t)
      if (tcensus_[t].writes.count(d)) writers.push_back(t);
    require(writers.size() == 1 && a_.new_tgt[writers[0]] && writers[0] < nest_pos_,
            fmt::format("{} is not written by one new statement before the nest", d));
    rowdot_pos_ = writers[0];
    std::vector<Loop> rows;
    const Stmt* st = peel(T_[rowdot_pos_].get(), rows);
    require(st->kind == StmtKind::Seq && st->body.size() == 4,
            fmt::format("{}'s statement is not a row dot", d));
    const std::vector<StmtP>& R = st->body;
    require(R[0]->kind == StmtKind::DeclareLocal && R[0]->prec == prec_,
            "the row dot's sum is not a local at the line's precision");
    const std::string acc = R[0]->name;
    kBackward.set_local(R[1], acc, constant(0.0, prec_), "row dot's start");
    require(
        R[2]->kind == StmtKind::For && R[2]->body.size() == 1 && R[2]->body[0]->kind == StmtKind::SetLocal,
        "the row dot's sum is not one loop");
    const Loop e{R[2]->sym, R[2]->from, R[2]->to};
    const ExprP& v = R[2]->body[0]->value;
    const ExprP term = other_operand_local(v, acc);
    require(R[2]->body[0]->name == acc && term && v->prec == prec_ && term->kind == ExprKind::Binary &&
                term->binop() == BinOp::Mul && term->prec == prec_,
            "the row dot does not add products into its sum");
    const int o_at = term->args[0]->kind == ExprKind::Get && term->args[0]->name == roles_.o ? 0 : 1;
    const ExprP& o = term->args[static_cast<std::size_t>(o_at)];
    const ExprP& dout = term->args[static_cast<std::size_t>(1 - o_at)];
    require(o->kind == ExprKind::Get && o->name == roles_.o && dout->kind == ExprKind::Get &&
                dout->name == roles_.d_out && same_indices(o->indices, dout->indices) &&
                node_of(src_, roles_.o).dims == node_of(src_, roles_.d_out).dims,
            fmt::format("the row dot's products are not {}·{} at one cell", roles_.d_out, roles_.o));
    require(R[3]->kind == StmtKind::Set && R[3]->name == d && R[3]->value->kind == ExprKind::GetLocal &&
                R[3]->value->name == acc && node_of(tgt_, d).prec == prec_,
            fmt::format("{} is not stored from the row dot's sum", d));
    const AxisOf d_axes = plain_axes(tgt_, d, R[3]->indices, rows, "the row dot");
    require_bijection(rows, d_axes, "the row dot");
    // The pair's row: the dO cells over e are those dP's contraction reads over its reduced loop.
    const Loop& red = dp_.reduced[0];
    require(e.from == red.from && e.to == red.to, "the row dot does not run over dP's value columns");
    const std::string rho = "\x01e";
    std::map<std::string, Index> at_pair_row = {{e.sym, Index::iter(rho)}};
    for (const auto& [sym, axis] : d_axes) at_pair_row[sym] = at_row[static_cast<std::size_t>(axis)];
    std::map<std::string, Index> dp_by = {{red.sym, Index::iter(rho)}};
    for (const auto& [sym, axis] : dp_.axis_of) dp_by[sym] = at_p[static_cast<std::size_t>(axis)];
    const ExprP prod = reduction_product(*dp_.store);
    const ExprP& src_dout = prod->args[0]->kind == ExprKind::Get && prod->args[0]->name == roles_.d_out
                                ? prod->args[0]
                                : prod->args[1];
    require(src_dout->kind == ExprKind::Get && src_dout->name == roles_.d_out,
            fmt::format("{}'s contraction does not read {}", roles_.d_p, roles_.d_out));
    require(same(substituted(dout, at_pair_row), substituted(src_dout, dp_by)),
            "the row dot's row is not the output-gradient row the pair's dP reads");
    width_ = e.to - e.from + 1;
    // dO as dP read it, O as the source ends with it.
    same_value(roles_.d_out, a_.rank_src[dp_.pos], rowdot_pos_, "the row dot");
    same_value(roles_.o, a_.kept.size(), rowdot_pos_, "the row dot");
  }

  static ExprP other_operand_local(const ExprP& v, const std::string& local) {
    if (!v || v->kind != ExprKind::Binary || v->binop() != BinOp::Add) return nullptr;
    const bool a = v->args[0]->kind == ExprKind::GetLocal && v->args[0]->name == local;
    const bool b = v->args[1]->kind == ExprKind::GetLocal && v->args[1]->name == local;
    if (a == b) return nullptr;
    return a ? v->args[1] : v->args[0];
  }

  // `if live` around steps before a where: live is its predicate where it is true longest.
  void skip_guard(const Stmt& guard, const ExprP& pred, const std::string& j, std::int64_t count) {
    const int dir = predicate_direction(pred, j);
    require(dir != 2, "the mask's predicate is not monotone in the block's cell");
    const ExprP live = substituted(pred, {{j, Index::fixed(dir > 0 ? count - 1 : 0)}});
    require(same(guard.value, live),
            "a block's skip guard is not the mask's predicate at its cell where it is true longest");
    skips_ = true;
  }

  // T += a·b over the reduced loops of contraction `c`, a row operand read from its copy.
  void contraction_step(const Stmt* s, const std::string& j, std::int64_t count, const ExprP& cell,
                        const std::vector<Index>& at_p, const Accumulation& c) {
    const Stmt* body = kBackward.under_loop(std::shared_ptr<const Stmt>(s, [](const Stmt*) {}), j, 0,
                                            count - 1, "contraction of " + c.node);
    std::vector<Loop> loops;
    const Stmt* st = peel(body, loops);
    require(loops.size() == c.reduced.size(),
            fmt::format("the block's contraction of {} does not run over its reduced loops", c.node));
    std::map<std::string, Index> by;
    for (const auto& [sym, axis] : c.axis_of) by[sym] = at_p[static_cast<std::size_t>(axis)];
    for (std::size_t r = 0; r < c.reduced.size(); ++r) {
      require(loops[r].from == c.reduced[r].from && loops[r].to == c.reduced[r].to,
              fmt::format("the block's contraction of {} does not run over its reduced loops", c.node));
      by[c.reduced[r].sym] = Index::iter(loops[r].sym);
    }
    const ExprP prod = reduction_product(*c.store);
    // Each factor read directly or from one of its copies (the tier copies a row once per block
    // form it emits).
    const std::vector<ExprP> a = factor_reads(prod->args[0], by, loops, c),
                             b = factor_reads(prod->args[1], by, loops, c);
    bool found = false;
    for (const ExprP& fa : a)
      for (const ExprP& fb : b)
        found = found || (st->kind == StmtKind::Set && st->name == cell->name &&
                          same_indices(st->indices, cell->indices) &&
                          same(st->value, binary(BinOp::Add, cell, binary(BinOp::Mul, fa, fb, prod->prec),
                                                 c.store->value->prec)));
    require(found,
            fmt::format("the fused backward's contraction of {} is not what the fused backward computes",
                        c.node));
  }

  // A factor of a contraction at the pair, and its reads from the copies made before the blocks
  // (`for dc in a..b { C[dc, ..] = f(dc) }` over a range holding the reduced loop's, C the nest's
  // own and written nowhere else).
  std::vector<ExprP> factor_reads(const ExprP& f, const std::map<std::string, Index>& by,
                                  const std::vector<Loop>& loops, const Accumulation& c) const {
    std::vector<ExprP> out = {substituted(f, by)};
    if (c.reduced.size() != 1) return out;
    const Loop& red = c.reduced[0];
    for (const Stmt* cp : copies_) {
      if (cp->kind != StmtKind::For || cp->body.size() != 1 || cp->from > red.from || cp->to < red.to)
        continue;
      const Stmt* st = cp->body[0].get();
      if (st->kind != StmtKind::Set || !target_only_.count(st->name) || st->indices.empty() ||
          !(st->indices[0] == Index::iter(cp->sym)) || node_of(tgt_, st->name).prec != f->prec)
        continue;
      std::map<std::string, Index> at_copy = by;
      at_copy[red.sym] = Index::iter(cp->sym);
      if (!same(st->value, substituted(f, at_copy))) continue;
      bool rows_only = true;
      for (std::size_t a = 1; a < st->indices.size(); ++a)
        rows_only = rows_only && !st->indices[a].mentions(cp->sym);
      if (!rows_only || copy_writers(st->name) != 1) continue;
      std::vector<Index> idx;
      for (const Index& i : st->indices) idx.push_back(i.substituted({{cp->sym, Index::iter(loops[0].sym)}}));
      out.push_back(get(st->name, idx, f->prec));
    }
    return out;
  }

  int copy_writers(const std::string& node) const {
    int n = 0;
    for_each_stmt(T_[nest_pos_], [&](const Stmt& s) { n += s.kind == StmtKind::Set && s.name == node; });
    return n;
  }

  const Routine& src_;
  const Routine& tgt_;
  std::vector<StmtP> S_, T_;
  std::vector<Census> census_, tcensus_;
  const osm::BackwardRoles& roles_;
  std::string g_, scalar_;
  bool ds_ = false;
  // source
  std::size_t acc_pos_ = 0;
  std::vector<Loop> acc_loops_;
  const Stmt* acc_store_ = nullptr;
  ExprP y_read_;
  AxisOf g_axis_of_, eg_axes_;
  const Stmt* eg_store_ = nullptr;
  std::vector<std::string> pair_sym_;  // the accumulation's symbol at each axis of the scores' shape
  std::string inner_, e_, l_;
  std::vector<int> l_rows_;
  std::int64_t n_ = 0, keys_ = 0, width_ = 0;
  Prec prec_ = Prec::F32;
  std::vector<Link> links_;  // P's line, from its definition down
  Accumulation s_, dp_, ng_, lg_;
  std::vector<Accumulation> dlinks_;  // the score gradient's links, from the scalar down
  std::vector<LeafRead> leaves_;
  // target
  Alignment a_;
  std::set<std::string> target_only_;
  std::size_t nest_pos_ = 0, rowdot_pos_ = 0;
  std::vector<Loop> outer_;
  Loop chan_;
  std::vector<const Stmt*> copies_;
  std::string tg_;
  std::vector<Index> gix_, gat_;
  std::map<std::string, Index> by_;  // the accumulation's symbols (but the inner one) -> the nest's
  std::int64_t full_ = 0, block_ = 0, rem_ = 0;
  bool skips_ = false;
  std::string statements_note_;
};

}  // namespace

BackwardLift lift_fused_backward(const Routine& src, const Routine& tgt, const osm::BackwardRoles& roles,
                                 const std::string& gradient) {
  static RoutinePairMemo<BackwardLift> proved(4096);
  std::string key = gradient;
  for (const auto& [role, node] : osm::matched_roles(roles)) key += "|" + role + "=" + node;
  if (std::optional<BackwardLift> known = proved.find(src, tgt, key)) return *known;
  BackwardLift lift = BackwardLifter(canonical_blocks(src), canonical_blocks(tgt), roles, gradient).run();
  if (lift.proved) proved.put(src, tgt, key, lift);
  return lift;
}

}  // namespace fp::verify
