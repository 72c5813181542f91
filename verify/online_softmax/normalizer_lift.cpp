#include "verify/online_softmax/normalizer_lift.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/ir_visit.h"
#include "core/numerics.h"
#include "core/support/deadline.h"
#include "rewrites/online_softmax/claims.h"
#include "verify/loop_nest.h"
#include "verify/phase_clock.h"

namespace fp::verify {

namespace {

// A failed condition: the lift stops at the first.
struct NotLifted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require(bool ok, const std::string& why) {
  if (!ok) throw NotLifted(why);
}

// What a top-level statement writes and reads, at any depth.
struct Census {
  std::set<std::string> writes, reads;
};

Census census_of(const StmtP& s) {
  Census c;
  for_each_stmt(s, [&](const Stmt& st) {
    if (st.kind == StmtKind::Set || st.kind == StmtKind::Zero) c.writes.insert(st.name);
    for_each_own_expr(st, [&](const ExprP& e) {
      for_each_expr(e, [&](const Expr& x) {
        if (x.kind == ExprKind::Get) c.reads.insert(x.name);
      });
    });
  });
  return c;
}

const Node& node_of(const Routine& r, const std::string& name) {
  const Node* n = r.find_node(name);
  require(n != nullptr, "no node " + name);
  return *n;
}

// The loops of a nest as coordinates: loop symbol → axis of a reference node.
using AxisOf = std::map<std::string, int>;

// `idx` reads or writes `node` at plain loop symbols, each of `loops` at most once, and each loop
// it names runs over the whole axis (0..extent-1): the symbol → axis map.
AxisOf plain_axes(const Routine& r, const std::string& node, const std::vector<Index>& idx,
                  const std::vector<Loop>& loops, const char* what) {
  const Node& n = node_of(r, node);
  require(idx.size() == n.dims.size(), fmt::format("{} indexes {} with {} indices", what, node, idx.size()));
  AxisOf axes;
  for (std::size_t j = 0; j < idx.size(); ++j) {
    require(idx[j].is_plain_iterator(),
            fmt::format("{} indexes {} at a position that is not a plain loop symbol", what, node));
    const std::string& sym = idx[j].terms[0].sym;
    auto loop = std::find_if(loops.begin(), loops.end(), [&](const Loop& l) { return l.sym == sym; });
    require(loop != loops.end(), fmt::format("{} indexes {} with {}, not one of its loops", what, node, sym));
    require(loop->from == 0 && loop->to == n.dims[j] - 1,
            fmt::format("{}: loop {} does not run over the whole axis {} of {}", what, sym, j, node));
    require(axes.emplace(sym, static_cast<int>(j)).second,
            fmt::format("{} indexes {} with {} twice", what, node, sym));
  }
  return axes;
}

// Every loop of the nest bound once, and named by `axes` (a bijection loops ↔ the node's axes).
void require_bijection(const std::vector<Loop>& loops, const AxisOf& axes, const char* what) {
  std::set<std::string> syms;
  for (const auto& l : loops) require(syms.insert(l.sym).second, fmt::format("{} binds {} twice", what, l.sym));
  require(axes.size() == loops.size(),
          fmt::format("{}: its loops are not one per axis of the node it is read through", what));
}

// An index list, as the reference axes of the cells it names: idx[j] is the symbol whose
// reference axis is the result's j-th entry.
// -1 for an index that is not a plain loop symbol of `ref` (so it matches no axis).
std::vector<int> in_reference(const std::vector<Index>& idx, const std::map<std::string, int>& ref) {
  std::vector<int> out;
  for (const auto& i : idx) {
    auto it = i.is_plain_iterator() ? ref.find(i.terms[0].sym) : ref.end();
    out.push_back(it == ref.end() ? -1 : it->second);
  }
  return out;
}

bool is_const(const ExprP& e, double v, Prec p) {
  return e->kind == ExprKind::Const && e->prec == p &&
         (std::isnan(v) ? std::isnan(e->value)
                        : e->value == v && std::signbit(e->value) == std::signbit(v));
}

bool self_read(const ExprP& e, const Stmt& store) {
  return e->kind == ExprKind::Get && e->name == store.name && e->indices == store.indices;
}

// The operand of a binary `op` that is not the store's own cell; null when neither or both are.
ExprP other_operand(const ExprP& v, BinOp op, const Stmt& store) {
  if (!v || v->kind != ExprKind::Binary || v->binop() != op) return nullptr;
  const bool a = self_read(v->args[0], store), b = self_read(v->args[1], store);
  if (a == b) return nullptr;
  return a ? v->args[1] : v->args[0];
}

struct Positions {
  std::size_t a_init, anchor, n, e, c_init, c;
};

class Lifter {
 public:
  Lifter(const Routine& src, const Routine& tgt, const Application& app)
      : src_(src), tgt_(tgt), app_(app), S_(top_level_statements(src)), T_(top_level_statements(tgt)) {
    for (const auto& st : S_) census_.push_back(census_of(st));
  }

