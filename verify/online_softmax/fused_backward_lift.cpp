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
void require_in_bounds(const Routine& r, const Stmt& s, std::map<std::string, std::pair<std::int64_t, std::int64_t>>& ranges) {
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
              fmt::format("an access of {} is not within its axis {} (0..{}) for every iteration", node, a, n.dims[a] - 1));
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

class DvLifter {
 public:
  DvLifter(const Routine& src, const Routine& tgt, std::string gradient, std::string scalar, std::string operand)
      : src_(src),
        tgt_(tgt),
        S_(top_level_statements(src)),
        T_(top_level_statements(tgt)),
        g_(std::move(gradient)),
        p_(std::move(scalar)),
        x_(std::move(operand)) {
    for (const StmtP& s : S_) census_.push_back(census_of(s));
    for (const StmtP& s : T_) tcensus_.push_back(census_of(s));
  }

  BackwardLift run() {
    BackwardLift res;
    ScopedPhase phase("all-sizes lift");
    check_deadline("the fused backward's all-sizes lift");
    try {
      require(!g_.empty() && !p_.empty() && !x_.empty(), "the application records no dV, probabilities or output gradient");
      accumulation();
      line();
      align();
      nest();
      res.steps.push_back(fmt::format(
          "structure: {} accumulates {}·{} over the inner axis (n = {} here), {} the line of {} pointwise step{} over the "
          "contraction {}; the target's nest recomputes {} per pair in tiles, in blocks of B = {} ({} full block{}{}{}), "
          "each link the source's definition at the pair, and adds the same products in the same order; every index "
          "of the scores' shape a plain loop symbol over a whole axis, the block constants the inner extent's",
          g_, p_, x_, n_, p_, links_.size(), links_.size() == 1 ? "" : "s", s_, p_, block_, full_,
          full_ == 1 ? "" : "s", rem_ > 0 ? fmt::format(", a tail of {}", rem_) : "",
          skips_ ? ", skipping blocks the mask hides" : ""));
      res.steps.push_back(statements_note_);
      if (skips_)
        res.steps.push_back(
            "skipped steps: a block's steps before the mask's where run under the predicate at its cell where it is true "
            "longest (the predicate monotone in the block's cell), so a skipped block has the predicate false at every "
            "cell and the where gives the fill whatever the tile held");
      res.proved = true;
      res.pairs = n_;
      res.block = block_;
      res.tail = rem_ > 0;
      res.skips = skips_;
    } catch (const NotLifted& e) {
      res.why_not = e.what();
      res.steps.push_back(std::string("all-sizes lift not established: ") + e.what());
    }
    return res;
  }

 private:
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

  // G[c] = add(G[c], mul(P[..], X[..])): G's axes and the inner loop.
  void accumulation() {
    std::optional<std::size_t> found;
    for (std::size_t i : writers_of(g_)) {
      std::vector<Loop> loops;
      const Stmt* st = peel(S_[i].get(), loops);
      const ExprP prod = reduction_product(*st);
      if (!prod || st->name != g_) continue;
      const bool p_first = prod->args[0]->kind == ExprKind::Get && prod->args[0]->name == p_;
      const bool p_second = prod->args[1]->kind == ExprKind::Get && prod->args[1]->name == p_;
      if (p_first == p_second) continue;
      require(!found, fmt::format("{} is accumulated from {} by two nests", g_, p_));
      found = i;
      acc_loops_ = loops;
      acc_store_ = st;
      p_read_ = prod->args[p_first ? 0 : 1];
    }
    require(found.has_value(), fmt::format("no nest accumulates {} = add({}, mul({}, ·))", g_, g_, p_));
    acc_pos_ = *found;
    const Node& g = node_of(src_, g_);
    require(acc_store_->value->prec == g.prec, fmt::format("{}'s accumulation is not at {}'s precision", g_, g_));
    g_axis_of_ = plain_axes(src_, g_, acc_store_->indices, acc_loops_, "dV's accumulation");
    std::vector<Loop> inner;
    for (const Loop& l : acc_loops_)
      if (!g_axis_of_.count(l.sym)) inner.push_back(l);
    require(inner.size() == 1, fmt::format("{}'s accumulation does not run over exactly one loop besides {}'s axes", g_, g_));
    inner_ = inner[0].sym;
    require(inner[0].from == 0 && inner[0].to >= 0, "the inner loop does not run from 0 at least once");
    n_ = inner[0].to + 1;
    p_axis_of_ = plain_axes(src_, p_, p_read_->indices, acc_loops_, "dV's accumulation");
    require(p_axis_of_.count(inner_) == 1, fmt::format("{} is not read along the inner loop", p_));
    for (std::size_t a = 0; a < p_read_->indices.size(); ++a) p_sym_.push_back(p_read_->indices[a].terms[0].sym);
    require(!mentions(acc_store_->indices, inner_), "dV's cell depends on the inner loop");
    leaves_of(acc_store_->value, acc_pos_, {g_, p_});
  }

