#include "verify/online_softmax/fold_lift.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "core/ir_visit.h"
#include "core/numerics.h"
#include "core/support/deadline.h"
#include "rewrites/online_softmax/claims.h"
#include "verify/loop_nest.h"
#include "verify/online_softmax/block_skip_lemma.h"
#include "verify/online_softmax/composed_normalizer.h"
#include "verify/online_softmax/lift_support.h"
#include "verify/phase_clock.h"
#include "verify/program_equality.h"
#include "verify/routine_pair_memo.h"

namespace fp::verify {

namespace {

using namespace lift;

// What the target holds is compared with what the fold must be by lift::Expect (lift_support.h).
const Expect kFold{"the fold"};

// ---- the source's value pass and score chain ---------------------------------------------------

struct ChainStep {
  std::size_t pos = 0;            // top-level position
  std::vector<Loop> loops;
  const Stmt* store = nullptr;
  std::map<std::string, int> axis_of;  // loop symbol -> x axis
};

class FoldLifter : ComposedNormalizerReader {
 public:
  FoldLifter(const Routine& src, const Routine& tgt, const Application& app, const Limits& limits)
      : ComposedNormalizerReader(src), tgt_(tgt), app_(app), limits_(limits), T_(top_level_statements(tgt)) {}

  FoldLift run() {
    FoldLift res;
    ScopedPhase phase("all-sizes lift");
    check_deadline("the fold's all-sizes lift");
    try {
      const osm::FoldRoles roles = osm::fold_roles(app_);
      for (const auto& [node, what] : {std::pair{roles.x, "x"}, {roles.m, "m"}, {roles.l, "l"}, {roles.p, "p"},
                                       {roles.o, "o"}, {roles.v, "v"}})
        require(!node.empty(), fmt::format("the application records no node for the role {}", what));
      normalizer(roles);
      probabilities(roles.p);
      value_pass(roles.o, roles.v);
      score_chain();
      align();
      fold_nest();
      if (skips_) skip_lemma();
      res.steps.push_back(fmt::format(
          "structure: {} and {} the max fold and composed sum of {} over its key axis (sk = {} here), O = {} the value "
          "pass of e / l, the scores x the contraction {} through {} pointwise step{}; the target's fold reads the "
          "same scores block by block (bk = {}, {} block{}{}{}) and carries the recurrence at {}; every loop over a "
          "whole axis and every index a plain loop symbol, the block constants the key extent's",
          m_, l_, x_, n_terms_, o_, s_, chain_.size(), chain_.size() == 1 ? "" : "s", bk_, nkb_,
          nkb_ == 1 ? "" : "s", tail_ ? ", a guarded tail" : "", skips_ ? ", skipping masked blocks" : "",
          prec_name(q_)));
      res.steps.push_back(statements_note_);
      if (skips_) res.steps.push_back(skip_note_);
      res.proved = true;
      res.m = m_;
      res.l = l_;
      res.o = o_;
      res.m_stored = m_stored_;
      res.l_stored = l_stored_;
      res.keys = n_terms_;
      res.block = bk_;
      res.skips = skips_;
    } catch (const NotLifted& e) {
      res.why_not = e.what();
      res.steps.push_back(std::string("all-sizes lift not established: ") + e.what());
    }
    return res;
  }

 private:
  // ---- source ------------------------------------------------------------------------------------

  void normalizer(const osm::FoldRoles& roles) {
    x_ = roles.x;
    m_ = roles.m;
    // The max: the one top-level statement storing m = max(m, x).
    std::optional<std::size_t> anchor;
    for (std::size_t i = 0; i < S_.size(); ++i) {
      std::vector<Loop> loops;
      const Stmt* st = peel(S_[i].get(), loops);
      if (st->kind == StmtKind::Set && st->name == m_ && other_operand(st->value, BinOp::Max, *st)) {
        require(!anchor, fmt::format("{} is reduced by two max nests", m_));
        anchor = i;
      }
    }
    require(anchor.has_value(), fmt::format("no nest stores {} = max({}, {})", m_, m_, x_));
    pos_.anchor = *anchor;
    ComposedNormalizerReader::anchor();
    require(x_ == roles.x && m_ == roles.m, "the max does not reduce the application's scores into its row max");
    const std::string n = pointwise_of(x_, ExprKind::Binary, static_cast<std::uint8_t>(BinOp::Sub));
    require(!n.empty(), fmt::format("nothing stores {} - {}", x_, m_));
    const std::string e = pointwise_of(n, ExprKind::Unary, static_cast<std::uint8_t>(UnOp::Exp));
    require(!e.empty(), fmt::format("nothing stores exp({})", n));
    chain(n, e, roles.l);
    census();
    for (const Loop& l : anchor_loops_)
      if (x_axes_.at(l.sym) != t_axis_) rows_.push_back(l);
  }

  // P = div(e, l), pointwise at e's cells, its only writer.
  void probabilities(const std::string& p) {
    p_node_ = p;
    const std::vector<std::size_t> w = writers_of(p);
    require(w.size() == 1, fmt::format("{} has {} writers, not one", p, w.size()));
    pos_p_ = w[0];
    std::vector<Loop> loops;
    const Stmt* st = peel(S_[pos_p_].get(), loops);
    const ExprP& v = st->value;
    require(st->kind == StmtKind::Set && v && v->kind == ExprKind::Binary && v->binop() == BinOp::Div &&
                v->prec == p_ && v->args[0]->kind == ExprKind::Get && v->args[0]->name == e_ &&
                v->args[1]->kind == ExprKind::Get && v->args[1]->name == l_ && node_of(src_, p).prec == p_,
            fmt::format("{}'s definition is not {} = div({}, {}) at {}", p, p, e_, l_, prec_name(p_)));
    Step s = step_at(pos_p_, v->args[0], e_of_x_, "the probabilities");
    plain_axes(src_, l_, v->args[1]->indices, s.loops, "the probabilities");
    require(in_reference(v->args[1]->indices, s.ref) == l_of_x_, "the probabilities read l at another row");
    plain_axes(src_, p, st->indices, s.loops, "the probabilities");
    p_of_x_ = in_reference(st->indices, s.ref);
    require(p_of_x_.size() == x_rank_, "the probabilities do not have the scores' axes");
    require(pos_p_ > pos_.c, "the probabilities are computed before the sum");
  }

