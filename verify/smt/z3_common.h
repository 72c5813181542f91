#pragma once
// Shared helpers of the verify/smt/ sources (private to this folder: includes z3++.h).

#include <z3++.h>

#include <chrono>
#include <string>

#include "verify/smt/smt.h"

namespace fp::verify::smt::detail {

// Applies the limits to a solver.
void apply_limits(z3::context& c, z3::solver& s, const SmtLimits& limits);

// Runs check(), fills status / reasons / seconds, and writes the SMT-LIB2 dump if asked.
SmtOutcome run_check(z3::solver& s, const SmtLimits& limits);

// An exact rational numeral for a finite double.
z3::expr real_of(z3::context& c, double v);

}  // namespace fp::verify::smt::detail
