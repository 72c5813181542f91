// `flashproof check FILE...`: parse and well-formedness-check routines. Every file is checked and
// every problem the checker finds in it is reported (a file that does not parse stops at its
// first syntax error: the parser cannot go on past it); the exit code is the worst one: 0 when
// all are well formed, 65 for a malformed one, 66 for one that cannot be read (66 wins over 65).
#include <fmt/format.h>

#include <algorithm>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/diagnostic_render.h"
#include "tools/command.h"
#include "tools/routine_io.h"

namespace fp::cli {
namespace {

// Checks one file, printing each problem; returns its exit code.
int check_file(const std::string& path, bool quiet) {
  const std::string name = source_name(path);
  Routine r;
  try {
    r = load_routine(path);
  } catch (const UserError& e) {
    print_diagnostic(e);
    return e.code();
  }
  const std::vector<Diagnostic> problems = check_routine(r);
  for (const Diagnostic& d : problems)
    print_diagnostic(DiagnosticText{Severity::Error, name, d.loc.line, d.loc.col, d.message});
  if (!problems.empty()) return kExitMalformed;
  if (!quiet) fmt::print("{}: ok ({} nodes)\n", name, r.nodes.size());
  return kExitOk;
}

void setup_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check",
                                 "Parse and well-formedness-check routines (.fp files): every file, every "
                                 "problem; exit 0, 65 (malformed) or 66 (unreadable), the worst of them");
  auto files = std::make_shared<std::vector<std::string>>();
  auto quiet = std::make_shared<bool>(false);
  sub->add_option("files", *files, "Routines to check ('-' for standard input)")->required();
  sub->add_flag("-q,--quiet", *quiet, "Print nothing when every routine is well formed");
  sub->callback([files, quiet] {
    int worst = kExitOk;
    for (const auto& f : *files) {
      const int rc = check_file(f, *quiet);
      std::fflush(stdout);
      worst = std::max(worst, rc);
    }
    set_exit_code(worst);
  });
}

}  // namespace
FP_REGISTER_COMMAND("check", setup_check);
}  // namespace fp::cli