  NormalizerLift run() {
    NormalizerLift res;
    ScopedPhase phase("all-sizes lift");
    check_deadline("the all-sizes lift");
    try {
      require(src_.nodes.size() == tgt_.nodes.size() &&
                  std::equal(src_.nodes.begin(), src_.nodes.end(), tgt_.nodes.begin()),
              "source and target declare different nodes");
      require(!app_.statements.empty() && app_.statements[0] >= 1 &&
                  static_cast<std::size_t>(app_.statements[0]) <= S_.size(),
              "the application names no anchor statement");
      pos_.anchor = static_cast<std::size_t>(app_.statements[0] - 1);
      anchor();
      chain();
      census();
      statements_outside(res);
      scan();
      res.steps.push_back(fmt::format(
          "structure: {} = max fold and {} = composed sum over the axis {} of {} (n = {} here), every loop "
          "over a whole axis and every index a plain loop symbol; the target's scan reads the same scores "
          "in the same order and carries the recurrence at {}",
          m_, l_, t_axis_, x_, n_terms_, prec_name(q_)));
      res.steps.push_back(fmt::format(
          "census: {} written only by its init and the max, {} only by its init and the sum, each read by "
          "nothing earlier; {} and {} one writer each; {} not written after the max",
          m_, l_, n_, e_, x_));
      res.proved = true;
      res.m = m_;
      res.l = l_;
      res.row_terms = n_terms_;
    } catch (const NotLifted& e) {
      res.why_not = e.what();
      res.steps.push_back(std::string("all-sizes lift not established: ") + e.what());
    }
    return res;
  }

