// Config, tier, placement and executor options in one call (pipeline/prepared_program.h).
#include "pipeline/prepared_program.h"

#include "pipeline/checked_tier.h"

namespace fp {

PlacementConfig placement_config(const Config& config) {
  return PlacementConfig{config.max_inline_reduction()};
}

ExecOptions exec_options(const Config& config, std::string source_name, int threads) {
  ExecOptions eo;
  eo.source_name = std::move(source_name);
  eo.threads = threads;
  eo.placement = placement_config(config);
  return eo;
}

PreparedProgram prepare_program(const Routine& r, const Config& config, const PrepareOptions& options) {
  PreparedProgram p;
  if (options.rewrite) {
    p.tier = run_tier_checked(r, config, options.tier);
    p.routine = p.tier->routine;
  } else {
    p.routine = r;
  }
  p.exec = exec_options(config, options.source_name, options.threads);
  return p;
}

}  // namespace fp