  // zero O, then O[..] = add(O[..], mul(P[..], v[..])) over P's axes and the value loops.
  void value_pass(const std::string& o, const std::string& v) {
    o_ = o;
    v_ = v;
    const std::vector<std::size_t> w = writers_of(o);
    require(w.size() == 2 && S_[w[0]]->kind == StmtKind::Zero && S_[w[0]]->name == o,
            fmt::format("{} is not written by `zero {}` and one accumulation", o, o));
    pos_zero_o_ = w[0];
    pos_vp_ = w[1];
    const Stmt* st = peel(S_[pos_vp_].get(), vp_loops_);
    const ExprP prod = reduction_product(*st);
    require(prod && st->value->prec == node_of(src_, o).prec,
            fmt::format("the value pass is not {} = add({}, mul(·, ·)) at {}'s precision", o, o, o));
    const bool p_first = prod->args[0]->kind == ExprKind::Get && prod->args[0]->name == p_node_;
    const ExprP pr = p_first ? prod->args[0] : prod->args[1];
    v_read_ = p_first ? prod->args[1] : prod->args[0];
    require(pr->kind == ExprKind::Get && pr->name == p_node_ && v_read_->kind == ExprKind::Get && v_read_->name == v,
            fmt::format("the value pass does not multiply {} by {}", p_node_, v));
    up_ = prod->prec;
    require(is_float(up_) && node_of(src_, o).prec == prod->prec && node_of(src_, v).prec == prod->prec &&
                st->value->prec == prod->prec,
            "the value pass is not at one floating-point precision");
    // P's loops: its axes (through P's axes, the scores'); the others index O only.
    for (const Loop& l : vp_loops_) {
      bool in_p = false;
      for (std::size_t a = 0; a < pr->indices.size(); ++a)
        if (pr->indices[a].mentions(l.sym)) {
          require(pr->indices[a].is_plain_iterator(), "the value pass reads the probabilities at a non-plain index");
          vp_axis_of_[l.sym] = p_of_x_[a];
          in_p = true;
        }
      if (!in_p) value_loops_.push_back(l);
    }
    plain_axes(src_, p_node_, pr->indices, vp_loops_, "the value pass");
    require(vp_axis_of_.size() == x_rank_, "the value pass does not read the probabilities over all their axes");
    require(!value_loops_.empty(), "the value pass has no value loop");
    // O's indices: each a plain loop symbol, the row axes and the value loops, each once.
    const Node& on = node_of(src_, o);
    require(st->indices.size() == on.dims.size(), "the value pass stores O at the wrong rank");
    std::set<std::string> seen;
    for (std::size_t a = 0; a < st->indices.size(); ++a) {
      const Index& i = st->indices[a];
      require(i.is_plain_iterator(), "the value pass stores O at a non-plain index");
      const std::string& sym = i.terms[0].sym;
      require(seen.insert(sym).second, "the value pass stores O with a loop twice");
      auto loop = std::find_if(vp_loops_.begin(), vp_loops_.end(), [&](const Loop& l) { return l.sym == sym; });
      require(loop != vp_loops_.end() && loop->from == 0 && loop->to == on.dims[a] - 1,
              "a loop of the value pass does not run over the whole axis of O it indexes");
      require(!vp_axis_of_.count(sym) || vp_axis_of_.at(sym) != t_axis_, "the value pass stores O along the key axis");
    }
    require(seen.size() + 1 == vp_loops_.size(), "the value pass's loops are not O's axes and the key");
    require(pos_zero_o_ < pos_vp_ && pos_p_ < pos_vp_, "zero O and the probabilities do not come before the value pass");
    for (std::size_t i = pos_zero_o_ + 1; i < pos_vp_; ++i)
      require(!census_[i].reads.count(o) && !census_[i].writes.count(o),
              fmt::format("top-level statement {} touches {} between its zero-out and the value pass", i + 1, o));
  }

  // x's definition through single-writer pointwise nests down to `zero S` and the contraction.
  void score_chain() {
    std::string node = x_;
    for (int guard = 0;; ++guard) {
      require(guard < 64, "the score chain does not end");
      const Node& nd = node_of(src_, node);
      require(nd.dims == node_of(src_, x_).dims && nd.prec == p_ && !nd.is_input,
              fmt::format("{} in the score chain is not a computed node of the scores' shape at {}", node,
                          prec_name(p_)));
      const std::vector<std::size_t> w = writers_of(node);
      if (w.size() == 2 && S_[w[0]]->kind == StmtKind::Zero && S_[w[0]]->name == node) {
        contraction(node, w[0], w[1]);
        return;
      }
      require(w.size() == 1, fmt::format("{} in the score chain has {} writers", node, w.size()));
      ChainStep step;
      step.pos = w[0];
      step.store = peel(S_[w[0]].get(), step.loops);
      require(step.store->kind == StmtKind::Set && step.store->value && step.store->value->prec == p_,
              fmt::format("{}'s definition is not one pointwise store at {}", node, prec_name(p_)));
      AxisOf axes = plain_axes(src_, node, step.store->indices, step.loops, "a score chain step");
      require_bijection(step.loops, axes, "a score chain step");
      step.axis_of = axes;
      // The one read of a node of the scores' shape computed in the routine: the next link.
      std::string next;
      for_each_expr(step.store->value, [&](const Expr& g) {
        if (g.kind != ExprKind::Get) return;
        const Node* r = src_.find_node(g.name);
        if (!r || r->is_input || r->dims != nd.dims || writers_of(g.name).empty()) return;
        require(next.empty() || next == g.name, fmt::format("{}'s definition reads two computed score nodes", node));
        require(same_indices(g.indices, step.store->indices), fmt::format("{} reads {} at another cell", node, g.name));
        next = g.name;
      });
      require(!next.empty(), fmt::format("{}'s definition reads no score node: no contraction under it", node));
      chain_.push_back(step);
      node = next;
    }
  }

