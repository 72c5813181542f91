#pragma once
// The per-cell summation order of the fused backward's gradients for every size (claims
// backward-dv, backward-dq and backward-dk; docs/online_softmax.md, Shape 3 "Claims"), read off the
// two routines independently of the rewrite's own reasoning. For a gradient G and the contraction
// operand X whose index carries the pair's other axis (k for dQ, q for dK, dO for dV):
//
// Source (on the IR): G is accumulated by exactly one statement `G[c] = add(G[c], mul(…))` with a
//   factor read of X, under loops of which exactly one, t (from 0, n iterations), is not a plain
//   iterator of c, and t is X's plain index on one axis: each cell of G adds its pairs
//   t = 0, 1, …, n − 1, in that order.
// Target (on the IR): the one top-level statement writing G copies each cell into a tile T
//   (`T[c'] = G[c]`), accumulates T only by `T[c'] = add(T[c'], mul(…))` with a factor read of X —
//   one main statement under a block loop blk (from 0, NB iterations) enclosing a cell loop j
//   (from 0, B iterations), X's index on the same axis a_blk·blk + a_j·j + c0, and at most one
//   tail statement after the block loop (j from 0, R iterations, index t_j·j + off, off = B·NB) —
//   and copies T back (`G[c] = T[c']`, the same two index lists); every other loop of these
//   statements is a plain iterator of c', and none is guarded.
// Sizes (Z3, smt::prove_blocked_order): for every block count NB >= 0 and, with a tail, every tail
//   length 1 <= R < B (without one, R = 0), the target reads each cell's pairs 0, …, n − 1 in
//   ascending order, each once, for n = B·NB + R — as the source does for n pairs.
//
// So for every size of this template every gradient cell adds the same pairs in the same order on
// both sides. What each pair's term is — bit for bit for dV, within the bound for dQ and dK — is
// each claim's own check at the routine's sizes.

#include <string>
#include <vector>

#include "core/ir.h"
#include "verify/verdict.h"

namespace fp::verify {

struct GradientOrderLift {
  bool proved = false;
  std::string why_not;             // when not proved: the first failed condition
  std::vector<std::string> steps;  // the structure read and the Z3 facts
  std::string statement;           // when proved: what holds, with the template's sizes
};

// `dump_prefix` non-empty: the Z3 queries are written as PREFIX-NAME.smt2.
GradientOrderLift lift_gradient_order(const Routine& src, const Routine& tgt, const std::string& gradient,
                                      const std::string& operand, const Limits& limits,
                                      const std::string& dump_prefix);

}  // namespace fp::verify
