#pragma once
// Reports of a verify run, in every format the command line offers:
//   text   a verdict table, then one block per verdict that is not proved (and the bound of each
//          bounded verdict), then the summary line
//   json   one document: schema id and version, tool, input, summary, verdicts
//          (docs/report-schema.md, docs/verify-report.schema.json)
//   jsonl  one verdict object per line, then a final {"summary": …} line
//   junit  JUnit XML: one testcase per obligation; refuted is a failure, error an error,
//          unknown a failure under --fail-on=unknown and skipped otherwise
//   sarif  SARIF 2.1.0: ruleId = the rewrite (shape) id, level error / warning / note, location
//          = the application's source line
// and the exit code docs/architecture.md fixes: 1 when anything is refuted, 65 for an error
// verdict (bad input), 2 when anything is unknown under --fail-on=unknown, 0 otherwise.

#include <string>
#include <vector>

#include "verify/verdict.h"

namespace fp::verify {

inline constexpr const char* kReportSchemaId = "https://flashproof.dev/schemas/verify-report-1.json";
inline constexpr int kReportSchemaVersion = 1;

enum class FailOn : std::uint8_t { Refuted, Unknown };

struct ReportContext {
  std::string input;    // the verified file, or "SRC -> TGT"
  std::string command;  // the command line
  std::string config;   // describe_config(...) for tier runs
  FailOn fail_on = FailOn::Unknown;
  double seconds = 0;
  std::vector<std::string> notes;  // e.g. "no obligations: the tier applied nothing"
};

struct Summary {
  int total = 0, exact = 0, bounded = 0, refuted = 0, unknown = 0, error = 0, cached = 0;
};
Summary summarize(const std::vector<Verdict>& verdicts);
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