  void contraction(const std::string& s, std::size_t zero_pos, std::size_t pos) {
    s_ = s;
    pos_s_zero_ = zero_pos;
    pos_s_ = pos;
    const Stmt* st = peel(S_[pos].get(), s_loops_);
    const ExprP prod = reduction_product(*st);
    require(prod && st->value->prec == p_ && prod->prec == p_ && prod->args[0]->kind == ExprKind::Get &&
                prod->args[1]->kind == ExprKind::Get,
            fmt::format("{} is not one accumulation of a product of two reads at {}", s, prec_name(p_)));
    s_store_ = st;
    for (std::size_t a = 0; a < st->indices.size(); ++a) {
      const Index& i = st->indices[a];
      require(i.is_plain_iterator(), fmt::format("{} is stored at a non-plain index", s));
      auto loop = std::find_if(s_loops_.begin(), s_loops_.end(), [&](const Loop& l) { return l.sym == i.terms[0].sym; });
      require(loop != s_loops_.end() && loop->from == 0 && loop->to == node_of(src_, s).dims[a] - 1,
              fmt::format("the contraction into {} does not write every cell of it", s));
      s_axis_of_[i.terms[0].sym] = static_cast<int>(a);
    }
    for (const Loop& l : s_loops_)
      if (!s_axis_of_.count(l.sym)) {
        require(l.from <= l.to, fmt::format("loop {} of the contraction into {} runs zero times", l.sym, s));
        reduced_.push_back(l);
      }
    require(s_axis_of_.size() == node_of(src_, s).dims.size(), "the contraction does not store one cell per iteration");
    std::string key_sym;
    for (const auto& [sym, axis] : s_axis_of_)
      if (axis == t_axis_) key_sym = sym;
    // The row operand: the first factor whose indices do not mention the key loop.
    for (int f : {0, 1}) {
      bool keyed = false;
      for (const Index& i : prod->args[static_cast<std::size_t>(f)]->indices) keyed = keyed || i.mentions(key_sym);
      if (!keyed) {
        row_factor_ = f;
        break;
      }
    }
    require(row_factor_ >= 0, "both factors of the contraction are read along the key: no row operand");
    require(pos_s_zero_ < pos_s_, "the contraction comes before its zero-out");
  }

  // ---- target's top-level statements -------------------------------------------------------------

  void align() {
    std::set<std::size_t> consumable = {pos_.a_init, pos_.anchor, pos_.n, pos_.e, pos_.c_init, pos_.c,
                                        pos_p_,      pos_zero_o_, pos_s_zero_, pos_s_};
    for (const ChainStep& c : chain_) consumable.insert(c.pos);
    std::set<std::string> target_only;
    for (const Node& n : tgt_.nodes)
      if (!src_.find_node(n.name)) {
        require(!n.is_input && !n.is_output, fmt::format("the target's new node {} is an input or an output", n.name));
        target_only.insert(n.name);
      }
    for (const Node& n : src_.nodes) {
      const Node* t = tgt_.find_node(n.name);
      if (t)
        require(*t == n, fmt::format("the target declares {} differently", n.name));
      else
        require(!n.is_input && !n.is_output, fmt::format("the target drops the input or output {}", n.name));
    }
    // Walk both lists: a source statement is kept (the target's next one, unchanged), or consumed;
    // the value pass's place holds [Z,] the fold and then the consumed statements moved behind it.
    struct Kept {
      std::size_t src;
      bool after_fold;
    };
    std::vector<Kept> kept;
    std::vector<std::size_t> skipped, removed;
    std::size_t j = 0;
    for (std::size_t i = 0; i < S_.size(); ++i) {
      if (i == pos_vp_) {
        require(j < T_.size(), "the target ends before the fold");
        if (j + 1 < T_.size() && !contains_scan(T_[j]) && contains_scan(T_[j + 1])) z_pos_ = j++;
        require(contains_scan(T_[j]), "the target has no fold nest where the value pass was");
        fold_pos_ = j++;
        for (std::size_t sk : skipped) {
          if (j < T_.size() && equal(S_[sk], T_[j])) {
            kept.push_back(Kept{sk, true});
            moved_.push_back(sk);
            ++j;
          } else {
            removed.push_back(sk);
          }
        }
        removed.push_back(pos_vp_);
        continue;
      }
      if (j < T_.size() && equal(S_[i], T_[j])) {
        kept.push_back(Kept{i, fold_pos_ != SIZE_MAX});
        ++j;
        continue;
      }
      require(consumable.count(i), fmt::format("source statement {} is not the target's statement {}", i + 1, j + 1));
      (fold_pos_ == SIZE_MAX ? skipped : removed).push_back(i);
    }
    require(fold_pos_ != SIZE_MAX, "the target has no fold nest");
    require(j == T_.size(), "the target has statements the source does not");
    auto is_moved = [&](std::size_t i) { return std::find(moved_.begin(), moved_.end(), i) != moved_.end(); };
    auto fold_written = [&](const std::string& n) { return n == m_ || n == l_ || n == o_; };
    // A removed statement's results are read by no kept statement after it, but the fold's (m, l,
    // O) read after the fold.
    for (std::size_t r : removed)
      for (const std::string& w : census_[r].writes)
        for (const Kept& k : kept)
          if (k.src > r && census_[k.src].reads.count(w))
            require(fold_written(w) && k.after_fold,
                    fmt::format("source statement {} is kept but reads {}, which the consumed statement {} wrote",
                                k.src + 1, w, r + 1));
    // A moved statement reads what it read in place (nothing kept in between writes it, but the
    // fold's m and l) and its results are read by nothing kept before the fold.
    for (std::size_t mv : moved_)
      for (const Kept& k : kept) {
        if (k.after_fold || k.src <= mv) continue;
        for (const std::string& r : census_[mv].reads)
          require(!census_[k.src].writes.count(r) || fold_written(r),
                  fmt::format("statement {} writes {}, which the moved statement {} reads", k.src + 1, r, mv + 1));
        for (const std::string& w : census_[mv].writes)
          require(!census_[k.src].reads.count(w),
                  fmt::format("statement {} reads {} before the moved statement {} writes it", k.src + 1, w, mv + 1));
      }
    for (const Kept& k : kept) {
      for (const std::string& w : census_[k.src].writes)
        require(!fold_written(w) && !target_only.count(w),
                fmt::format("kept statement {} writes {}, which the fold stores", k.src + 1, w));
      if (k.after_fold) {
        m_read_ = m_read_ || census_[k.src].reads.count(m_);
        l_read_ = l_read_ || census_[k.src].reads.count(l_);
      }
    }
    // The fold reads a, b, v and the chain's leaves where the value pass was: nothing kept between
    // the score contraction and the fold writes them.
    std::set<std::string> inputs = {v_};
    for (const ExprP& f : s_product()->args) inputs.insert(f->name);
    for (const ChainStep& c : chain_)
      for_each_expr(c.store->value, [&](const Expr& g) {
        if (g.kind == ExprKind::Get && !chain_node(g.name)) inputs.insert(g.name);
      });
    for (const Kept& k : kept)
      if (!k.after_fold && k.src > pos_s_zero_)
        for (const std::string& in : inputs)
          require(!census_[k.src].writes.count(in),
                  fmt::format("statement {} writes {}, which the fold reads, between the scores and the fold", k.src + 1,
                              in));
    m_stored_must_ = m_read_ || node_of(src_, m_).is_output;
    l_stored_must_ = l_read_ || node_of(src_, l_).is_output;
    // The fold's own nodes are touched only inside it (and Z inside its nest).
    for (std::size_t t = 0; t < T_.size(); ++t) {
      if (t == fold_pos_ || t == z_pos_) continue;
      const Census c = census_of(T_[t]);
      for (const std::string& n : target_only)
        require(!c.writes.count(n) && !c.reads.count(n), fmt::format("target statement {} touches the fold's {}", t + 1, n));
    }
    statements_note_ = fmt::format(
        "statements: the target's {} top-level statements are the source's {} kept in order, {}the fold (statement "
        "{}) where the value pass was and {} definition{} moved behind it, reading only the fold's row state of "
        "what the consumed statements wrote",
        T_.size(), kept.size() - moved_.size(), z_pos_ != SIZE_MAX ? "the zero sums, " : "", fold_pos_ + 1,
        moved_.size(), moved_.size() == 1 ? "" : "s");
    (void)is_moved;
  }

