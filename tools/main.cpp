// flashproof: the command-line program. Each subcommand lives in its own file (tools/cmd_*.cpp)
// and registers itself here.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "core/diagnostic.h"
#include "flashproof/version.h"

int main(int argc, char** argv) {
  CLI::App app{"flashproof — rewrites loop-level tensor programs and proves each rewrite"};
  app.set_version_flag("--version", std::string("flashproof ") + FLASHPROOF_VERSION);
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : fp::kExitUsage;
  }
  return 0;
}
