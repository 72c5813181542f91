#pragma once
// The composed normalizer of a source routine, read as the member's all-sizes lifts read it
// (verify/online_softmax/normalizer_lift.h, fold_lift.h; internal to this folder): m's -inf init,
// the max `m[rows] = max(m[rows], x[..])` over one reduced loop, n = sub(x, m), e = exp(n), l's zero
// init and the sum `l[rows] = add(l[rows], e[..])` — each index a plain loop symbol over a whole
// axis, each read followed through the axes of x (never through symbol names), all at one
// precision p; and the census: m and l written only by their inits and their reductions and read
// by nothing earlier, n and e one writer each, x not written after the max. A failed condition
// throws lift::NotLifted.

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"
#include "core/ir_visit.h"
#include "verify/loop_nest.h"
#include "verify/online_softmax/lift_support.h"

namespace fp::verify::lift {

struct NormalizerPositions {
  std::size_t a_init = 0, anchor = 0, n = 0, e = 0, c_init = 0, c = 0;
};

// Derived by the lifts; reads the source on construction of its parts (anchor(), chain(), census()).
class ComposedNormalizerReader {
 protected:
  explicit ComposedNormalizerReader(const Routine& src) : src_(src), S_(top_level_statements(src)) {
    for (const auto& st : S_) census_.push_back(census_of(st));
  }

  // `m[rows] = max(m[rows], x[..])`: the reference axes are x's.
  void anchor() {
    std::vector<Loop>& loops = anchor_loops_;
    loops.clear();
    const Stmt* st = peel(S_[pos_.anchor].get(), loops);
    require(st->kind == StmtKind::Set, "the anchor is not a loop nest around one store");
    const ExprP x = other_operand(st->value, BinOp::Max, *st);
    require(x && x->kind == ExprKind::Get, "the anchor is not m = max(m, x[..])");
    m_ = st->name;
    x_ = x->name;
    p_ = node_of(src_, m_).prec;
    q_ = state_prec(p_);
    require(is_float(p_) && st->value->prec == p_ && node_of(src_, x_).prec == p_,
            "the max, its node and its scores are not at one floating-point precision");
    require(x_ != m_, "the anchor reads its own node as scores");
    x_axes_ = plain_axes(src_, x_, x->indices, loops, "the anchor");
    require_bijection(loops, x_axes_, "the anchor");
    plain_axes(src_, m_, st->indices, loops, "the anchor");
    m_of_x_ = in_reference(st->indices, x_axes_);
    std::vector<std::string> reduced;
    for (const auto& l : loops)
      if (!mentions(st->indices, l.sym)) reduced.push_back(l.sym);
    require(reduced.size() == 1, "the anchor does not reduce over exactly one loop");
    t_axis_ = x_axes_.at(reduced[0]);
    n_terms_ = node_of(src_, x_).dims[static_cast<std::size_t>(t_axis_)];
    x_rank_ = node_of(src_, x_).dims.size();
    require(m_of_x_.size() + 1 == x_rank_, "m does not have one axis per row axis of the scores");
  }

  // The nest at a top-level position, its store, and the loop → reference axis map obtained
  // through the operand `read` (a read of `through`, whose axes map by `through_of_x`).
  struct Step {
    std::vector<Loop> loops;
    const Stmt* store = nullptr;
    AxisOf ref;  // loop symbol → x axis
  };

  Step step_at(std::size_t pos, const ExprP& read, const std::vector<int>& through_of_x, const char* what) {
    Step s;
    s.store = peel(S_[pos].get(), s.loops);
    AxisOf axes = plain_axes(src_, read->name, read->indices, s.loops, what);
    require_bijection(s.loops, axes, what);
    for (const auto& [sym, axis] : axes) s.ref[sym] = through_of_x[static_cast<std::size_t>(axis)];
    return s;
  }

  std::vector<int> identity_axes() const {
    std::vector<int> v(x_rank_);
    for (std::size_t j = 0; j < x_rank_; ++j) v[j] = static_cast<int>(j);
    return v;
  }

