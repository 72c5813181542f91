// The fold's key blocks cover the keys exactly, for every key count and block size
// (docs/bounds.md §7 "Tail"): Z3 over the integers (nonlinear: the block size is a variable), and
// one floating-point query that a padded cell adds exactly nothing to the block's sum.
#include <z3++.h>

#include <cmath>
#include <functional>

#include "core/numerics.h"
#include "verify/online_softmax/smt/queries.h"
#include "verify/smt/z3_common.h"
#include "verify/symbolic/term.h"

namespace fp::verify::smt {

namespace {

// The sizes: b = min(B, sk) and ceil(sk / b) blocks (SMT-LIB div floors; sk + b - 1 >= 0), or
// floor(sk / b) for the mutant.
struct Cover {
  explicit Cover(bool floor_blocks) : nkb(floor_blocks ? sk / bk : (sk + bk - 1) / bk) {}
  z3::context c;
  z3::expr sk = c.int_const("sk"), B = c.int_const("B");
  z3::expr bk = z3::ite(B < sk, B, sk);
  z3::expr nkb;
  z3::expr sizes() { return sk >= 1 && B >= 1; }
  z3::expr cell(const z3::expr& tb, const z3::expr& j) { return tb >= 0 && tb < nkb && j >= 0 && j < bk; }
};

InductionStep integer_query(const std::string& name, const std::string& statement, const SmtLimits& limits,
                            bool floor_blocks, const std::function<z3::expr(Cover&)>& negation) {
  return detail::integer_fact<Cover>(name, statement, limits, negation, floor_blocks);
}

}  // namespace

std::vector<InductionStep> prove_block_cover(Prec state, const SmtLimits& limits, bool floor_blocks) {
  std::vector<InductionStep> out;
  out.push_back(integer_query(
      "tail.cover", "every key 0 <= t < sk is cell t mod b of block t div b, a block below ceil(sk / b)",
      limits, floor_blocks, [](Cover& v) {
        z3::expr t = v.c.int_const("t");
        return t >= 0 && t < v.sk && !(v.cell(t / v.bk, t % v.bk) && t == v.bk * (t / v.bk) + t % v.bk);
      }));
  out.push_back(integer_query(
      "tail.once", "no two (block, cell) pairs name the same key", limits, floor_blocks, [](Cover& v) {
        z3::expr tb = v.c.int_const("tb"), j = v.c.int_const("j"), tb2 = v.c.int_const("tb2"),
                 j2 = v.c.int_const("j2");
        return v.cell(tb, j) && v.cell(tb2, j2) && v.bk * tb + j == v.bk * tb2 + j2 && (tb != tb2 || j != j2);
      }));
  out.push_back(integer_query("tail.exact-division",
                              "when b divides sk every cell is a key (the fold then emits no guard)", limits,
                              floor_blocks, [](Cover& v) {
                                z3::expr tb = v.c.int_const("tb"), j = v.c.int_const("j");
                                return v.sk % v.bk == 0 && v.cell(tb, j) && v.bk * tb + j >= v.sk;
                              }));
  // A padded cell is -inf; after the floor fl = max(m, LOWEST) its exponential is +0 (or NaN when
  // fl is, the whole row's state being NaN then): adding it to a sum of exponentials (>= +0 or NaN)
  // changes nothing.
  {
    TermStore s;
    const TermP m = s.var("m", 0, state), y = s.var("y", 0, state);
    const TermP fl = s.binary(BinOp::Max, m, s.constant(lowest_finite(state), state), state);
    const TermP pad =
        s.unary(UnOp::Exp, s.binary(BinOp::Sub, s.constant(-INFINITY, state), fl, state), state);
    const TermP sum = s.unary(UnOp::Abs, y, state);
    const TermP same =
        s.ternary(TernOp::Where, s.binary(BinOp::Eq, fl, fl, state), sum, s.constant(NAN, state), state);
    FpQueryOptions fo;
    fo.cut_shared = false;
    out.push_back(InductionStep{
        "tail.zero", "a padded (-inf) cell adds exactly nothing to a sum of exponentials (or the row is NaN)",
        find_difference(s, {{s.binary(BinOp::Add, sum, pad, state), same}}, fo, limits)});
  }
  return out;
}

}  // namespace fp::verify::smt
