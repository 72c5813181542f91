#pragma once
// Equality of programs and expressions up to what cannot change a value:
//   - the order of an affine index's terms (2*t + j and j + 2*t name the same cell);
//   - the order of the operands of + and · and of fma's product (IEEE 754 addition and
//     multiplication are commutative: the correctly rounded exact sum or product does not depend
//     on the order, and the semantics count every NaN equal);
//   - how a statement list is grouped: a Seq inside a body runs its statements in place, so
//     canonical_blocks splices it (and, as the rewriters build them, gives a `for` with several
//     statements one Seq body), whether the program was built in memory or parsed from text.
// Constants compare by bit pattern (every NaN equal); names, precisions, loop ranges, guards and
// statement order must match exactly.

#include <string>
#include <vector>

#include "core/ir.h"

namespace fp::verify {

// An index with its terms in symbol order.
Index sorted_index(const Index& i);
bool same_indices(const std::vector<Index>& a, const std::vector<Index>& b);

// Structural equality of two expressions up to index term order and commuted + and · operands.
bool same_up_to_commutation(const ExprP& a, const ExprP& b);

// One spelling of a statement tree (see above).
StmtP canonical_blocks(const StmtP& s);
Routine canonical_blocks(const Routine& r);

// The node declarations of `r` as one string (names, dims, precisions, flags, modes): with the
// statement tree's pointer, a key for results computed from a routine.
std::string declarations_signature(const Routine& r);

// Empty when `a` and `b` declare the same nodes and, block structure aside, run the same
// statements with expressions equal up to commutation; else the first difference, in words.
std::string program_difference(const Routine& a, const Routine& b);

}  // namespace fp::verify
