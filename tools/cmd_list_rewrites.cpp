// `flashproof list-rewrites`: the tier's members in application order, with their gates, shapes,
// claims and one-line descriptions.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "rewrites/tier.h"
#include "tools/command.h"

namespace fp::cli {
namespace {

void setup_list_rewrites(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("list-rewrites", "List the rewrite tier's members, their gates and shapes");
  sub->callback([] { std::fputs(list_rewrites_text(tier_members()).c_str(), stdout); });
}

FP_REGISTER_COMMAND("list-rewrites", setup_list_rewrites);

}  // namespace
}  // namespace fp::cli
