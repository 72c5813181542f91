// `flashproof check FILE...`: parse and well-formedness-check routines; exit 0 when all are well
// formed, 65 with a located message at the first problem otherwise.
#include <fmt/format.h>

#include "core/checker.h"
#include "tools/command.h"
#include "tools/routine_io.h"

namespace fp::cli {
namespace {

void setup_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check", "Parse and well-formedness-check routines (.fp files)");
  auto files = std::make_shared<std::vector<std::string>>();
  auto quiet = std::make_shared<bool>(false);
  sub->add_option("files", *files, "Routines to check ('-' for standard input)")->required();
  sub->add_flag("-q,--quiet", *quiet, "Print nothing when every routine is well formed");
  sub->callback([files, quiet] {
    for (const auto& f : *files) {
      Routine r = load_checked_routine(f);
      if (!*quiet) fmt::print("{}: ok ({} nodes)\n", f, r.nodes.size());
    }
  });
}

}  // namespace
FP_REGISTER_COMMAND("check", setup_check);
}  // namespace fp::cli
