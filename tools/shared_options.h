#pragma once
// The options several subcommands share, declared in one place so that each has one spelling,
// one meaning and one way of being checked wherever it appears (docs/cli.md lists them):
//
//   --format FORMAT   the report's format; the choices are a set (CLI11 IsMember): --help lists
//                     them and any other value is a usage error (64) that lists them too
//   --fail-on WHAT    unknown (the default) or refuted, as a set likewise
//   -o, --output FILE where the report (or the routine) goes; standard output when absent or "-"
//   --case-dir DIR    where a replayable case (a counterexample, a mismatch) is written
//   --seed N          the seed of every random input and random choice (0 to 2^64 - 1)
//   --executor NAME   one of exec/executor.h's registered executors, named in the help text and in
//                     the error for any other name
//   --max-memory SIZE the limit every command that executes a routine checks first
//
// An older spelling (verify's --cex-dir, run's --random-inputs) stays as a deprecated alias: it
// still works, is listed apart in --help ("Deprecated:"), is never offered by "did you mean", and
// says on standard error which spelling replaces it.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "exec/run_memory.h"

namespace fp::cli {

// The report formats of the commands that report verdicts (verify, diff).
const std::vector<std::string>& report_formats();

// --format, one of `choices` (the first is the default shown in --help).
CLI::Option* add_format_option(CLI::App& sub, std::string& format, const std::vector<std::string>& choices);

// --fail-on: "unknown" (the default: exit 2 when anything is unknown) or "refuted".
CLI::Option* add_fail_on_option(CLI::App& sub, std::string& fail_on);

// -o/--output FILE; `what` names what is written there ("the report", "the routine").
CLI::Option* add_output_option(CLI::App& sub, std::string& path, const std::string& what);

// --case-dir DIR; `what` says which cases and the default ("counterexample cases (default
// flashproof-cex)").
CLI::Option* add_case_dir_option(CLI::App& sub, std::string& dir, const std::string& what);

// --seed N. `what` completes "Seed of ..." with what it draws and its default.
CLI::Option* add_seed_option(CLI::App& sub, std::uint64_t& seed, const std::string& what);
CLI::Option* add_seed_option(CLI::App& sub, std::optional<std::uint64_t>& seed, const std::string& what);

// `flag` (--executor, --vs) choosing a registered executor; `what` opens the help text ("First
// executor"), which then lists the registry's names and descriptions.
CLI::Option* add_executor_option(CLI::App& sub, const std::string& flag, std::string& executor,
                                 const std::string& what);

// The --help group of deprecated spellings (tools/cli_errors.cpp never suggests them).
inline constexpr const char* kDeprecatedGroup = "Deprecated";

// Adds `old_name` as a deprecated spelling of `current`, storing into the same `destination`
// through `checks` (attached with transform(), as `current`'s are): in kDeprecatedGroup, and
// excluding `current`. Using it prints "warning: OLD is deprecated; use NEW" on standard error once its value
// passed the checks (a rejected value is one error, without the warning).
template <class T>
CLI::Option* add_deprecated_alias(CLI::App& sub, const std::string& old_name, CLI::Option* current,
                                  T& destination, const std::vector<CLI::Validator>& checks = {});

// --max-memory SIZE (empty: the default limit). A malformed size is a usage error at parse time.
void add_max_memory_option(CLI::App& sub, std::string& value);

// Throws UserError(kExitUnavailable) when `need` is over the limit `flag` (--max-memory's value)
// selects; `what` names the file in the message.
void preflight_memory(const RunMemory& need, const std::string& flag, const std::string& what);

// --- implementation of the template ---
CLI::Option* mark_deprecated(CLI::Option* alias, CLI::Option* current);

template <class T>
CLI::Option* add_deprecated_alias(CLI::App& sub, const std::string& old_name, CLI::Option* current,
                                  T& destination, const std::vector<CLI::Validator>& checks) {
  CLI::Option* alias = sub.add_option(old_name, destination, "Deprecated spelling of " + current->get_name());
  for (const CLI::Validator& v : checks) alias->transform(v);
  return mark_deprecated(alias, current);
}

}  // namespace fp::cli
