#pragma once
// Reports of a verify run (one or many programs and hand-written pairs), in every format the
// command line offers:
//   text   one line per obligation (location, id, rewrite, covers, verdict, scope, time), one per
//          finding (a decline with its hint, a program with nothing applied, a lost proof), a short
//          block per verdict that is not proved (its counterexample's inputs inline), then the
//          summary and the gate's line; --details adds the solver, the limits and every verdict's
//          full block
//   json   one document: schema id and version, tool, inputs, gate, summary, verdicts, findings,
//          baseline (docs/report-schema.md, docs/verify-report.schema.json)
//   jsonl  one verdict object per line, one {"finding": …} per finding, then {"summary": …}
//   junit  JUnit XML: one testcase per obligation and per finding; what fails the gate is a
//          failure (an error verdict an error), everything else that is not proved is skipped
//   sarif  SARIF 2.1.0: ruleId = the rewrite (shape) id; kind/level per §3.27.10 (a proved
//          obligation is kind pass, level none: no alert); a decline is kind fail, level note (error
//          when it fails the gate); file locations relative to the uriBaseId SRCROOT
// and the gate's exit code (verify/gate.h).

#include <string>
#include <vector>

#include "verify/findings.h"
#include "verify/gate.h"
#include "verify/verdict.h"

namespace fp::verify {

inline constexpr const char* kReportSchemaId = "https://flashproof.dev/schemas/verify-report-1.json";
inline constexpr int kReportSchemaVersion = 1;

struct ReportContext {
  std::vector<std::string> inputs;  // the verified files, and "SRC -> TGT" per hand-written pair
  std::string command;              // the command line
  std::string config;               // describe_config(...) for tier runs
  Gate gate;
  double seconds = 0;
  std::vector<std::string> notes;  // e.g. "--only x selects a member whose gate is off"
  std::vector<Finding> findings;   // declines, programs with nothing applied, lost proofs
  bool details = false;            // text: the solver, limits and every verdict's full block
  // SARIF: the directory file locations are relative to (uriBaseId SRCROOT); the working
  // directory when empty.
  std::string source_root;
};

struct Summary {
  int total = 0, exact = 0, bounded = 0, refuted = 0, unknown = 0, error = 0, cached = 0;
};
Summary summarize(const std::vector<Verdict>& verdicts);
// The verdicts alone (no findings, no baseline): 1 refuted, 65 error, 2 unknown under
// FailOn::Unknown, else 0. gate_exit_code (verify/gate.h) is the run's.
int exit_code_for(const std::vector<Verdict>& verdicts, FailOn fail_on);

std::string report_text(const std::vector<Verdict>& verdicts, const ReportContext& ctx);
std::string report_json(const std::vector<Verdict>& verdicts, const ReportContext& ctx);
std::string report_jsonl(const std::vector<Verdict>& verdicts, const ReportContext& ctx);
std::string report_junit(const std::vector<Verdict>& verdicts, const ReportContext& ctx);
std::string report_sarif(const std::vector<Verdict>& verdicts, const ReportContext& ctx);

// Dispatch on "text" | "json" | "jsonl" | "junit" | "sarif".
std::string render_report(const std::string& format, const std::vector<Verdict>& verdicts,
                          const ReportContext& ctx);

}  // namespace fp::verify