  static bool contains_scan(const StmtP& s) {
    bool found = false;
    for_each_stmt(s, [&](const Stmt& st) { found = found || st.kind == StmtKind::Scan; });
    return found;
  }
  bool chain_node(const std::string& n) const {
    if (n == s_) return true;
    for (const ChainStep& c : chain_)
      if (c.store->name == n) return true;
    return false;
  }
  ExprP s_product() const { return reduction_product(*s_store_); }

  // ---- the fold nest -----------------------------------------------------------------------------

  void fold_nest() {
    const Stmt* body = kFold.under_loops(T_[fold_pos_], rows_, "row loops");
    require(body->kind == StmtKind::Seq && !body->body.empty(), "the fold's row body is not a sequence");
    const std::vector<StmtP>& R = body->body;
    for (const Loop& r : rows_) row_idx_.push_back(Index::iter(r.sym));
    std::size_t k = 0;
    // The row operand's copy, when the contraction reduces over loops.
    if (!reduced_.empty()) row_copy(R.at(k++));
    require(R.size() == k + 3, "the fold's row body is not [copy,] U = 0, T = 0 and the scan");
    numerator_init(R[k]);
    tile_init(R[k + 1]);
    scan(R[k + 2]);
  }

  std::vector<Index> tile_idx(const Index& first) const {
    std::vector<Index> idx = {first};
    idx.insert(idx.end(), row_idx_.begin(), row_idx_.end());
    return idx;
  }

  void row_copy(const StmtP& s) {
    std::vector<Loop> loops;
    const Stmt* st = peel(s.get(), loops);
    require(loops.size() == reduced_.size() && st->kind == StmtKind::Set,
            "the row operand's copy is not one store over the contraction's reduced loops");
    q_tile_ = st->name;
    std::map<std::string, Index> by;  // the source nest's symbols -> the copy's
    Index cell;
    std::int64_t stride = 1;
    for (std::size_t r = reduced_.size(); r-- > 0;) {
      require(loops[r].from == reduced_[r].from && loops[r].to == reduced_[r].to,
              "the row operand's copy does not run over the contraction's reduced loops");
      by[reduced_[r].sym] = Index::iter(loops[r].sym);
      cell.terms.insert(cell.terms.begin(), Index::Term{stride, loops[r].sym});
      cell.offset -= stride * loops[r].from;
      stride *= loops[r].to - loops[r].from + 1;
      copy_syms_.push_back(loops[r].sym);
    }
    for (const auto& [sym, axis] : s_axis_of_)
      if (axis != t_axis_) by[sym] = row_index_of_x_axis(axis);
    q_cell_of_ = cell.canonical();
    const ExprP a = s_product()->args[static_cast<std::size_t>(row_factor_)];
    kFold.set(st, q_tile_, tile_idx(q_cell_of_), substituted(a, by), "row operand copy");
    require(node_of(tgt_, q_tile_).prec == a->prec, "the row operand's copy is not at its precision");
  }

  // The target's row symbol of x's axis `axis` (a row axis).
  Index row_index_of_x_axis(int axis) const {
    for (const Loop& r : rows_)
      if (x_axes_.at(r.sym) == axis) return Index::iter(r.sym);
    throw NotLifted(fmt::format("the scores' axis {} is not a row axis", axis));
  }

  void numerator_init(const StmtP& s) {
    std::vector<Loop> loops;
    const Stmt* st = peel(s.get(), loops);
    require(st->kind == StmtKind::Set && loops.size() == value_loops_.size(),
            "the numerator's clearing is not one store over the value loops");
    u_tile_ = st->name;
    // The value loops, bound to the target's symbols in the source's order; U's cell flattened.
    Index cell;
    std::int64_t stride = 1;
    for (std::size_t c = value_loops_.size(); c-- > 0;) {
      require(loops[c].from == value_loops_[c].from && loops[c].to == value_loops_[c].to,
              "the numerator's loops do not run over the value loops");
      value_syms_.insert(value_syms_.begin(), loops[c].sym);
      cell.terms.insert(cell.terms.begin(), Index::Term{stride, loops[c].sym});
      stride *= loops[c].to - loops[c].from + 1;
    }
    u_cell_ = cell.canonical();
    up_tile_ = node_of(tgt_, u_tile_).prec;
    require(up_tile_ == ((q_ == Prec::F64 || state_prec(up_) == Prec::F64) ? Prec::F64 : Prec::F32),
            "the numerator tile is not at the wider of the state precisions");
    kFold.set(st, u_tile_, tile_idx(u_cell_), constant(0.0, up_tile_), "numerator clearing");
    value_loops_target_ = loops;
  }

