#pragma once
// What a verify run found besides its verdicts, so that nothing is silent (docs/verify.md, "CI
// gates"): every decline of an enabled member's shape, a program on which the tier applied
// nothing, and what a baseline had that this run lost. Every report format lists them, each with
// its code, sentence, hint and source location, and the gate (verify/gate.h) decides which of them
// fail the run.

#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/tier.h"

namespace fp::verify {

enum class FindingKind : std::uint8_t {
  Decline,         // a shape declined a candidate (rewrites/application.h Decline)
  NothingApplied,  // the tier applied no rewrite to a program: no obligations, nothing proved
  Lost,            // a baseline's proved obligation or clean program this run no longer has
};
const char* finding_kind_name(FindingKind k);  // "decline", "nothing-applied", "lost"

// The rule of a program's nothing-applied finding and of a lost baseline entry (a decline's rule
// is its shape's id).
inline constexpr const char* kNothingAppliedRule = "nothing-applied";
inline constexpr const char* kBaselineRule = "baseline";

struct Finding {
  FindingKind kind = FindingKind::Decline;
  std::string file;
  int line = 0;
  std::string rule;    // the shape's id, kNothingAppliedRule or kBaselineRule
  std::string code;    // the decline's code, "nothing-applied", or "lost-obligation"
  std::string anchor;  // the node the declined candidate's anchor statement writes ("" when none)
  std::string sentence;
  std::string hint;  // what would change it (how to write the program, the option to set)
  // Stable across edits that do not touch the candidate: file, rule and anchor node (no line).
  std::string key;
};

// The declines of one tier run on `original` (read from `file`), anchored on the nodes their
// statements write in the routine their round received.
std::vector<Finding> decline_findings(const RewriteResult& result, const Routine& original, const std::string& file);

// A program the tier left as it was: `why` names the configuration that applied nothing (e.g.
// "every member's gate is off"), `hint` the setting that would change it.
Finding nothing_applied(const std::string& file, const std::string& why, const std::string& hint);

struct FindingCounts {
  int declines = 0, nothing_applied = 0, lost = 0;
};
FindingCounts count_findings(const std::vector<Finding>& findings);

// "FILE:LINE", or "FILE" when the line is unknown (0): a finding's or a verdict's location.
std::string location_text(const std::string& file, int line);
inline std::string finding_location(const Finding& f) { return location_text(f.file, f.line); }

}  // namespace fp::verify
