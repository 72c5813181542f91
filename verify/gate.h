#pragma once
// The CI gate of a verify run: which verdicts and findings fail it, and its exit code
// (docs/architecture.md's table; docs/verify.md, "CI gates").
//
//   --fail-on refuted|unknown   unknown verdicts fail the run (unknown, the default) or not
//   --expect applied            every decline and every program with nothing applied fails the run
//   --expect obligations        (the default) a run with no obligation at all fails: nothing proved
//                               is never green
//   --expect anything           neither fails the run (the findings are still in every report)
//   --baseline FILE             only regressions against the baseline fail (verify/baseline.h)
//
// Exit codes, the first that applies: 1 a failing refuted verdict, 65 a failing error verdict, 2 a
// failing unknown, 3 a failing finding (a decline, nothing applied, a lost or narrowed proof), 0.

#include <optional>
#include <string>
#include <vector>

#include "verify/baseline.h"
#include "verify/findings.h"
#include "verify/verdict.h"

namespace fp::verify {

enum class FailOn : std::uint8_t { Refuted, Unknown };
enum class Expect : std::uint8_t { Anything, Obligations, Applied };
const char* expect_name(Expect e);  // "anything", "obligations", "applied"

struct Gate {
  FailOn fail_on = FailOn::Unknown;
  Expect expect = Expect::Obligations;
  std::optional<BaselineComparison> baseline;
};

bool verdict_fails(const Verdict& v, const Gate& gate);
// `obligations`: how many obligations the whole run has.
bool finding_fails(const Finding& f, std::size_t obligations, const Gate& gate);
int gate_exit_code(const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings, const Gate& gate);
// One line: "gate: passes (...)" or "gate: fails with exit N: ...", naming what failed it and the
// option that would change it.
std::string gate_line(const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings, const Gate& gate);
// Under a baseline: "new", "unchanged" or "updated" for a verdict or finding key (SARIF
// baselineState); "" without one.
std::string baseline_state(const std::string& key, const Gate& gate);

}  // namespace fp::verify