  void tile_init(const StmtP& s) {
    require(s->kind == StmtKind::For && s->from == 0 && s->body.size() == 1, "the score tile's clearing is not a loop");
    j_ = s->sym;
    bk_ = s->to + 1;
    const Stmt* st = s->body[0].get();
    require(st->kind == StmtKind::Set, "the score tile's clearing is not a store");
    t_tile_ = st->name;
    require(node_of(tgt_, t_tile_).prec == q_, "the score tile is not at the state precision");
    kFold.set(st, t_tile_, tile_idx(Index::iter(j_)), constant(0.0, q_), "score tile clearing");
  }

  void scan(const StmtP& s) {
    require(s->kind == StmtKind::Scan && s->dir == ScanDir::Forward && s->carried.size() == 2 && s->from == 0,
            "the fold's row body does not end with a forward scan carrying two values from block 0");
    tb_ = s->sym;
    nkb_ = s->to + 1;
    const std::int64_t sk = n_terms_;
    require(bk_ >= 1 && bk_ <= sk && nkb_ == (sk + bk_ - 1) / bk_,
            fmt::format("the fold runs {} blocks of {} over {} keys, not ceil(sk / bk)", nkb_, bk_, sk));
    tail_ = sk % bk_ != 0;
    key_ = Index{{Index::Term{bk_, tb_}, Index::Term{1, j_}}, 0}.canonical();
    const Carried& cm = s->carried[0];
    const Carried& cl = s->carried[1];
    require(cm.prec == q_ && cl.prec == q_ && is_const(cm.init, -INFINITY, q_) && is_const(cl.init, 0.0, q_),
            fmt::format("the scan does not carry (-inf, 0) at the state precision {}", prec_name(q_)));
    mp_ = cm.prev;
    mn_ = cm.next;
    lp_ = cl.prev;
    ln_ = cl.next;
    const std::vector<StmtP>& B = s->body;
    std::size_t k = 0;
    if (B.size() > 5 && B[0]->kind == StmtKind::DeclareLocal && B[5]->kind == StmtKind::If) {
      skipping_block(B, k);
    } else {
      computed_block(B, k, /*inside_skip=*/false);
    }
    block_outputs(B, k);
    require(k == B.size(), "the scan's body has statements after O's store");
  }

  std::string declared(const std::vector<StmtP>& B, std::size_t& k, const char* what) {
    require(k < B.size() && B[k]->kind == StmtKind::DeclareLocal && B[k]->prec == q_,
            fmt::format("the fold does not declare its {} at the state precision", what));
    return B[k++]->name;
  }

  ExprP L(const std::string& n) const { return get_local(n, q_); }
  ExprP tile_cell() const { return get(t_tile_, tile_idx(Index::iter(j_)), q_); }
  ExprP floor_of(ExprP v) const { return binary(BinOp::Max, std::move(v), constant(lowest_finite(q_), q_), q_); }
  ExprP rescale(const std::string& fl) const {
    return unary(UnOp::Exp, binary(BinOp::Sub, floor_of(L(mp_)), L(fl), q_), q_);
  }
  // A statement over the block's keys.
  const Stmt* over_keys(const StmtP& s, const std::string& what) const {
    return kFold.under_loop(s, j_, 0, bk_ - 1, what);
  }
  // The tail guard `bk·tb + j < sk` around one statement or a sequence, or nothing without a tail.
  std::vector<StmtP> guarded_body(const Stmt* s, const std::string& what) const {
    if (!tail_) return {std::shared_ptr<const Stmt>(s, [](const Stmt*) {})};
    const ExprP live =
        binary(BinOp::Lt, embed_index(key_, Prec::I32), constant(static_cast<double>(n_terms_), Prec::I32), Prec::I32);
    require(s->kind == StmtKind::If && same(s->value, live),
            fmt::format("the fold's {} is not guarded by `bk·tb + j < sk`", what));
    return s->body;
  }

  // The block's scores into the tile, its max, floor, rescale, exponentials, sum and numerator.
  void computed_block(const std::vector<StmtP>& B, std::size_t& k, bool inside_skip) {
    block_scores(B, k);
    if (!inside_skip) rmax_ = declared(B, k, "block max");
    kFold.set_local(B.at(k++), rmax_, L(mp_), "block max's start");
    kFold.set_local(over_keys_local(B.at(k++), "block max"), rmax_, binary(BinOp::Max, L(rmax_), tile_cell(), q_),
                      "block max");
    ExprP max_now = L(rmax_);
    if (!inside_skip) {
      kFold.set_local(B.at(k++), mn_, L(rmax_), "new max");
      max_now = L(mn_);
    }
    if (!inside_skip) fl_ = declared(B, k, "floor");
    kFold.set_local(B.at(k++), fl_, floor_of(max_now), "floor");
    if (!inside_skip) alpha_ = declared(B, k, "rescale");
    kFold.set_local(B.at(k++), alpha_, rescale(fl_), "rescale");
    kFold.set(over_keys(B.at(k++), "exponentials"), t_tile_, tile_idx(Index::iter(j_)),
                unary(UnOp::Exp, binary(BinOp::Sub, tile_cell(), L(fl_), q_), q_), "exponentials");
    if (!inside_skip) rs_ = declared(B, k, "block sum");
    kFold.set_local(B.at(k++), rs_, constant(0.0, q_), "block sum's start");
    kFold.set_local(over_keys_local(B.at(k++), "block sum"), rs_, binary(BinOp::Add, L(rs_), tile_cell(), q_),
                      "block sum");
    const ExprP next = binary(BinOp::Add, binary(BinOp::Mul, L(lp_), L(alpha_), q_), L(rs_), q_);
    kFold.set_local(B.at(k++), inside_skip ? lsum_ : ln_, next, "new sum");
    if (!inside_skip) {
      norm_ = declared(B, k, "norm");
      kFold.set_local(B.at(k++), norm_, norm_value(), "norm");
    }
    numerator(B, k);
  }
  const StmtP over_keys_local(const StmtP& s, const std::string& what) const {
    const Stmt* st = over_keys(s, what);
    return std::shared_ptr<const Stmt>(st, [](const Stmt*) {});
  }
  ExprP norm_value() const {
    return ternary(TernOp::Where, binary(BinOp::Eq, L(mn_), constant(-INFINITY, q_), q_), constant(NAN, q_), L(ln_), q_);
  }

