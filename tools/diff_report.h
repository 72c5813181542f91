#pragma once
// `flashproof diff`'s adapter to the verify layer:
//  - plan_rewrite_diff(): what each output of a --rewrite diff is compared with. Outputs no
//    bounded claim reaches: bitwise. Outputs with a certified bound (verify's per-claim plan,
//    verify/downstream_bounds.h: the normalizer within its certified REL relative to |l|, the
//    probabilities relative to |P|, the value contraction relative to Σ|P·v| per cell): that
//    bound, computed per cell from the original run instrumented with Σ|P·v|. Outputs downstream
//    of a bounded claim without a certified bound (e.g. a second layer fed by a perturbed output,
//    gradients): a stand-in relative tolerance, whose violation makes the verdict unknown, never
//    mismatch.
//  - render_diff_report(): the report in the formats every reporting subcommand takes (text, json,
//    jsonl, junit, sarif) and diff_exit_code() with the tool's exit codes (0 agree, 1 mismatch,
//    2 unknown under --fail-on=unknown).
// docs/executors.md states exactly what they compute.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"
#include "rewrites/tier.h"
#include "verify/compare.h"

namespace fp::cli {

struct RewriteDiffPlan {
  // The original routine with the certified plans' Σ|w·v| nodes added as outputs (values of the
  // original's own nodes unchanged): what the first executor runs.
  Routine source;
  std::map<std::string, verify::NodeCheck> certified;  // output -> its certified check
  std::map<std::string, std::string> statements;       // output -> the certified statement
  std::set<std::string> stand_in;                      // outputs compared with the stand-in
  double stand_in_bound = 0;
  std::vector<std::string> notes;  // why an output reached by a bounded claim has no certified bound
};

RewriteDiffPlan plan_rewrite_diff(const Routine& original, const RewriteResult& result);

struct DiffReport {
  std::string file;
  std::string executor_a, executor_b;
  bool rewrite = false;
  std::string inputs;  // "seed 1" or "q=q.npy k=k.npy ..."
  // "agree", "mismatch" (bitwise or certified comparison fails), "unknown" (an executor
  // unavailable — the command then exits 69, not diff_exit_code — or only a stand-in comparison
  // fails), "error".
  std::string verdict;
  std::string message;  // one sentence
  std::vector<verify::OutputComparison> outputs;  // run A is the source, run B the target
  std::map<std::string, std::string> statements;  // certified output -> the bound it is held to
  std::vector<std::string> claims;  // "online-softmax.normalizer-scan normalizer-sum: bounded"
  std::vector<std::string> notes;  // the plan's notes
  std::string case_dir;  // written on mismatch
  std::string replay;
  std::string command;
};

std::string render_diff_report(const DiffReport& r, const std::string& format);
// 0 agree, 1 mismatch, 2 unknown (when fail_on_unknown), else 0 for unknown.
int diff_exit_code(const DiffReport& r, bool fail_on_unknown);

}  // namespace fp::cli
