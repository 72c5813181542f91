// `all-sizes-lift.normalizer-scan`: the running max of an online normalizer scan is the composed
// max reduction, bit for bit, for every extent — the structural induction of
// verify/online_softmax/normalizer_lift.h — then the bitwise check of a small instance as a cross-check
// (verify/checkers/exact_lift.h). Without the lift, the bitwise check at the routines' sizes.

#include "verify/checkers/exact_lift.h"
#include "verify/online_softmax/checkers/checkers.h"
#include "verify/online_softmax/normalizer_lift.h"

namespace fp::verify {

Checker normalizer_max_lift_checker() {
  return exact_lift_checker(
      "all-sizes-lift.normalizer-scan",
      "a scan's running max is the composed max reduction, bit for bit, for every extent, plus the bitwise check "
      "of a small instance",
      [](const Task& t, const EngineOptions&) {
        const NormalizerLift lift = lift_normalizer(t.src, t.tgt, t.app);
        return ExactLift{lift.proved, lift.why_not, lift.steps,
                         "the scan folds max over the same scores of each row in the same order from -inf, for "
                         "every extent (structural induction over the scan's steps)",
                         std::nullopt};
      });
}

}  // namespace fp::verify