  // [tail: T = -inf over the keys; then per key under the guard] T = 0, the contraction, the chain.
  void block_scores(const std::vector<StmtP>& B, std::size_t& k) {
    std::vector<StmtP> steps;
    if (tail_) {
      kFold.set(over_keys(B.at(k++), "padding"), t_tile_, tile_idx(Index::iter(j_)), constant(-INFINITY, q_),
                  "padding");
      const Stmt* per_key = over_keys(B.at(k++), "block scores");
      steps = guarded_body(per_key, "block scores");
      require(steps.size() == (chain_.empty() ? 2u : 3u), "the block's scores are not [T = 0, the contraction, the chain]");
    } else {
      const std::size_t n = chain_.empty() ? 2 : 3;
      for (std::size_t i = 0; i < n; ++i) {
        const Stmt* st = over_keys(B.at(k++), "block scores");
        steps.push_back(std::shared_ptr<const Stmt>(st, [](const Stmt*) {}));
      }
    }
    kFold.set(steps[0].get(), t_tile_, tile_idx(Index::iter(j_)), constant(0.0, node_of(src_, s_).prec),
                "block score's start");
    tile_contraction(steps[1]);
    if (!chain_.empty()) kFold.set(steps[2].get(), t_tile_, tile_idx(Index::iter(j_)), chain_value(), "score chain");
  }

  // The fold's index of each axis of the scores: the row symbols and the key bk·tb + j.
  Index fold_index_of_x_axis(int axis) const { return axis == t_axis_ ? key_ : row_index_of_x_axis(axis); }

  void tile_contraction(const StmtP& s) {
    std::vector<Loop> loops;
    const Stmt* st = peel(s.get(), loops);
    require(loops.size() == reduced_.size(), "the block's contraction is not over the contraction's reduced loops");
    std::map<std::string, Index> by;
    std::map<std::string, Index> to_copy;  // the copy's symbols -> this nest's
    for (std::size_t r = 0; r < reduced_.size(); ++r) {
      require(loops[r].from == reduced_[r].from && loops[r].to == reduced_[r].to,
              "the block's contraction does not run over the reduced loops");
      by[reduced_[r].sym] = Index::iter(loops[r].sym);
      if (!copy_syms_.empty()) to_copy[copy_syms_[reduced_.size() - 1 - r]] = Index::iter(loops[r].sym);
    }
    for (const auto& [sym, axis] : s_axis_of_) by[sym] = fold_index_of_x_axis(axis);
    const ExprP prod = s_product();
    ExprP a = substituted(prod->args[0], by), b = substituted(prod->args[1], by);
    if (!reduced_.empty()) {
      // The row operand is read from its copy.
      const ExprP copy = get(q_tile_, tile_idx(q_cell_of_.substituted(to_copy)), prod->args[static_cast<std::size_t>(row_factor_)]->prec);
      (row_factor_ == 0 ? a : b) = copy;
    }
    const ExprP expected =
        binary(BinOp::Add, tile_cell_at(node_of(src_, s_).prec), binary(BinOp::Mul, a, b, prod->prec), s_store_->value->prec);
    kFold.set(st, t_tile_, tile_idx(Index::iter(j_)), expected, "block contraction");
  }
  ExprP tile_cell_at(Prec) const { return tile_cell(); }

  // x's definition with each chain node inlined at the fold's cell and S read from the tile.
  ExprP chain_value() const {
    std::function<ExprP(const Expr&, const std::vector<Index>&)> inline_read = [&](const Expr& g,
                                                                                    const std::vector<Index>&) -> ExprP {
      if (g.name == s_) return tile_cell();
      for (const ChainStep& c : chain_)
        if (c.store->name == g.name) return substituted(c.store->value, cell_map(c), inline_read);
      return nullptr;
    };
    return substituted(chain_.front().store->value, cell_map(chain_.front()), inline_read);
  }
  std::map<std::string, Index> cell_map(const ChainStep& c) const {
    std::map<std::string, Index> by;
    for (const auto& [sym, axis] : c.axis_of) by[sym] = fold_index_of_x_axis(axis);
    return by;
  }

  // U = U·α over the value loops; U += T·v over the values and keys (tail-guarded).
  void numerator(const std::vector<StmtP>& B, std::size_t& k) {
    const ExprP u = get(u_tile_, tile_idx(u_cell_), up_tile_);
    kFold.set(kFold.under_loops(B.at(k++), value_loops_target_, "numerator rescale"), u_tile_, tile_idx(u_cell_),
                binary(BinOp::Mul, u, L(alpha_), up_tile_), "numerator rescale");
    const Stmt* acc = kFold.under_loops(B.at(k++), value_loops_target_, "numerator");
    const Stmt* per_key = kFold.under_loop(std::shared_ptr<const Stmt>(acc, [](const Stmt*) {}), j_, 0, bk_ - 1, "numerator");
    const std::vector<StmtP> g = guarded_body(per_key, "numerator");
    require(g.size() == 1, "the numerator's accumulation is not one store");
    kFold.set(g[0].get(), u_tile_, tile_idx(u_cell_), binary(BinOp::Add, u, binary(BinOp::Mul, tile_cell(), v_at_fold(), up_tile_), up_tile_),
                "numerator accumulation");
  }
  // v read at the fold's key and value cells.
  ExprP v_at_fold() const {
    std::map<std::string, Index> by;
    for (const auto& [sym, axis] : vp_axis_of_) by[sym] = fold_index_of_x_axis(axis);
    for (std::size_t c = 0; c < value_loops_.size(); ++c) by[value_loops_[c].sym] = Index::iter(value_syms_[c]);
    return substituted(v_read_, by);
  }

