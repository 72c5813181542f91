#pragma once
// From a checked routine and a resolved config to what an executor takes, in one call. Every
// command that executes a routine (`run`, `diff`, `bench`) runs the same sequence:
//   1. the rewrite tier, its output re-checked (pipeline/checked_tier.h), when the command rewrites
//      — the tier runs before placement, as in every lowering, so what runs is the rewritten code;
//   2. placement's settings from the config (virtualize_max_inline_reduction);
//   3. the executor options: those settings, the worker threads, the source name for messages.
// This is the one place a config key reaches the executors: a command never copies one by hand.
//
// Why here: the sequence joins rewrites/ (the Config, the tier) and exec/ (ExecOptions), which
// must not see each other; it is not verification, so verify/ is not its place; and tools/ holds
// only the command line. pipeline/ may use core, rewrites and exec.

#include <optional>
#include <string>

#include "core/ir.h"
#include "core/placement.h"
#include "exec/executor.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"

namespace fp {

struct PrepareOptions {
  // Where the routine came from, for messages ("attn.fp").
  std::string source_name;
  // ExecOptions::threads: 0 = $FLASHPROOF_THREADS, else every hardware thread.
  int threads = 0;
  // Run the tier (`diff` without --rewrite runs the routine as given).
  bool rewrite = true;
  TierOptions tier;
};

struct PreparedProgram {
  // What runs: the tier's output, or the routine as given when the tier did not run.
  Routine routine;
  // The tier's record (applications, obligations, declines) when it ran.
  std::optional<RewriteResult> tier;
  // What make_executor takes.
  ExecOptions exec;
};

// The placement settings `config` selects.
PlacementConfig placement_config(const Config& config);

// Executor options under `config` (placement_config), for a routine from `source_name`.
ExecOptions exec_options(const Config& config, std::string source_name, int threads = 0);

// Steps 1 to 3 above on `r` (which must pass the checker). Throws what run_tier_checked throws.
PreparedProgram prepare_program(const Routine& r, const Config& config, const PrepareOptions& options = {});

}  // namespace fp