  // P's definition through single-writer pointwise nests of P's shape down to `zero S` and S's
  // contraction.
  void line() {
    const Node& pn = node_of(src_, p_);
    prec_ = pn.prec;
    require(is_float(prec_), fmt::format("{} is not at a floating-point precision", p_));
    std::string node = p_;
    for (int guard = 0;; ++guard) {
      require(guard < 64, fmt::format("{}'s line does not end", p_));
      const Node& nd = node_of(src_, node);
      require(nd.dims == pn.dims && nd.prec == prec_ && !nd.is_input,
              fmt::format("{} in {}'s line is not a computed node of its shape at {}", node, p_, prec_name(prec_)));
      const std::vector<std::size_t> w = writers_of(node);
      if (w.size() == 2 && S_[w[0]]->kind == StmtKind::Zero && S_[w[0]]->name == node) {
        contraction(node, w[0], w[1]);
        break;
      }
      require(w.size() == 1, fmt::format("{} in {}'s line has {} writers", node, p_, w.size()));
      Link lk;
      lk.pos = w[0];
      lk.store = peel(S_[w[0]].get(), lk.loops);
      require(lk.store->kind == StmtKind::Set && lk.store->name == node && lk.store->value &&
                  lk.store->value->prec == prec_,
              fmt::format("{}'s definition is not one pointwise store at {}", node, prec_name(prec_)));
      const AxisOf axes = plain_axes(src_, node, lk.store->indices, lk.loops, "a link of the line");
      require_bijection(lk.loops, axes, "a link of the line");
      for_each_expr(lk.store->value, [&](const Expr& g) {
        if (g.kind != ExprKind::Get) return;
        const Node* r = src_.find_node(g.name);
        if (!r || r->is_input || r->dims != pn.dims || writers_of(g.name).empty()) return;
        require(lk.prev.empty() || lk.prev == g.name, fmt::format("{}'s definition reads two computed nodes of its shape", node));
        require(same_indices(g.indices, lk.store->indices), fmt::format("{} reads {} at another cell", node, g.name));
        lk.prev = g.name;
      });
      require(!lk.prev.empty(), fmt::format("{}'s definition reads no computed node of its shape: no contraction under it", node));
      leaves_of(lk.store->value, lk.pos, {lk.prev});
      links_.push_back(lk);
      node = lk.prev;
    }
    // Each writer before its reader: zero S < S < the last link < … < P < the accumulation.
    std::size_t before = pos_s_;
    for (auto it = links_.rbegin(); it != links_.rend(); ++it) {
      require(it->pos > before, fmt::format("{}'s definition comes before the node it reads", it->store->name));
      before = it->pos;
    }
    require(pos_s_zero_ < pos_s_ && before < acc_pos_, fmt::format("{} is accumulated before {} is computed", g_, p_));
  }