  // The top-level statements that write `node`, in program order.
  std::vector<std::size_t> writers_of(const std::string& node) const {
    std::vector<std::size_t> w;
    for (std::size_t i = 0; i < S_.size(); ++i)
      if (census_[i].writes.count(node)) w.push_back(i);
    return w;
  }

  // n = sub(x, m), e = exp(n), m's init, l's init and the sum l += e, with the nodes n, e and l.
  void chain(const std::string& n_node, const std::string& e_node, const std::string& l_node) {
    n_ = n_node;
    e_ = e_node;
    l_ = l_node;
    require(std::set<std::string>{x_, m_, n_, e_, l_}.size() == 5, "the chain's nodes are not five distinct nodes");
    for (const auto& node : {n_, e_, l_}) require(node_of(src_, node).prec == p_, node + " is not at " + prec_name(p_));
    // n = sub(x, m), pointwise over the scores' axes.
    std::vector<std::size_t> wn = writers_of(n_), we = writers_of(e_), wm = writers_of(m_), wl = writers_of(l_);
    require(wn.size() == 1 && we.size() == 1, "n or e has more than one writer");
    pos_.n = wn[0];
    pos_.e = we[0];
    {
      std::vector<Loop> loops;
      const Stmt* st = peel(S_[pos_.n].get(), loops);
      const ExprP& v = st->value;
      require(st->kind == StmtKind::Set && v && v->kind == ExprKind::Binary && v->binop() == BinOp::Sub &&
                  v->prec == p_ && v->args[0]->kind == ExprKind::Get && v->args[0]->name == x_ &&
                  v->args[1]->kind == ExprKind::Get && v->args[1]->name == m_,
              "n's statement is not n = sub(x, m)");
      Step s = step_at(pos_.n, v->args[0], identity_axes(), "n's statement");
      plain_axes(src_, m_, v->args[1]->indices, s.loops, "n's statement");
      require(in_reference(v->args[1]->indices, s.ref) == m_of_x_, "n's statement reads m at another row than x's");
      n_of_x_ = in_reference(st->indices, s.ref);
      plain_axes(src_, n_, st->indices, s.loops, "n's statement");
      require(n_of_x_.size() == x_rank_, "n does not have the scores' axes");
    }
    // e = exp(n).
    {
      std::vector<Loop> loops;
      const Stmt* st = peel(S_[pos_.e].get(), loops);
      const ExprP& v = st->value;
      require(st->kind == StmtKind::Set && v && v->kind == ExprKind::Unary && v->unop() == UnOp::Exp &&
                  v->prec == p_ && v->args[0]->kind == ExprKind::Get && v->args[0]->name == n_,
              "e's statement is not e = exp(n)");
      Step s = step_at(pos_.e, v->args[0], n_of_x_, "e's statement");
      plain_axes(src_, e_, st->indices, s.loops, "e's statement");
      e_of_x_ = in_reference(st->indices, s.ref);
      require(e_of_x_.size() == x_rank_, "e does not have the scores' axes");
    }
    // m: its init and the anchor; l: its init and the sum.
    require(wm.size() == 2 && wm[1] == pos_.anchor, "m is written by more than its init and the max");
    pos_.a_init = wm[0];
    {
      std::vector<Loop> loops;
      const Stmt* st = peel(S_[pos_.a_init].get(), loops);
      require(st->kind == StmtKind::Set && st->name == m_ && is_const(st->value, -INFINITY, p_),
              "m's init is not m = -inf at m's precision");
      AxisOf axes = plain_axes(src_, m_, st->indices, loops, "m's init");
      require_bijection(loops, axes, "m's init");
    }
    require(wl.size() == 2, "l is written by more than its init and the sum");
    pos_.c_init = wl[0];
    pos_.c = wl[1];
    {
      const Stmt& z = *S_[pos_.c_init];
      if (z.kind != StmtKind::Zero) {
        std::vector<Loop> loops;
        const Stmt* st = peel(S_[pos_.c_init].get(), loops);
        require(st->kind == StmtKind::Set && st->name == l_ && is_const(st->value, 0.0, p_),
                "l's init is neither `zero l` nor l = 0");
        AxisOf axes = plain_axes(src_, l_, st->indices, loops, "l's init");
        require_bijection(loops, axes, "l's init");
      } else {
        require(z.name == l_, "l's init zeroes another node");
      }
    }
    {
      std::vector<Loop> loops;
      const Stmt* st = peel(S_[pos_.c].get(), loops);
      require(st->kind == StmtKind::Set && st->name == l_, "the sum is not a loop nest around one store");
      const ExprP e = other_operand(st->value, BinOp::Add, *st);
      require(e && e->kind == ExprKind::Get && e->name == e_ && st->value->prec == p_,
              "the sum is not l = add(l, e[..]) at l's precision");
      Step s = step_at(pos_.c, e, e_of_x_, "the sum");
      plain_axes(src_, l_, st->indices, s.loops, "the sum");
      l_of_x_ = in_reference(st->indices, s.ref);
      require(sorted_rows(l_of_x_), "the sum does not reduce over the max's axis, one cell of l per row");
    }
    require(pos_.a_init < pos_.anchor && pos_.anchor < pos_.n && pos_.n < pos_.e && pos_.e < pos_.c &&
                pos_.c_init < pos_.c,
            "the statements are not in the order init < max < n < e < sum");
  }

