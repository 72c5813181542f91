#pragma once
// The normalizer bound proved by induction (verify/online_softmax/smt/induction.cpp, docs/bounds.md §5 "(a)
// induction") instantiated at one n: the constants those queries take (exp error and underflow
// terms at or above the formula's) and the proved formula's value at n evaluated with MPFR,
// every step rounded upward, to compare with the REL the report states.

#include <cstdint>

#include "core/ir.h"
#include "verify/online_softmax/smt/queries.h"

namespace fp::verify {

// The query's constants for (storage, state): u = 2^-bits, ε = exp_error (rounding_model), the
// underflow terms 2^max(e_p, -200) + 2^-200 >= ω_p + ω_64 (e_p = log2 ω_p).
smt::InductionQuery induction_query(Prec storage, Prec state, double exp_ulp);

// The proved B_src, B_tgt, REL at n for the query's constants, rounded up (MPFR, 256 bits, then
// up to double); defined when (n - 1)·u_s < 1 and B_src < 1. `covered`: the 256-bit upper bound
// of REL is at or below `stated` (the REL a report states), compared exactly.
struct InductionInstance {
  bool defined = false;
  double b_src = 0, b_tgt = 0, rel = 0;
  bool covered = false;
};
InductionInstance induction_instance(const smt::InductionQuery& q, std::int64_t n, double stated);

}  // namespace fp::verify
