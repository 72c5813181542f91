#pragma once
// The proofs of the product's members: each member's proof folder (verify/<member>/) hands over its
// checkers, one line each in verify/proofs.cpp, in the tier's member order (rewrites/members.cpp).

#include <vector>

#include "verify/checkers.h"

namespace fp::verify {

// Every product member's checkers, after the engine's own (checkers/builtin.h).
std::vector<Checker> member_checkers();

}  // namespace fp::verify
