#pragma once
// The engine's own checkers (verify/checkers.h lists what each decides); members' checkers live in
// their proof folders (verify/proofs.cpp registers them).

#include "verify/checkers.h"

namespace fp::verify {

Checker bitwise_checker();
Checker relative_checker();
Checker unrecognized_pair_checker();
Checker loop_permutation_lift_checker();

}  // namespace fp::verify
