#pragma once
// The all-sizes proof of a loop permutation inside a reduction with one factor read hoisted out of
// the moved loops (`all-sizes-lift.loop-permutation`), independent of the rewrite's own reasoning:
//
// Structure (checked on the IR, sizes not involved):
//   - source and target have the same nodes, and the same top-level statements except the
//     application's one;
//   - the source statement is a reduction nest `for L { T[ti] = add(T[ti], mul(A, B)) }` (either
//     operand order of add and mul), A and B not reading T;
//   - the target statement is `for O { local p : prec(R); p := R; for I { S' } }` where R is one
//     of the factors, a read of a node other than T, the local has R's precision (so storing R
//     into it is exact), and S' is the source store with R replaced by p — every other operation,
//     precision and operand order unchanged; O ++ I is a permutation of L.
// Index level (Z3, integer arithmetic, every extent symbolic — smt::prove_order):
//   - the permutation is a bijection of iteration vectors;
//   - two iterations accumulating into one cell of T keep their relative order;
//   - R's cell depends only on the loops of O.
// Together: every cell of T receives the same contributions, each computed from the same
// values, in the same order, for every extent — bitwise equality for all sizes, for every
// memory state the statement starts from (so it composes with any other rewrite).

#include <string>
#include <vector>

#include "rewrites/application.h"
#include "verify/verdict.h"

namespace fp::verify {

struct LiftResult {
  bool proved = false;
  std::string why_not;  // the first failed condition (structure or a Z3 fact with its witness)
  std::vector<std::string> steps;
  bool unknown = false;  // a Z3 fact was undecided (vs. failed)
};

LiftResult lift_loop_permutation(const Routine& src, const Routine& tgt, const Application& app,
                           const Limits& limits, const std::string& dump_prefix);

}  // namespace fp::verify
