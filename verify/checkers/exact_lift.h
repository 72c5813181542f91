#pragma once
// The discharge shared by the exact all-sizes lifts (the loop permutation, members' lifts): a
// structural proof over symbolic extents, then a bitwise check of a small instance of the same
// family (verify/size_reduction.h shrink_pair) as a cross-check that can only agree. Without the
// proof, the bitwise check at the routines' own sizes decides, scoped to those sizes.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "verify/checkers.h"
#include "verify/size_reduction.h"

namespace fp::verify {

struct ExactLift {
  bool proved = false;
  std::string why_not;             // when not proved: the first failed condition
  std::vector<std::string> steps;  // the proof's steps, for the report
  std::string proof;               // what the proof establishes, one sentence (when proved)
  // The small instance of the family the cross-check runs on, when the lift supplies one (a
  // target that hard-codes sizes is shrunk by re-emitting it: size_reduction.h
  // faithful_cross_check_instance); else the pair's extents are substituted (cross_check_instance).
  std::optional<ShrunkPair> instance;
};

void discharge_exact_lift(Verdict& v, const Task& t, const EngineOptions& o, const ExactLift& lift);

// A checker that runs `lift` and then discharge_exact_lift.
using LiftFunction = std::function<ExactLift(const Task& t, const EngineOptions& o)>;
Checker exact_lift_checker(std::string id, std::string description, LiftFunction lift);

}  // namespace fp::verify
