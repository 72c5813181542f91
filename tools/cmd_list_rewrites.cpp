// `flashproof list-rewrites`: the tier's members in application order, with their gates, shapes,
// claims and one-line descriptions.
#include <CLI/CLI.hpp>
#include <memory>

#include "rewrites/tier.h"
#include "tools/command.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"

namespace fp::cli {
namespace {

void setup_list_rewrites(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("list-rewrites", "List the rewrite tier's members, their gates and shapes");
  auto output = std::make_shared<std::string>();
  add_output_option(*sub, *output, "the list");
  sub->callback([output] { write_text_output(*output, list_rewrites_text(tier_members())); });
}

FP_REGISTER_COMMAND("list-rewrites", setup_list_rewrites);

}  // namespace
}  // namespace fp::cli
