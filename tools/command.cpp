#include "tools/command.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <string_view>

#include "core/diagnostic.h"
#include "core/diagnostic_render.h"
#include "exec/executor.h"
#include "tools/option_checks.h"

namespace fp::cli {

namespace {
std::map<std::string, CommandSetup>& registry() {
  static std::map<std::string, CommandSetup> r;
  return r;
}
int g_exit_code = 0;
std::vector<std::string> g_command_arguments;
std::string g_command_line;

}  // namespace

std::string shell_quote(const std::string& a) {
  bool safe = !a.empty();
  for (char c : a)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./=:,+%@").find(c) != std::string_view::npos))
      safe = false;
  if (safe) return a;
  std::string q = "'";
  for (char c : a) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool register_command(const char* name, CommandSetup setup) {
  registry()[name] = setup;
  return true;
}

void add_registered_commands(CLI::App& app) {
  for (const auto& [name, setup] : registry()) setup(app);
  apply_option_policies(app);
}

void set_exit_code(int code) { g_exit_code = code; }
int exit_code() { return g_exit_code; }

const std::string& command_line() { return g_command_line; }
const std::vector<std::string>& command_arguments() { return g_command_arguments; }
void set_command_line(int argc, char** argv) {
  g_command_line = "flashproof";
  g_command_arguments.assign(argv + 1, argv + argc);
  for (int i = 1; i < argc; ++i) g_command_line += " " + shell_quote(argv[i]);
}

void run_reporting_executor_failures(const char* name, const std::function<void()>& body) {
  try {
    body();
  } catch (const ExecError& e) {
    print_diagnostic(DiagnosticText{Severity::Error, "", 0, 0, e.what()}, fmt::format("flashproof {}", name));
    set_exit_code(kExitInternal);
  }
}

}  // namespace fp::cli