  // With skipping: the five locals, `if live { computed }`, `if live == 0 { skipped }`, then the
  // carried values and the norm.
  void skipping_block(const std::vector<StmtP>& B, std::size_t& k) {
    rmax_ = declared(B, k, "block max");
    fl_ = declared(B, k, "floor");
    alpha_ = declared(B, k, "rescale");
    rs_ = declared(B, k, "block sum");
    lsum_ = declared(B, k, "next sum");
    live_ = live_condition();
    const StmtP& computed = B.at(k++);
    require(computed->kind == StmtKind::If && same(computed->value, live_),
            "the fold's computed block is not guarded by the mask at the block's first key");
    std::size_t c = 0;
    computed_block(computed->body, c, /*inside_skip=*/true);
    require(c == computed->body.size(), "the computed block has statements after its numerator");
    const StmtP& skipped = B.at(k++);
    require(skipped->kind == StmtKind::If &&
                same(skipped->value, binary(BinOp::Eq, live_, constant(0.0, Prec::I32), Prec::I32)),
            "the fold's skipped block is not guarded by `live == 0`");
    skipped_block(skipped->body);
    kFold.set_local(B.at(k++), mn_, L(rmax_), "new max");
    kFold.set_local(B.at(k++), ln_, L(lsum_), "new sum");
    norm_ = declared(B, k, "norm");
    kFold.set_local(B.at(k++), norm_, norm_value(), "norm");
    skips_ = true;
  }

  // The mask's predicate at the block's first key, when x's definition is where(pred, ·, -inf) and
  // pred can only turn from true to false as the key grows (then a block whose first key is masked
  // has every key masked).
  ExprP live_condition() const {
    require(!chain_.empty(), "the fold skips blocks but the scores have no mask");
    const ChainStep& xs = chain_.front();
    const ExprP& x = xs.store->value;
    require(x->kind == ExprKind::Ternary && x->ternop() == TernOp::Where && x->args[2]->kind == ExprKind::Const &&
                std::isinf(x->args[2]->value) && x->args[2]->value < 0,
            "the fold skips blocks but x's definition is not where(pred, ·, -inf)");
    std::string key_sym;
    for (const auto& [sym, axis] : xs.axis_of)
      if (axis == t_axis_) key_sym = sym;
    require(falls_with_key(x->args[0], key_sym),
            "the fold skips blocks but the mask's predicate can turn from false to true as the key grows");
    std::map<std::string, Index> first = cell_map(xs);
    first[key_sym] = Index{{Index::Term{bk_, tb_}}, 0}.canonical();
    return substituted(x->args[0], first);
  }
  static bool falls_with_key(const ExprP& e, const std::string& key) {
    const int d = predicate_direction(e, key);
    return d == -1 || d == 0;
  }

  void skipped_block(const std::vector<StmtP>& B) {
    require(B.size() == 6, "the skipped block is not six statements");
    kFold.set_local(B[0], rmax_, L(mp_), "skipped block's max");
    kFold.set_local(B[1], fl_, floor_of(L(rmax_)), "skipped block's floor");
    kFold.set_local(B[2], alpha_, rescale(fl_), "skipped block's rescale");
    kFold.set_local(B[3], rs_,
                      binary(BinOp::Add, constant(0.0, q_),
                             unary(UnOp::Exp, binary(BinOp::Sub, constant(-INFINITY, q_), L(fl_), q_), q_), q_),
                      "skipped block's sum");
    kFold.set_local(B[4], lsum_, binary(BinOp::Add, binary(BinOp::Mul, L(lp_), L(alpha_), q_), L(rs_), q_),
                      "skipped block's next sum");
    const Stmt* st = kFold.under_loops(B[5], value_loops_target_, "skipped numerator");
    require(st->kind == StmtKind::Set && st->name == u_tile_ && st->value->kind == ExprKind::Binary &&
                st->value->binop() == BinOp::Add,
            "the skipped block's numerator is not U·α + Z");
    // Z: the zero sums' node, read at [tb, U's cell, v's row axes].
    const ExprP& zr = same(st->value->args[0], binary(BinOp::Mul, get(u_tile_, tile_idx(u_cell_), up_tile_), L(alpha_), up_tile_))
                          ? st->value->args[1]
                          : st->value->args[0];
    require(zr->kind == ExprKind::Get, "the skipped block's numerator does not add the block's zero sum");
    z_node_ = zr->name;
    z_idx_ = {Index::iter(tb_), u_cell_};
    for (const Loop& r : rows_)
      if (reads_row(r.sym)) z_rows_.push_back(r), z_idx_.push_back(Index::iter(r.sym));
    kFold.set(st, u_tile_, tile_idx(u_cell_),
                binary(BinOp::Add, binary(BinOp::Mul, get(u_tile_, tile_idx(u_cell_), up_tile_), L(alpha_), up_tile_),
                       get(z_node_, z_idx_, up_tile_), up_tile_),
                "skipped block's numerator");
    require(node_of(tgt_, z_node_).prec == up_tile_, "the zero sums are not at the numerator's precision");
    zero_sums();
  }
  bool reads_row(const std::string& row_sym) const {
    const ExprP v = v_at_fold();
    return std::any_of(v->indices.begin(), v->indices.end(), [&](const Index& i) { return i.mentions(row_sym); });
  }

  // Z[tb, c, v's rows] = -0 + Σ_j 0·v over each block's keys, once, before the fold.
  void zero_sums() {
    require(z_pos_ != SIZE_MAX, "the fold skips blocks but no zero sums come before it");
    std::vector<Loop> outer = z_rows_;
    outer.push_back(Loop{tb_, 0, nkb_ - 1});
    for (std::size_t c = 0; c < value_loops_target_.size(); ++c) outer.push_back(value_loops_target_[c]);
    const Stmt* body = kFold.under_loops(T_[z_pos_], outer, "zero sums");
    require(body->kind == StmtKind::Seq && body->body.size() == 2, "the zero sums' body is not [Z = -0, the sum]");
    kFold.set(body->body[0].get(), z_node_, z_idx_, constant(-0.0, up_tile_), "zero sum's start");
    const Stmt* per_key = kFold.under_loop(body->body[1], j_, 0, bk_ - 1, "zero sum");
    const std::vector<StmtP> g = guarded_body(per_key, "zero sum");
    require(g.size() == 1, "the zero sum's accumulation is not one store");
    kFold.set(g[0].get(), z_node_, z_idx_,
                binary(BinOp::Add, get(z_node_, z_idx_, up_tile_), binary(BinOp::Mul, constant(0.0, q_), v_at_fold(), up_tile_),
                       up_tile_),
                "zero sum");
  }

