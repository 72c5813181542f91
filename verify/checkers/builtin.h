#pragma once
// The product's checkers (verify/checkers.h lists what each decides).

#include "verify/checkers.h"

namespace fp::verify {

Checker bitwise_checker();
Checker relative_checker();
Checker loop_permutation_lift_checker();
Checker normalizer_max_lift_checker();
Checker online_normalizer_bound_checker();
Checker block_fold_sum_bound_checker();
Checker block_fold_output_bound_checker();
Checker fused_backward_bound_checker();
Checker fused_backward_dv_checker();

}  // namespace fp::verify
