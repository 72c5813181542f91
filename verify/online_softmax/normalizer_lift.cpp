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
#include "verify/online_softmax/composed_normalizer.h"
#include "verify/online_softmax/lift_support.h"
#include "verify/phase_clock.h"
#include "verify/program_equality.h"

namespace fp::verify {

namespace {

using namespace lift;

class Lifter : ComposedNormalizerReader {
 public:
  Lifter(const Routine& src, const Routine& tgt, const Application& app)
      : ComposedNormalizerReader(src), tgt_(tgt), app_(app), T_(top_level_statements(tgt)) {}

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
      const osm::NormalizerRoles roles = osm::normalizer_roles(app_);
      chain(role(roles.n, "n"), role(roles.e, "e"), role(roles.l, "l"));
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
  static std::string role(const std::string& node, const char* name) {
    if (!node.empty()) return node;
    throw NotLifted(fmt::format("the application records no node for the role {}", name));
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

  const Routine& tgt_;
  const Application& app_;
  std::vector<StmtP> T_;
  std::size_t scan_pos_ = 0;
};

}  // namespace

NormalizerLift lift_normalizer(const Routine& src, const Routine& tgt, const Application& app) {
  return Lifter(canonical_blocks(src), canonical_blocks(tgt), app).run();
}

}  // namespace fp::verify
