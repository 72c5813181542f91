#pragma once
// `flashproof diff`'s adapter to the verify layer:
//  - the plan of a --rewrite diff is verify's (verify/diff_plan.h): what each output is compared
//    with;
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
#include "verify/diff_plan.h"

namespace fp::cli {


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
  std::vector<std::string> claims;  // "SHAPE CLAIM: exact|bounded" per obligation
  std::vector<std::string> notes;  // the plan's notes
  std::string case_dir;  // written on mismatch
  std::string replay;
  std::string command;
};

std::string render_diff_report(const DiffReport& r, const std::string& format);
// 0 agree, 1 mismatch, 2 unknown (when fail_on_unknown), else 0 for unknown.
int diff_exit_code(const DiffReport& r, bool fail_on_unknown);

}  // namespace fp::cli
