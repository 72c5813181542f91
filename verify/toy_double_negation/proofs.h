#pragma once
// The proofs of the toy member `toy-double-negation` (rewrites/toy_double_negation/): one checker,
// all-sizes-lift.double-negation, for its claim `strip`. Like every member's proof folder, it is
// handed to the engine with one line (verify/proofs.cpp for a product member; the tests register
// the toy's for their scope).
//
// all-sizes-lift.double-negation, independent of the rewriter's own matcher:
//   structure  (on the IR, no extent used) the target is the source with, in the application's
//              statement, some stores of neg.p(neg.p(x)) storing x, every other statement, loop,
//              index and expression identical;
//   scalar     (Z3, floating point, for each such p) neg.p(neg.p(x)) = x for every x of p;
// together: every cell is stored the same value at every size, so the claim holds for all sizes
// (verify/checkers/exact_lift.h then cross-checks a small instance bitwise). Without the
// structure, the bitwise check at the routines' own sizes decides.

#include <vector>

#include "verify/checkers.h"

namespace fp::verify {

std::vector<Checker> toy_double_negation_checkers();

}  // namespace fp::verify