  void contraction(const std::string& s, std::size_t zero_pos, std::size_t pos) {
    s_ = s;
    pos_s_zero_ = zero_pos;
    pos_s_ = pos;
    const Stmt* st = peel(S_[pos].get(), s_loops_);
    const ExprP prod = reduction_product(*st);
    require(prod && st->name == s && st->value->prec == prec_,
            fmt::format("{} is not one accumulation of a product at {}", s, prec_name(prec_)));
    s_store_ = st;
    s_axis_of_ = plain_axes(src_, s, st->indices, s_loops_, "the contraction");
    for (const Loop& l : s_loops_)
      if (!s_axis_of_.count(l.sym)) {
        require(l.from <= l.to, fmt::format("loop {} of the contraction into {} runs zero times", l.sym, s));
        reduced_.push_back(l);
      }
    require(s_axis_of_.size() == node_of(src_, s).dims.size(), "the contraction does not store one cell per iteration");
    for (const ExprP& f : prod->args) {
      bool reads_s = false;
      for_each_expr(f, [&](const Expr& g) { reads_s = reads_s || (g.kind == ExprKind::Get && g.name == s); });
      require(!reads_s, fmt::format("the contraction into {} reads {} in a factor", s, s));
      leaves_of(f, pos, {});
    }
  }

  // ---- the target's top-level statements ---------------------------------------------------------

