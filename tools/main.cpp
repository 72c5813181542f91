// flashproof: the command-line program. Each subcommand lives in its own file (tools/cmd_*.cpp)
// and registers itself (tools/command.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "core/diagnostic.h"
#include "core/diagnostic_render.h"
#include "flashproof/version.h"
#include "tools/cli_errors.h"
#include "tools/command.h"

int main(int argc, char** argv) {
  fp::cli::set_command_line(argc, argv);
  CLI::App app{"flashproof — rewrites loop-level tensor programs and proves each rewrite"};
  app.set_version_flag("--version", std::string("flashproof ") + FLASHPROOF_VERSION);
  app.require_subcommand(1);
  fp::cli::add_registered_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return fp::cli::report_parse_error(app, e);
  } catch (const fp::UserError& e) {
    fp::print_diagnostic(e);
    return e.code();
  }
  return fp::cli::exit_code();
}
