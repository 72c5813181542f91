// --only, --disable and their warning (tools/tier_options.h).
#include "tools/tier_options.h"

#include "core/diagnostic_render.h"

namespace fp::cli {

void add_tier_options(CLI::App& sub, TierOptions& tier) {
  sub.add_option("--only", tier.only,
                 "Apply only this member or shape (repeatable), a member or shape id of list-rewrites; config "
                 "gates still apply");
  sub.add_option("--disable", tier.disable, "Do not apply this member or shape (repeatable)");
}

void warn_gated_off_selections(const Config& config, const TierOptions& options) {
  for (const auto& w : gated_off_selections(config, options))
    print_diagnostic(DiagnosticText{Severity::Warning, "", 0, 0, w});
}

}  // namespace fp::cli
