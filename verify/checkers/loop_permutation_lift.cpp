// `all-sizes-lift.loop-permutation`: a rewrite that moves loops inside a reduction, each moved
// loop indexing the reduction's target, keeps every cell's contributions and their order for
// every extent (verify/loop_permutation_lift.h, Z3 over integers); the bitwise check of a small instance
// runs too and can only agree (verify/checkers/exact_lift.h).

#include "verify/checkers/builtin.h"
#include "verify/checkers/exact_lift.h"
#include "verify/loop_permutation_lift.h"

namespace fp::verify {

Checker loop_permutation_lift_checker() {
  return exact_lift_checker(
      "all-sizes-lift.loop-permutation",
      "loops moved inside a reduction keep every cell's summation order for all extents, plus the bitwise check "
      "of a small instance",
      [](const Task& t, const EngineOptions& o) {
        const std::string dump = dump_prefix(t, o);
        const LiftResult lift =
            lift_loop_permutation(t.src, t.tgt, t.app, o.limits, dump.empty() ? "" : dump + "-lift");
        return ExactLift{lift.proved, lift.why_not, lift.steps,
                         "every target cell receives the same contributions in the same order for all extents "
                         "(Z3, integer arithmetic), each computed from the same values",
                         std::nullopt};
      });
}

}  // namespace fp::verify
