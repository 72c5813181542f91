#pragma once
// --only and --disable, the options that select the tier's members (`rewrite`, `verify`), and the
// warning for a selection its config gate turns off.

#include <CLI/CLI.hpp>

#include "rewrites/config.h"
#include "rewrites/tier.h"

namespace fp::cli {

void add_tier_options(CLI::App& sub, TierOptions& tier);

// Prints a warning for each --only id whose gate is off (gated_off_selections, rewrites/tier.h).
void warn_gated_off_selections(const Config& config, const TierOptions& options);

}  // namespace fp::cli
