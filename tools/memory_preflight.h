#pragma once
// --max-memory and the check every command that executes a routine (run, diff, verify, bench)
// makes before it allocates or compiles anything: the run's estimated peak (exec/run_memory.h)
// against the limit (core/memory_limit.h). Over it: exit 69 naming the biggest buffers.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "exec/run_memory.h"
#include "verify/engine.h"

namespace fp::cli {

// Adds --max-memory SIZE to `sub`, stored in `value` (empty: the default limit). A malformed size is
// a usage error at parse time.
void add_max_memory_option(CLI::App& sub, std::string& value);

// What verify's interpreter trials hold at once: each task runs its source and target on one input
// set, and `jobs` tasks run in parallel (the biggest ones, at worst).
RunMemory verify_run_memory(const std::vector<verify::Task>& tasks, int jobs);

// Throws UserError(kExitUnavailable) when `need` is over the limit `flag` selects.
void preflight_memory(const RunMemory& need, const std::string& flag, const std::string& what);

}  // namespace fp::cli
