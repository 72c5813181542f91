#include "verify/online_softmax/proofs.h"

#include "verify/online_softmax/checkers/checkers.h"

namespace fp::verify {

std::vector<Checker> online_softmax_checkers() {
  return {
      normalizer_max_lift_checker(),     online_normalizer_bound_checker(), block_fold_max_lift_checker(),
      block_fold_sum_bound_checker(),    block_fold_output_bound_checker(), fused_backward_bound_checker(),
      fused_backward_dv_checker(),
  };
}

}  // namespace fp::verify
