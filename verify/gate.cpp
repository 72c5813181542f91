// The CI gate of a verify run (verify/gate.h).

#include "verify/gate.h"

#include <fmt/format.h>

#include "core/diagnostic.h"

namespace fp::verify {

const char* expect_name(Expect e) {
  switch (e) {
    case Expect::Anything:
      return "anything";
    case Expect::Obligations:
      return "obligations";
    case Expect::Applied:
      return "applied";
  }
  return "obligations";
}

bool verdict_fails(const Verdict& v, const Gate& gate) {
  if (gate.baseline) return gate.baseline->regressed.count(obligation_key(v)) > 0;
  return fails_on_its_own(v, gate.fail_on == FailOn::Unknown);
}

bool finding_fails(const Finding& f, std::size_t obligations, const Gate& gate) {
  if (gate.baseline) return gate.baseline->regressed.count(f.key) > 0;
  if (f.kind == FindingKind::Lost) return true;
  if (gate.expect == Expect::Applied) return true;
  return gate.expect == Expect::Obligations && obligations == 0 && f.kind == FindingKind::NothingApplied;
}

namespace {

struct Failures {
  int refuted = 0, error = 0, unknown = 0, declines = 0, nothing = 0, lost = 0, narrower = 0;
};

Failures failures_of(const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings, const Gate& gate) {
  Failures f;
  for (const Verdict& v : verdicts) {
    if (!verdict_fails(v, gate)) continue;
    f.refuted += v.kind == VerdictKind::Refuted;
    f.error += v.kind == VerdictKind::Error;
    f.unknown += v.kind == VerdictKind::Unknown;
    f.narrower += v.proved();  // a proved verdict fails only as a narrowed scope
  }
  for (const Finding& x : findings) {
    if (!finding_fails(x, verdicts.size(), gate)) continue;
    f.declines += x.kind == FindingKind::Decline;
    f.nothing += x.kind == FindingKind::NothingApplied;
    f.lost += x.kind == FindingKind::Lost;
  }
  return f;
}

std::string counted(int n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

}  // namespace

int gate_exit_code(const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings, const Gate& gate) {
  const Failures f = failures_of(verdicts, findings, gate);
  if (f.refuted) return kExitRefuted;
  if (f.error) return kExitMalformed;
  if (f.unknown) return kExitUnknown;
  if (f.declines || f.nothing || f.lost || f.narrower) return kExitExpectation;
  return kExitOk;
}

std::string gate_line(const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings, const Gate& gate) {
  const Failures f = failures_of(verdicts, findings, gate);
  std::vector<std::string> what;
  if (f.refuted) what.push_back(counted(f.refuted, "refuted obligation", "refuted obligations"));
  if (f.error) what.push_back(counted(f.error, "error", "errors"));
  if (f.unknown) what.push_back(counted(f.unknown, "unknown (--fail-on refuted accepts unknowns)", "unknowns (--fail-on refuted accepts unknowns)"));
  if (f.narrower) what.push_back(counted(f.narrower, "proof narrowed to the sizes as given", "proofs narrowed to the sizes as given"));
  if (f.lost) what.push_back(counted(f.lost, "lost proof", "lost proofs"));
  if (f.declines)
    what.push_back(counted(f.declines, "decline", "declines") +
                   (gate.baseline ? " not in the baseline" : " under --expect applied"));
  if (f.nothing)
    what.push_back(counted(f.nothing, "program", "programs") + " with nothing applied" +
                   (gate.baseline               ? " not in the baseline"
                    : gate.expect == Expect::Applied ? " under --expect applied"
                                                     : ": the run has no obligation (--expect anything accepts it)"));
  const std::string against = gate.baseline ? fmt::format(" against the baseline {}", gate.baseline->path) : "";
  const int code = gate_exit_code(verdicts, findings, gate);
  if (code == kExitOk)
    return fmt::format("gate: passes{} (--fail-on {}, --expect {})", against,
                       gate.fail_on == FailOn::Unknown ? "unknown" : "refuted", expect_name(gate.expect));
  std::string joined;
  for (const auto& w : what) joined += (joined.empty() ? "" : ", ") + w;
  return fmt::format("gate: fails with exit {}{}: {}", code, against, joined);
}

std::string baseline_state(const std::string& key, const Gate& gate) {
  if (!gate.baseline) return "";
  if (!gate.baseline->known.count(key)) return "new";
  return gate.baseline->regressed.count(key) ? "updated" : "unchanged";
}

}  // namespace fp::verify