  void skip_lemma() {
    const SkipLemma lemma = block_skip_lemma(q_, up_tile_, node_of(src_, v_).prec, limits_);
    require(lemma.proved, "the block-skip lemma is not proved: " + lemma.detail);
    skip_note_ = "skipped blocks: every key of a block whose first key the mask hides is hidden (the predicate only "
                 "turns from true to false as the key grows), and " + lemma.detail;
  }

  // [m = mn] [l = norm] and, on the last block, O = U / norm over the value loops.
  void block_outputs(const std::vector<StmtP>& B, std::size_t& k) {
    if (k < B.size() && B[k]->kind == StmtKind::Set && B[k]->name == m_) {
      std::vector<Loop> none;
      const Stmt* anchor_store = peel(S_[pos_.anchor].get(), none);
      kFold.set(B[k++].get(), m_, anchor_store->indices, L(mn_), "store of the max");
      m_stored_ = true;
    }
    if (k < B.size() && B[k]->kind == StmtKind::Set && B[k]->name == l_) {
      std::vector<Loop> none;
      const Stmt* sum_store = peel(S_[pos_.c].get(), none);
      std::map<std::string, Index> by;  // the sum nest's symbols -> the fold's rows
      std::vector<Loop> sum_loops;
      peel(S_[pos_.c].get(), sum_loops);
      const std::vector<int> axes = l_of_x_;
      for (std::size_t a = 0; a < sum_store->indices.size(); ++a)
        by[sum_store->indices[a].terms[0].sym] = row_index_of_x_axis(axes[a]);
      std::vector<Index> at;
      for (const Index& i : sum_store->indices) at.push_back(i.substituted(by));
      kFold.set(B[k++].get(), l_, at, L(norm_), "store of the sum");
      l_stored_ = true;
    }
    require(!m_stored_must_ || m_stored_, fmt::format("{} is read after the fold but the fold does not store it", m_));
    require(!l_stored_must_ || l_stored_, fmt::format("{} is read after the fold but the fold does not store it", l_));
    require(k < B.size() && B[k]->kind == StmtKind::If, "the fold does not store O on its last block");
    const StmtP& last = B[k++];
    require(same(last->value, binary(BinOp::Eq, embed_index(Index::iter(tb_), Prec::I32),
                                     constant(static_cast<double>(nkb_ - 1), Prec::I32), Prec::I32)) &&
                last->body.size() == 1,
            "O's store is not guarded by the last block");
    // O at the value pass's cell: its row axes -> the fold's rows, its value loops -> the target's.
    std::vector<Loop> vl;
    const Stmt* vp_store = peel(S_[pos_vp_].get(), vl);
    std::map<std::string, Index> by;
    for (const auto& [sym, axis] : vp_axis_of_)
      if (axis != t_axis_) by[sym] = row_index_of_x_axis(axis);
    for (std::size_t c = 0; c < value_loops_.size(); ++c) by[value_loops_[c].sym] = Index::iter(value_syms_[c]);
    std::vector<Index> at;
    for (const Index& i : vp_store->indices) at.push_back(i.substituted(by));
    kFold.set(kFold.under_loops(last->body[0], value_loops_target_, "O's store"), o_, at,
                binary(BinOp::Div, get(u_tile_, tile_idx(u_cell_), up_tile_), L(norm_), up_tile_), "store of O");
  }

  const Routine& tgt_;
  const Application& app_;
  const Limits& limits_;
  std::vector<StmtP> T_;
  std::string p_node_, o_, v_, s_;
  std::size_t pos_p_ = 0, pos_zero_o_ = 0, pos_vp_ = 0, pos_s_zero_ = 0, pos_s_ = 0;
  std::vector<int> p_of_x_;
  std::vector<Loop> vp_loops_, value_loops_, s_loops_, reduced_, rows_, value_loops_target_, z_rows_;
  std::map<std::string, int> vp_axis_of_, s_axis_of_;
  ExprP v_read_;
  const Stmt* s_store_ = nullptr;
  int row_factor_ = -1;
  Prec up_ = Prec::F32, up_tile_ = Prec::F32;
  std::vector<ChainStep> chain_;
  std::size_t z_pos_ = SIZE_MAX, fold_pos_ = SIZE_MAX;
  std::vector<std::size_t> moved_;
  bool m_read_ = false, l_read_ = false, m_stored_must_ = false, l_stored_must_ = false;
  bool m_stored_ = false, l_stored_ = false, tail_ = false, skips_ = false;
  std::vector<Index> row_idx_, z_idx_;
  std::vector<std::string> copy_syms_, value_syms_;
  Index q_cell_of_, u_cell_, key_;
  std::string q_tile_, u_tile_, t_tile_, j_, tb_, mp_, mn_, lp_, ln_, rmax_, fl_, alpha_, rs_, lsum_, norm_, z_node_;
  std::int64_t bk_ = 0, nkb_ = 0;
  ExprP live_;
  std::string statements_note_, skip_note_;
};

}  // namespace

// The three claims of one application (and their cross-check instance) ask for the same lift: a
// proved one is kept per process, for the application and the solver limits the block-skip lemma
// runs under.
FoldLift lift_fold(const Routine& src, const Routine& tgt, const Application& app, const Limits& limits) {
  static RoutinePairMemo<FoldLift> proved(4096);
  const std::string key =
      fmt::format("{}|{}|{}|{}", app.shape, fmt::join(app.statements, ","), limits.rlimit, limits.timeout_s);
  if (std::optional<FoldLift> known = proved.find(src, tgt, key)) return *known;
  FoldLift lift = FoldLifter(canonical_blocks(src), canonical_blocks(tgt), app, limits).run();
  if (lift.proved) proved.put(src, tgt, key, lift);
  return lift;
}

}  // namespace fp::verify
