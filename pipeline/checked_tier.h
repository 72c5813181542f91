#pragma once
// The rewrite tier with its output re-checked. The tier promises a routine as well formed as the
// one it was given; a member that breaks that promise is a bug, caught here before the routine
// reaches placement, an executor or a proof. Every command that runs the tier (`rewrite`, `run`,
// `diff`, `bench`, `verify`) checks its output through this file, so a tier bug is reported the
// same way everywhere: as an internal error, exit 70 with the command that reproduces it (main()
// reports every exception that reaches it so), like TierDidNotConverge.

#include <stdexcept>
#include <string>

#include "core/ir.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"

namespace fp {

// The tier's output fails the well-formedness checker: a member broke its contract (an internal
// error, never a user error).
class MalformedRewrite : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Throws MalformedRewrite naming the first problem the checker finds in the tier's output.
void check_tier_output(const RewriteResult& result);

// run_tier, then check_tier_output. Throws what run_tier throws (TierDidNotConverge; UserError 64
// for an unknown --only/--disable id) and MalformedRewrite.
RewriteResult run_tier_checked(const Routine& r, const Config& config, const TierOptions& options = {});

}  // namespace fp
