// The options several subcommands share (tools/shared_options.h).
#include "tools/shared_options.h"

#include <fmt/format.h>

#include "core/diagnostic_render.h"
#include "core/memory_limit.h"
#include "exec/executor.h"
#include "tools/option_checks.h"

namespace fp::cli {

namespace {

// "a", "a or b", "a, b or c".
std::string or_list(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

}  // namespace

const std::vector<std::string>& report_formats() {
  static const std::vector<std::string> formats = {"text", "json", "jsonl", "junit", "sarif"};
  return formats;
}

CLI::Option* add_format_option(CLI::App& sub, std::string& format, const std::vector<std::string>& choices) {
  return sub.add_option("--format", format, "Report format: " + or_list(choices))
      ->check(CLI::IsMember(choices))
      ->capture_default_str();
}

CLI::Option* add_fail_on_option(CLI::App& sub, std::string& fail_on) {
  return sub
      .add_option("--fail-on", fail_on,
                  "Exit non-zero on: unknown (the default: exit 2 when anything is unknown, so CI fails on "
                  "it too) or refuted (exit 1 only for a refutation or a mismatch)")
      ->check(CLI::IsMember({"unknown", "refuted"}))
      ->capture_default_str();
}

CLI::Option* add_output_option(CLI::App& sub, std::string& path, const std::string& what) {
  return sub.add_option("-o,--output", path, fmt::format("Write {} here (default: standard output)", what));
}

CLI::Option* add_case_dir_option(CLI::App& sub, std::string& dir, const std::string& what) {
  return sub.add_option("--case-dir", dir, "Where to write " + what);
}

CLI::Option* add_seed_option(CLI::App& sub, std::uint64_t& seed, const std::string& what) {
  return sub.add_option("--seed", seed, "Seed of " + what)->transform(any_integer<std::uint64_t>());
}

CLI::Option* add_seed_option(CLI::App& sub, std::optional<std::uint64_t>& seed, const std::string& what) {
  return sub.add_option("--seed", seed, "Seed of " + what)->transform(any_integer<std::uint64_t>());
}

CLI::Option* add_executor_option(CLI::App& sub, const std::string& flag, std::string& executor,
                                 const std::string& what) {
  std::vector<std::string> described;
  for (const ExecutorEntry& e : executor_registry())
    described.push_back(fmt::format("{} ({})", e.name, e.description));
  return sub.add_option(flag, executor, fmt::format("{}: {}", what, or_list(described)))
      ->check(CLI::IsMember(executor_names()))
      ->capture_default_str();
}

CLI::Option* mark_deprecated(CLI::Option* alias, CLI::Option* current) {
  const std::string old_name = alias->get_name(), new_name = current->get_name();
  // each() is a validator run after the checks already attached: a rejected value is reported
  // once, as an error, without the warning.
  // A group of its own, not hidden: CLI11 names a hidden option "" in its errors.
  alias->group(kDeprecatedGroup)->excludes(current);
  current->remove_excludes(alias);  // CLI11 links both ways; --help of `current` must not name it
  return alias->each([old_name, new_name](const std::string&) {
    print_diagnostic(DiagnosticText{Severity::Warning, "", 0, 0,
                                    fmt::format("{} is deprecated; use {}", old_name, new_name)});
  });
}

void add_max_memory_option(CLI::App& sub, std::string& value) {
  sub.add_option(
         "--max-memory", value,
         "Refuse a run whose buffers need more than SIZE (512M, 8G, 1.5T or unlimited; default 80% of "
         "the memory available)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return parse_memory_limit(v)
                       ? ""
                       : "expected a size like 512M, 8G or 1.5T, or 'unlimited', found '" + v + "'";
          },
          "SIZE"));
}

void preflight_memory(const RunMemory& need, const std::string& flag, const std::string& what) {
  check_run_memory(need, resolve_memory_limit(flag), what);
}

}  // namespace fp::cli
