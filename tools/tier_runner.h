#pragma once
// Runs the rewrite tier for a subcommand. A tier that does not converge, or that emits a
// malformed routine, is a bug in a member: it is reported as an internal error (exit 70) with the
// command that reproduces it, never hidden.

#include <optional>

#include "rewrites/tier.h"

namespace fp::cli {

// Prints a warning for each --only id whose gate is off (gated_off_selections, rewrites/tier.h).
void warn_gated_off_selections(const Config& config, const TierOptions& options);

// The tier's result, or nullopt after reporting an internal error (exit code already set to 70).
std::optional<RewriteResult> run_tier_checked(const Routine& r, const Config& config, const TierOptions& options);

}  // namespace fp::cli
