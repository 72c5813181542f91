// The rewrite tier with its output re-checked (pipeline/checked_tier.h).
#include "pipeline/checked_tier.h"

#include <fmt/format.h>

#include "core/checker.h"

namespace fp {

void check_tier_output(const RewriteResult& result) {
  const std::vector<Diagnostic> problems = check_routine(result.routine);
  if (!problems.empty())
    throw MalformedRewrite(
        fmt::format("the rewritten routine is malformed: {} {}", problems[0].where, problems[0].message));
}

RewriteResult run_tier_checked(const Routine& r, const Config& config, const TierOptions& options) {
  RewriteResult result = run_tier(r, config, options);
  check_tier_output(result);
  return result;
}

}  // namespace fp
