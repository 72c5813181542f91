#pragma once
// Shared helpers of the smt/ folders' sources (the engine's verify/smt/ and each member's
// verify/<member>/smt/; private to them: includes z3++.h).

#include <z3++.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "verify/smt/smt.h"

namespace fp::verify::smt::detail {

// Applies the limits to a solver.
void apply_limits(z3::context& c, z3::solver& s, const SmtLimits& limits);

// Runs check(), fills status / reasons / seconds, and writes the SMT-LIB2 dump if asked.
SmtOutcome run_check(z3::solver& s, const SmtLimits& limits);

// Runs `s` as the step `name` of a proof (proved when unsat); a dump path in `limits` is a prefix:
// PREFIX-NAME.smt2.
InductionStep run_step(z3::solver& s, const std::string& name, const std::string& statement,
                       const SmtLimits& limits);

// One fact over the integer variables of `Vars` (a struct holding its z3::context `c`, built from
// `args`, and a `sizes()` constraint): sizes ∧ negation unsat proves it.
template <class Vars, class... Args>
InductionStep integer_fact(const std::string& name, const std::string& statement, const SmtLimits& limits,
                           const std::function<z3::expr(Vars&)>& negation, Args&&... args) {
  Vars v(std::forward<Args>(args)...);
  z3::solver s(v.c);
  apply_limits(v.c, s, limits);
  s.add(v.sizes());
  s.add(negation(v));
  return run_step(s, name, statement, limits);
}

// A proof step written in SMT-LIB2 over the reals: its declarations, hypotheses and the negated
// conclusion (`ab` is the absolute value), so that unsat proves it for every value of its
// variables.
struct RealStep {
  const char* name;
  const char* statement;
  const char* smt;
};
// Runs `step` with `smt` as its text (the step's own, or a variant of it: a mutant), as run_step.
InductionStep run_real_step(const RealStep& step, const std::string& smt, const SmtLimits& limits);

// An exact rational numeral for a finite double.
z3::expr real_of(z3::context& c, double v);

}  // namespace fp::verify::smt::detail
