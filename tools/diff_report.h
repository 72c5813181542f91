#pragma once
// `flashproof diff`'s adapter to the verify layer, kept in one file so it can be switched over:
//  - bounded_claim_tolerance(): the relative bound a bounded claim's outputs are compared within,
//    from verify's certified formulas (verify/bounds/bound_formula.h);
//  - render_diff_report(): the report in the formats every reporting subcommand takes (text, json,
//    jsonl, junit, sarif) and diff_exit_code() with the tool's exit codes (0 agree, 1 mismatch,
//    2 unknown under --fail-on=unknown) — written here until verify/ has report writers.
// docs/executors.md states exactly what they compute; only this file changes when verify grows.

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"
#include "exec/differential.h"
#include "rewrites/application.h"

namespace fp::cli {

// The relative tolerance for outputs downstream of a bounded claim: verify's certified REL of the
// normalizer (n terms, storage and state precisions, exp within 0.52 ulp) carried through
// P = e / l and o = Σ P·v, i.e. max(REL, dot_perturbation(quotient_perturbation(0, REL))). The
// certified statement bounds |o' - o| relative to Σ|P·v| per cell; diff applies the value relative
// to max(|ref|, rms(ref)) per tensor (it does not compute Σ|P·v|). Where no certified form exists
// ((n-1)·u_storage >= 1) the stand-in 8·(n + 2)·u_state + 4·u_storage.
double bounded_claim_tolerance(const Obligation& o);
// The description printed with the comparison ("stand-in bound 8(n+2)u_state + 4u_storage, ...").
std::string bounded_claim_tolerance_source();

struct DiffReport {
  std::string file;
  std::string executor_a, executor_b;
  bool rewrite = false;
  std::string inputs;  // "seed 1" or "q=q.npy k=k.npy ..."
  // "agree", "mismatch", "unknown" (an executor unavailable), "error".
  std::string verdict;
  std::string message;  // one sentence
  std::vector<OutputComparison> outputs;
  std::vector<std::string> claims;  // "online-softmax.normalizer-scan normalizer-sum: bounded"
  std::string bound_source;
  std::string case_dir;  // written on mismatch
  std::string replay;
  std::string command;
};

std::string render_diff_report(const DiffReport& r, const std::string& format);
// 0 agree, 1 mismatch, 2 unknown (when fail_on_unknown), else 0 for unknown.
int diff_exit_code(const DiffReport& r, bool fail_on_unknown);

}  // namespace fp::cli