 private:
  // `m[rows] = max(m[rows], x[..])`: the reference axes are x's.
  void anchor() {
    std::vector<Loop> loops;
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

  void chain() {
    const osm::NormalizerRoles roles = osm::normalizer_roles(app_);
    n_ = role(roles.n, "n");
    e_ = role(roles.e, "e");
    l_ = role(roles.l, "l");
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

  static std::string role(const std::string& node, const char* name) {
    if (!node.empty()) return node;
    throw NotLifted(fmt::format("the application records no node for the role {}", name));
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

  // The target: the source's statements with the anchor replaced and three deleted.
  void statements_outside(NormalizerLift& res) {
    std::size_t j = 0;
    for (std::size_t i = 0; i < S_.size(); ++i) {
      if (i == pos_.a_init || i == pos_.c_init || i == pos_.c) continue;
      require(j < T_.size(), "the target has fewer top-level statements than the source's minus the match");
      if (i == pos_.anchor)
        scan_pos_ = j;
      else
        require(equal(S_[i], T_[j]),
                fmt::format("source statement {} is not the target's statement {}", i + 1, j + 1));
      ++j;
    }
    require(j == T_.size(), "the target has more top-level statements than the source's minus the match");
    res.steps.push_back(fmt::format(
        "statements: the target's {} top-level statements are the source's, less m's init, l's init and the "
        "sum, with the max replaced by the scan nest (statement {})",
        T_.size(), scan_pos_ + 1));
  }

  void scan() {
    std::vector<Loop> loops;
    const Stmt* sc = peel(T_[scan_pos_].get(), loops);
    require(sc->kind == StmtKind::Scan && sc->dir == ScanDir::Forward && sc->carried.size() == 2 &&
                sc->body.size() == 6,
            "the target nest is not row loops around a forward scan with two carried values and six statements");
    loops.push_back(Loop{sc->sym, sc->from, sc->to});
    const Carried& cm = sc->carried[0];
    const Carried& cl = sc->carried[1];
    require(cm.prec == q_ && cl.prec == q_ && is_const(cm.init, -INFINITY, q_) && is_const(cl.init, 0.0, q_),
            fmt::format("the scan does not carry (-inf, 0) at the state precision {}", prec_name(q_)));
    const auto& B = sc->body;
    require(B[0]->kind == StmtKind::DeclareLocal && B[0]->prec == q_, "the scan does not declare its score local");
    const std::string xs = B[0]->name;
    require(B[1]->kind == StmtKind::SetLocal && B[1]->name == xs && B[1]->value->kind == ExprKind::Get &&
                B[1]->value->name == x_,
            "the scan does not read the score into its local");
    AxisOf axes = plain_axes(tgt_, x_, B[1]->value->indices, loops, "the scan");
    require_bijection(loops, axes, "the scan");
    require(axes.at(sc->sym) == t_axis_, "the scan does not run over the max's reduced axis");
    const ExprP mp = get_local(cm.prev, q_), mn = get_local(cm.next, q_);
    const ExprP lp = get_local(cl.prev, q_), ln = get_local(cl.next, q_);
    const ExprP x = get_local(xs, q_);
    const ExprP low = constant(lowest_finite(q_), q_);
    auto mx = [&](ExprP a, ExprP b) { return binary(BinOp::Max, std::move(a), std::move(b), q_); };
    auto sub = [&](ExprP a, ExprP b) { return binary(BinOp::Sub, std::move(a), std::move(b), q_); };
    auto ex = [&](ExprP a) { return unary(UnOp::Exp, std::move(a), q_); };
    require(B[2]->kind == StmtKind::SetLocal && B[2]->name == cm.next &&
                (equal(B[2]->value, mx(mp, x)) || equal(B[2]->value, mx(x, mp))),
            "the scan's new max is not max(previous max, score) at the state precision");
    const ExprP recurrence =
        binary(BinOp::Add, binary(BinOp::Mul, lp, ex(sub(mx(mp, low), mx(mn, low))), q_), ex(sub(x, mx(mn, low))), q_);
    require(B[3]->kind == StmtKind::SetLocal && B[3]->name == cl.next && equal(B[3]->value, recurrence),
            "the scan's new sum is not the rescaled recurrence of docs/bounds.md");
    require(B[4]->kind == StmtKind::Set && B[4]->name == m_ && equal(B[4]->value, mn),
            "the scan does not store its running max to m");
    plain_axes(tgt_, m_, B[4]->indices, loops, "the scan's store of the max");
  require(in_reference(B[4]->indices, axes) == m_of_x_, "the scan stores the max at another row than the source");
    const ExprP stored = ternary(TernOp::Where, binary(BinOp::Eq, mn, constant(-INFINITY, q_), q_),
                                 constant(NAN, q_), ln, q_);
    require(B[5]->kind == StmtKind::Set && B[5]->name == l_ && equal(B[5]->value, stored),
            "the scan does not store where(max = -inf, NaN, sum) to l");
    plain_axes(tgt_, l_, B[5]->indices, loops, "the scan's store of the sum");
  require(in_reference(B[5]->indices, axes) == l_of_x_, "the scan stores the sum at another row than the source");
  }

  const Routine& src_;
  const Routine& tgt_;
  const Application& app_;
  std::vector<StmtP> S_, T_;
  std::vector<Census> census_;  // of each source statement, computed once
  Positions pos_{};
  std::size_t scan_pos_ = 0;
  std::string x_, m_, n_, e_, l_;
  Prec p_ = Prec::F32, q_ = Prec::F32;
  AxisOf x_axes_;
  std::vector<int> m_of_x_, n_of_x_, e_of_x_, l_of_x_;
  int t_axis_ = 0;
  std::size_t x_rank_ = 0;
  std::int64_t n_terms_ = 0;
};

}  // namespace

NormalizerLift lift_normalizer(const Routine& src, const Routine& tgt, const Application& app) {
  return Lifter(src, tgt, app).run();
}

}  // namespace fp::verify
