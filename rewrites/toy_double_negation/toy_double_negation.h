#pragma once
// The toy member `toy-double-negation` (gate `toy_double_negation`): the smallest complete member,
// and the one to copy when adding a rewrite (docs/adding-a-rewrite.md walks through it). It is not
// registered in the product: the tests register it for their scope, with the same two lines a
// product member has in rewrites/members.cpp and verify/proofs.cpp.
//
// One shape, toy-double-negation.strip:
//   matches  every cell store `N[i…] = neg.p(neg.p(x))` whose two negations and x are at one
//            precision p, anywhere in the routine's statement tree
//   emits    the same store of x
//   claims   `strip`, exact: every stored cell is bit for bit the original's, for every input and
//            every size; discharged by its own checker, all-sizes-lift.double-negation
//            (verify/toy_double_negation/)
//   declines `mixed-precision` for a double negation whose parts are not at one precision (a
//            negation that rounds is not an involution)
// Idempotent: its output has no double negation left at one precision.

#include "rewrites/member.h"

namespace fp {

Member toy_double_negation_member();

}  // namespace fp