  // `axes` names every x axis but the reduced one, once each.
  bool sorted_rows(std::vector<int> axes) const {
    std::sort(axes.begin(), axes.end());
    std::vector<int> rows;
    for (std::size_t j = 0; j < x_rank_; ++j)
      if (static_cast<int>(j) != t_axis_) rows.push_back(static_cast<int>(j));
    return axes == rows;
  }

  void census() {
    for (std::size_t i = 0; i < S_.size(); ++i) {
      const Census& c = census_[i];
      if (i < pos_.anchor && i != pos_.a_init)
        require(!c.reads.count(m_), fmt::format("top-level statement {} reads {} before the max", i + 1, m_));
      if (i < pos_.c && i != pos_.c_init)
        require(!c.reads.count(l_), fmt::format("top-level statement {} reads {} before the sum", i + 1, l_));
      if (i >= pos_.anchor)
        require(!c.writes.count(x_), fmt::format("top-level statement {} writes {} after the max", i + 1, x_));
    }
  }

  // The node a single writer stores `op(read of `from`, ...)` into, pointwise: n from x (sub), e
  // from n (exp). "" when there is no such writer.
  std::string pointwise_of(const std::string& from, ExprKind kind, std::uint8_t op) const {
    std::string found;
    for (std::size_t i = 0; i < S_.size(); ++i) {
      std::vector<Loop> loops;
      const Stmt* st = peel(S_[i].get(), loops);
      if (st->kind != StmtKind::Set || !st->value || st->value->kind != kind || st->value->op != op) continue;
      const ExprP& a = st->value->args[0];
      if (a->kind != ExprKind::Get || a->name != from) continue;
      require(found.empty() || found == st->name, fmt::format("{} feeds two pointwise definitions", from));
      found = st->name;
    }
    return found;
  }

  const Routine& src_;
  std::vector<StmtP> S_;
  std::vector<Census> census_;  // of each source statement, computed once
  NormalizerPositions pos_{};
  std::string x_, m_, n_, e_, l_;
  Prec p_ = Prec::F32, q_ = Prec::F32;
  AxisOf x_axes_;
  std::vector<int> m_of_x_, n_of_x_, e_of_x_, l_of_x_;
  int t_axis_ = 0;
  std::size_t x_rank_ = 0;
  std::int64_t n_terms_ = 0;
  std::vector<Loop> anchor_loops_;  // the max's loops, outermost first (the reduced one among them)
};

}  // namespace fp::verify::lift
