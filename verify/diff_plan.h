#pragma once
// What each output of a `flashproof diff --rewrite` is compared with (docs/executors.md):
//  - outputs no bounded claim reaches: bitwise;
//  - outputs with a certified bound — the plan the claim's checker derives (verify/checkers.h,
//    Checker::plan; for a reassociated sum l, say: l within its certified REL relative to |l|,
//    the quotients P = e / l relative to |P|, a contraction of P relative to Σ|P·v| per cell,
//    verify/downstream_bounds.h): that bound, computed per cell from the original run instrumented
//    with Σ|P·v|;
//  - outputs downstream of a bounded claim without a certified bound (a second layer fed by a
//    perturbed output, gradients): the checker's stand-in relative tolerance, whose violation makes
//    the verdict unknown, never mismatch.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/tier.h"
#include "verify/compare.h"
#include "verify/downstream_bounds.h"

namespace fp::verify {

struct RewriteDiffPlan {
  // The original routine with the certified plans' Σ|w·v| nodes added as outputs (values of the
  // original's own nodes unchanged): what the first executor runs.
  Routine source;
  std::map<std::string, NodeCheck> certified;          // output -> its certified check
  std::map<std::string, std::string> statements;       // output -> the certified statement
  std::set<std::string> stand_in;                      // outputs compared with the stand-in
  double stand_in_bound = 0;
  std::vector<std::string> notes;  // why an output reached by a bounded claim has no certified bound
  // The plans' completions (DownstreamPlan::complete): scale nodes computed from the first run.
  std::vector<std::function<std::vector<Uncertified>(TensorMap&, const RunRoutine&)>> completions;

  // Adds every certified check's scale node that the plans compute after the run to `source_outputs`
  // (the first executor's run of `source`); `run` runs a routine on that executor. A check the run
  // falls outside of (a non-finite input) moves to the stand-in, with a note. Call it before
  // comparing.
  void complete(TensorMap& source_outputs, const RunRoutine& run);

  // How output `node` is compared: its certified check, the stand-in, or bitwise.
  NodeCheck check_for(const std::string& node) const;
};

RewriteDiffPlan plan_rewrite_diff(const Routine& original, const RewriteResult& result);

}  // namespace fp::verify
