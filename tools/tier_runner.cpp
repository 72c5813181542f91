// Running the rewrite tier for a subcommand (tools/tier_runner.h).
#include "tools/tier_runner.h"

#include <cstdio>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/diagnostic_render.h"
#include "tools/command.h"

namespace fp::cli {

namespace {
void report_internal(const std::string& what) {
  std::fprintf(stderr, "flashproof: internal error: %s\nreproduce with: %s\n", what.c_str(), command_line().c_str());
  set_exit_code(kExitInternal);
}
}  // namespace

void warn_gated_off_selections(const Config& config, const TierOptions& options) {
  for (const auto& w : gated_off_selections(config, options))
    print_diagnostic(DiagnosticText{Severity::Warning, "", 0, 0, w});
}

std::optional<RewriteResult> run_tier_checked(const Routine& r, const Config& config, const TierOptions& options) {
  RewriteResult res;
  try {
    res = run_tier(r, config, options);
  } catch (const TierDidNotConverge& e) {
    report_internal(e.what());
    return std::nullopt;
  }
  // The tier's output must be as well formed as its input; anything else is a bug in a member.
  auto problems = check_routine(res.routine);
  if (!problems.empty()) {
    report_internal("the rewritten routine is malformed: " + problems[0].where + " " + problems[0].message);
    return std::nullopt;
  }
  return res;
}

}  // namespace fp::cli
