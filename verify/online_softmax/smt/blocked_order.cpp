// The fused backward's blocked pair loop visits the pairs of every gradient cell in ascending
// order, each once, for every block count (verify/online_softmax/fused_backward_order.h): Z3 over the integers,
// the block size B concrete (the program's structure), the block count NB >= 0 and the tail's
// length R symbolic (the routine's size).
#include <z3++.h>

#include <functional>

#include "verify/online_softmax/smt/queries.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt {

namespace {

// The template at symbolic sizes: main iterations (blk, j) with 0 <= blk < NB and 0 <= j < B at
// index a_blk·blk + a_j·j + c0, tail iterations j with 0 <= j < R at index t_j·j + B·NB, and
// n = B·NB + R pairs (R in [1, B - 1] with a tail, else 0).
struct Blocks {
  explicit Blocks(const BlockedOrderQuery& query) : q(query) {}
  const BlockedOrderQuery& q;
  z3::context c;
  z3::expr NB = c.int_const("NB"), R = c.int_const("R");
  z3::expr B() { return c.int_val(static_cast<int64_t>(q.block)); }
  z3::expr n() { return B() * NB + R; }
  z3::expr sizes() {
    return NB >= 0 && (q.tail ? (R >= 1 && R <= B() - 1) : R == 0);
  }
  z3::expr main_in(const z3::expr& blk, const z3::expr& j) { return blk >= 0 && blk < NB && j >= 0 && j < B(); }
  z3::expr main_index(const z3::expr& blk, const z3::expr& j) {
    return c.int_val(static_cast<int64_t>(q.blk_coef)) * blk + c.int_val(static_cast<int64_t>(q.j_coef)) * j +
           c.int_val(static_cast<int64_t>(q.offset));
  }
  z3::expr tail_in(const z3::expr& j) { return j >= 0 && j < R; }
  z3::expr tail_index(const z3::expr& j) { return c.int_val(static_cast<int64_t>(q.tail_j_coef)) * j + B() * NB; }
};

InductionStep query(const BlockedOrderQuery& q, const std::string& name, const std::string& statement,
                    const SmtLimits& limits, const std::function<z3::expr(Blocks&)>& negation) {
  return detail::integer_fact<Blocks>(name, statement, limits, negation, q);
}

}  // namespace

std::vector<InductionStep> prove_blocked_order(const BlockedOrderQuery& q, const SmtLimits& limits) {
  std::vector<InductionStep> out;
  out.push_back(query(q, "main.order", "a later (block, cell) of the main loop reads a later pair", limits,
                      [](Blocks& v) {
                        z3::expr b1 = v.c.int_const("blk1"), j1 = v.c.int_const("j1"), b2 = v.c.int_const("blk2"),
                                 j2 = v.c.int_const("j2");
                        return v.main_in(b1, j1) && v.main_in(b2, j2) && (b1 < b2 || (b1 == b2 && j1 < j2)) &&
                               v.main_index(b1, j1) >= v.main_index(b2, j2);
                      }));
  out.push_back(query(q, "main.range", "the main loop reads pairs 0 <= t < B·NB only", limits, [](Blocks& v) {
    z3::expr b = v.c.int_const("blk"), j = v.c.int_const("j");
    return v.main_in(b, j) && (v.main_index(b, j) < 0 || v.main_index(b, j) >= v.B() * v.NB);
  }));
  out.push_back(query(q, "main.cover", "every pair 0 <= t < B·NB is read by block t div B, cell t mod B", limits,
                      [](Blocks& v) {
                        z3::expr t = v.c.int_const("t");
                        z3::expr b = t / v.B(), j = t % v.B();
                        return t >= 0 && t < v.B() * v.NB && !(v.main_in(b, j) && v.main_index(b, j) == t);
                      }));
  if (!q.tail) return out;
  out.push_back(query(q, "tail.order", "a later cell of the tail reads a later pair", limits, [](Blocks& v) {
    z3::expr j1 = v.c.int_const("j1"), j2 = v.c.int_const("j2");
    return v.tail_in(j1) && v.tail_in(j2) && j1 < j2 && v.tail_index(j1) >= v.tail_index(j2);
  }));
  out.push_back(query(q, "tail.range", "the tail reads pairs B·NB <= t < n only, after every main pair", limits,
                      [](Blocks& v) {
                        z3::expr j = v.c.int_const("j");
                        return v.tail_in(j) && (v.tail_index(j) < v.B() * v.NB || v.tail_index(j) >= v.n());
                      }));
  out.push_back(query(q, "tail.cover", "every pair B·NB <= t < n is read by tail cell t - B·NB", limits,
                      [](Blocks& v) {
                        z3::expr t = v.c.int_const("t");
                        z3::expr j = t - v.B() * v.NB;
                        return t >= v.B() * v.NB && t < v.n() && !(v.tail_in(j) && v.tail_index(j) == t);
                      }));
  return out;
}

}  // namespace fp::verify::smt
