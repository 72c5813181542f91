// `all-sizes-lift.normalizer-scan`: the running max of an online normalizer scan is the composed
// max reduction, bit for bit, for every extent — the structural induction of
// verify/normalizer_lift.h — then the bitwise check of a small instance as a cross-check
// (verify/checkers/exact_lift.h). Without the lift, the bitwise check at the routines' sizes.

#include "verify/checkers/builtin.h"
#include "verify/checkers/exact_lift.h"
#include "verify/normalizer_lift.h"

namespace fp::verify {

namespace {

void lift_then_check(Verdict& v, const Task& t, const EngineOptions& o) {
  const NormalizerLift lift = lift_normalizer(t.src, t.tgt, t.app);
  discharge_exact_lift(v, t, o,
                       ExactLift{lift.proved, lift.why_not, lift.steps,
                                 "the scan folds max over the same scores of each row in the same order from "
                                 "-inf, for every extent (structural induction over the scan's steps)"});
}

}  // namespace

Checker normalizer_max_lift_checker() {
  Checker c;
  c.id = "all-sizes-lift.normalizer-scan";
  c.description =
      "a scan's running max is the composed max reduction, bit for bit, for every extent, plus the bitwise "
      "check of a small instance";
  c.discharge = lift_then_check;
  return c;
}

}  // namespace fp::verify
