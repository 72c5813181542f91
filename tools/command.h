#pragma once
// Subcommands register themselves: each tools/cmd_*.cpp defines a setup function that adds its
// CLI11 subcommand and its callback, and registers it with FP_REGISTER_COMMAND. main() adds them
// all in name order.
//
// A callback reports a user error by throwing fp::UserError (main prints it and exits with its
// code) and any other outcome by calling set_exit_code.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace fp::cli {

using CommandSetup = void (*)(CLI::App& app);

bool register_command(const char* name, CommandSetup setup);
void add_registered_commands(CLI::App& app);

void set_exit_code(int code);
int exit_code();

// Runs a callback's body: an executor failure (fp::ExecError) is printed as
// "flashproof NAME: error: message" and the exit code becomes 70.
void run_reporting_executor_failures(const char* name, const std::function<void()>& body);

// `a` as one word for a POSIX shell: unchanged when it holds only [A-Za-z0-9-_./=:,+%@],
// single-quoted otherwise.
std::string shell_quote(const std::string& a);

// The command line as typed, for the header comment of every file the tool writes.
const std::string& command_line();
void set_command_line(int argc, char** argv);
// The arguments after the program's name, as given (a command that re-runs itself in worker
// processes, `fuzz -jobs=N`, passes them on).
const std::vector<std::string>& command_arguments();

}  // namespace fp::cli

#define FP_REGISTER_COMMAND(name, fn) \
  static const bool fp_registered_##fn = ::fp::cli::register_command(name, fn)