  void align() {
    for (const Node& n : src_.nodes)
      if (const Node* t = tgt_.find_node(n.name)) require(*t == n, fmt::format("the target declares {} differently", n.name));
    for (const Node& n : tgt_.nodes)
      if (!src_.find_node(n.name)) {
        require(!n.is_input && !n.is_output, fmt::format("the target's new node {} is an input or an output", n.name));
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
      require(a_.kept_src[i] || i == acc_pos_,
              fmt::format("source statement {} writes {} and is dropped, besides its accumulation", i + 1, g_));
    const std::size_t r_nest = a_.rank_tgt[nest_pos_];
    // The kept statements the nest moved across: ranks in [min, max) of the two places.
    auto crossed = [&](std::size_t r_src, auto&& bad, const std::string& why) {
      for (std::size_t k = std::min(r_src, r_nest); k < std::max(r_src, r_nest); ++k)
        require(!bad(census_[a_.kept[k]]), fmt::format("kept statement {} {}", a_.kept[k] + 1, why));
    };
    crossed(a_.rank_src[acc_pos_], [&](const Census& c) { return c.reads.count(g_) || c.writes.count(g_); },
            fmt::format("touches {} between its accumulation and the nest", g_));
    for (const LeafRead& lr : leaves_) {
      require(lr.node != g_ && !target_only_.count(lr.node), fmt::format("{} reads {} in its line", p_, lr.node));
      for (std::size_t i = 0; i < S_.size(); ++i)
        require(a_.kept_src[i] || !census_[i].writes.count(lr.node),
                fmt::format("the dropped source statement {} writes {}, which the nest reads", i + 1, lr.node));
      for (std::size_t t = 0; t < T_.size(); ++t)
        require(!a_.new_tgt[t] || !tcensus_[t].writes.count(lr.node),
                fmt::format("the new target statement {} writes {}, which the nest reads", t + 1, lr.node));
      crossed(a_.rank_src[lr.pos], [&](const Census& c) { return c.writes.count(lr.node) > 0; },
              fmt::format("writes {} between its read in the source and the nest", lr.node));
    }
    for (std::size_t t = 0; t < T_.size(); ++t) {
      if (t == nest_pos_) continue;
      for (const std::string& n : tcensus_[nest_pos_].writes)
        require(!target_only_.count(n) || (!tcensus_[t].writes.count(n) && !tcensus_[t].reads.count(n)),
                fmt::format("target statement {} touches the nest's {}", t + 1, n));
    }
    for (const std::string& n : tcensus_[nest_pos_].writes)
      require(n == g_ || target_only_.count(n), fmt::format("the nest writes {}, besides {} and its own tiles", n, g_));
    statements_note_ = fmt::format(
        "statements: the target's {} top-level statements are the source's {} kept in order and {} new; the nest "
        "(statement {}) is the only new writer of {}, {}'s accumulation the only dropped one; no kept statement it moved "
        "across touches {} or writes what the line reads ({} reads, none written by a dropped or new statement)",
        T_.size(), a_.kept.size(), T_.size() - a_.kept.size(), nest_pos_ + 1, g_, g_, g_, leaves_.size());
  }

  // ---- the dV nest -------------------------------------------------------------------------------

  void nest() {
    const StmtP& top = T_[nest_pos_];
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges;
    require_in_bounds(tgt_, *top, ranges);
    const Stmt* st = peel(top.get(), outer_);
    if (st->kind == StmtKind::For) {
      outer_.push_back(Loop{st->sym, st->from, st->to});
    } else {
      require(st->kind == StmtKind::Seq && !outer_.empty(), "the nest is not G's row loops around its row's statements");
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
      std::vector<StmtP> tail(R.begin() + static_cast<std::ptrdiff_t>(k), R.begin() + static_cast<std::ptrdiff_t>(end));
      rem_ = block(tail, Index::fixed(full_ * block_), /*scaled=*/false);
      if (full_ == 0) block_ = rem_;
    }
    require(block_ >= 1 && full_ * block_ + rem_ == n_ && (full_ == 0 || rem_ < block_),
            fmt::format("the nest runs {} block{} of {} and a tail of {} over {} pairs, not n div B blocks and n mod B",
                        full_, full_ == 1 ? "" : "s", block_, rem_, n_));
  }

  // `for c { Tg[c, rows] = G[..] }` first and `for c { G[..] = Tg[c, rows] }` last; G's indices
  // the row loops and c, each over its whole axis.
  void gradient_tile(const StmtP& in, const StmtP& out) {
    require(in->kind == StmtKind::For && in->body.size() == 1, fmt::format("{}'s copy into its tile is not one loop", g_));
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
    require(!gix_.empty() && gix_[0] == Index::iter(chan_.sym), "the gradient tile is not indexed first by its channel");
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

  // One block's statements, its pairs the inner index `off` (times B when `scaled`) plus the cell
  // j: returns its count of cells.
  std::int64_t block(const std::vector<StmtP>& B, Index off, bool scaled) {
    require(!B.empty(), "a block is empty");
    // Flatten [if live { steps before the where }] steps… accumulation.
    std::vector<const Stmt*> steps;
    std::size_t guarded = 0;
    const Stmt* guard = nullptr;
    for (std::size_t i = 0; i + 1 < B.size(); ++i) {
      if (B[i]->kind == StmtKind::If) {
        require(i == 0 && !guard, "a block's guarded steps are not its first ones");
        guard = B[i].get();
        for (const StmtP& s : B[i]->body) steps.push_back(s.get());
        guarded = steps.size();
      } else {
        steps.push_back(B[i].get());
      }
    }
    require(steps.size() == links_.size() + 2,
            fmt::format("a block has {} steps before its accumulation, not T = 0, the contraction and {} link{}",
                        steps.size(), links_.size(), links_.size() == 1 ? "" : "s"));
    // T = 0 over the block's cells: j, the count, the tile and its cell.
    require(steps[0]->kind == StmtKind::For && steps[0]->from == 0 && steps[0]->to >= 0 && steps[0]->body.size() == 1,
            "a block does not start with T = 0 over its cells");
    const std::string j = steps[0]->sym;
    const std::int64_t count = steps[0]->to + 1;
    const Stmt* z = steps[0]->body[0].get();
    require(z->kind == StmtKind::Set && target_only_.count(z->name) && node_of(tgt_, z->name).prec == prec_,
            "a block's score tile is not a node of the nest's own at the line's precision");
    const std::string tile = z->name;
    require(tile != tg_, "the score tile is the gradient's tile");
    const std::vector<Index> tix = z->indices;
    require(!tix.empty() && tix[0] == Index::iter(j), "the score tile is not indexed first by the block's cell");
    for (std::size_t a = 1; a < tix.size(); ++a) require(!tix[a].mentions(j), "the score tile's row part depends on the cell");
    const ExprP cell = get(tile, tix, prec_);
    kBackward.set(z, tile, tix, constant(0.0, prec_), "tile clearing");
    // The pair's indices: the accumulation's symbols at the nest's, the inner one off + j.
    if (scaled) off = Index{{Index::Term{count, off.terms[0].sym}}, 0};
    Index pair = off;
    pair.terms.push_back(Index::Term{1, j});
    std::map<std::string, Index> by = by_;
    by[inner_] = pair.canonical();
    // P's axis a at the pair.
    std::vector<Index> at_p;
    for (const std::string& sym : p_sym_) at_p.push_back(by.at(sym));
    contraction_step(steps[1], j, count, cell, at_p);
    // The links, from the one reading S up to P.
    std::optional<std::size_t> where_at;
    ExprP pred;
    for (std::size_t i = 0; i < links_.size(); ++i) {
      const Link& lk = links_[links_.size() - 1 - i];
      std::map<std::string, Index> lby;
      for (std::size_t a = 0; a < lk.store->indices.size(); ++a) lby[lk.store->indices[a].terms[0].sym] = at_p[a];
      const ExprP expected = substituted(lk.store->value, lby, [&](const Expr& g, const std::vector<Index>&) -> ExprP {
        return g.name == lk.prev ? cell : nullptr;
      });
      kBackward.set(kBackward.under_loop(std::shared_ptr<const Stmt>(steps[2 + i], [](const Stmt*) {}), j, 0, count - 1,
                                         "recomputed " + lk.store->name),
                    tile, tix, expected, "recomputed " + lk.store->name);
      if (!where_at && expected->kind == ExprKind::Ternary && expected->ternop() == TernOp::Where &&
          same(expected->args[1], cell) && !reads(expected->args[0], tile) && !reads(expected->args[2], tile)) {
        where_at = 2 + i;
        pred = expected->args[0];
      }
    }
    if (guard) skip_guard(*guard, guarded, where_at, pred, j, count);
    // Tg[c, rows] += T·X at the pair, for every c.
    const Stmt* acc = kBackward.under_loop(B.back(), chan_.sym, chan_.from, chan_.to, "accumulation");
    const ExprP expected = substituted(acc_store_->value, by, [&](const Expr& g, const std::vector<Index>&) -> ExprP {
      if (g.name == g_) return get(tg_, gix_, g.prec);
      if (g.name == p_) return cell;
      return nullptr;
    });
    kBackward.set(kBackward.under_loop(std::shared_ptr<const Stmt>(acc, [](const Stmt*) {}), j, 0, count - 1,
                                       "accumulation"),
                  tg_, gix_, expected, "accumulation");
    return count;
  }

  static bool reads(const ExprP& e, const std::string& node) {
    bool found = false;
    for_each_expr(e, [&](const Expr& g) { found = found || (g.kind == ExprKind::Get && g.name == node); });
    return found;
  }

  // `if live` around the steps before the where: live is the predicate where it is true longest.
  void skip_guard(const Stmt& guard, std::size_t guarded, std::optional<std::size_t> where_at, const ExprP& pred,
                  const std::string& j, std::int64_t count) {
    require(where_at && guarded == *where_at,
            "a block's guarded steps are not exactly the ones before the mask's where(pred, T, fill)");
    const int dir = predicate_direction(pred, j);
    require(dir != 2, "the mask's predicate is not monotone in the block's cell");
    const ExprP live = substituted(pred, {{j, Index::fixed(dir > 0 ? count - 1 : 0)}});
    require(same(guard.value, live), "a block's skip guard is not the mask's predicate at its cell where it is true longest");
    skips_ = true;
  }

  // T += a·b over the reduced loops, the row operand read from its copy.
  void contraction_step(const Stmt* s, const std::string& j, std::int64_t count, const ExprP& cell,
                        const std::vector<Index>& at_p) {
    const Stmt* body = kBackward.under_loop(std::shared_ptr<const Stmt>(s, [](const Stmt*) {}), j, 0, count - 1,
                                            "contraction");
    std::vector<Loop> loops;
    const Stmt* st = peel(body, loops);
    require(loops.size() == reduced_.size(), "the block's contraction does not run over the contraction's reduced loops");
    std::map<std::string, Index> by;
    for (const auto& [sym, axis] : s_axis_of_) by[sym] = at_p[static_cast<std::size_t>(axis)];
    for (std::size_t r = 0; r < reduced_.size(); ++r) {
      require(loops[r].from == reduced_[r].from && loops[r].to == reduced_[r].to,
              "the block's contraction does not run over the contraction's reduced loops");
      by[reduced_[r].sym] = Index::iter(loops[r].sym);
    }
    const ExprP prod = reduction_product(*s_store_);
    // Each factor read directly or from one of its copies (the tier copies a row once per block
    // form it emits).
    const std::vector<ExprP> a = factor_reads(prod->args[0], by, loops), b = factor_reads(prod->args[1], by, loops);
    bool found = false;
    for (const ExprP& fa : a)
      for (const ExprP& fb : b)
        found = found || (st->kind == StmtKind::Set && st->name == cell->name && same_indices(st->indices, cell->indices) &&
                          same(st->value, binary(BinOp::Add, cell, binary(BinOp::Mul, fa, fb, prod->prec),
                                                 s_store_->value->prec)));
    require(found, "the fused backward's contraction is not what the fused backward computes");
  }

  // A factor of the contraction at the pair, and its reads from the copies made before the blocks
  // (`for dc in a..b { C[dc, ..] = f(dc) }` over a range holding the reduced loop's, C the nest's
  // own and written nowhere else).
  std::vector<ExprP> factor_reads(const ExprP& f, const std::map<std::string, Index>& by,
                                  const std::vector<Loop>& loops) const {
    std::vector<ExprP> out = {substituted(f, by)};
    if (reduced_.size() != 1) return out;
    for (const Stmt* c : copies_) {
      if (c->kind != StmtKind::For || c->body.size() != 1 || c->from > reduced_[0].from || c->to < reduced_[0].to) continue;
      const Stmt* st = c->body[0].get();
      if (st->kind != StmtKind::Set || !target_only_.count(st->name) || st->indices.empty() ||
          !(st->indices[0] == Index::iter(c->sym)) || node_of(tgt_, st->name).prec != f->prec)
        continue;
      std::map<std::string, Index> at_copy = by;
      at_copy[reduced_[0].sym] = Index::iter(c->sym);
      if (!same(st->value, substituted(f, at_copy))) continue;
      bool rows_only = true;
      for (std::size_t a = 1; a < st->indices.size(); ++a) rows_only = rows_only && !st->indices[a].mentions(c->sym);
      if (!rows_only || copy_writers(st->name) != 1) continue;
      std::vector<Index> idx;
      for (const Index& i : st->indices) idx.push_back(i.substituted({{c->sym, Index::iter(loops[0].sym)}}));
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
  std::string g_, p_, x_;
  // source
  std::size_t acc_pos_ = 0, pos_s_zero_ = 0, pos_s_ = 0;
  std::vector<Loop> acc_loops_, s_loops_, reduced_;
  const Stmt* acc_store_ = nullptr;
  const Stmt* s_store_ = nullptr;
  ExprP p_read_;
  AxisOf g_axis_of_, p_axis_of_, s_axis_of_;
  std::vector<std::string> p_sym_;  // the accumulation's symbol at each axis of P
  std::string inner_, s_;
  std::int64_t n_ = 0;
  Prec prec_ = Prec::F32;
  std::vector<Link> links_;  // from P's definition down
  std::vector<LeafRead> leaves_;
  // target
  Alignment a_;
  std::set<std::string> target_only_;
  std::size_t nest_pos_ = 0;
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

BackwardLift lift_fused_backward_dv(const Routine& src, const Routine& tgt, const std::string& gradient,
                                    const std::string& scalar, const std::string& operand) {
  static RoutinePairMemo<BackwardLift> proved(4096);
  const std::string key = gradient + "|" + scalar + "|" + operand;
  if (std::optional<BackwardLift> known = proved.find(src, tgt, key)) return *known;
  BackwardLift lift = DvLifter(canonical_blocks(src), canonical_blocks(tgt), gradient, scalar, operand).run();
  if (lift.proved) proved.put(src, tgt, key, lift);
  return lift;
}

}  // namespace fp::verify
