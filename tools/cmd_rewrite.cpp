// `flashproof rewrite FILE`: runs the rewrite tier (rewrites/tier.h) on a routine and prints the
// rewritten routine in the text format, with the file header. docs/rewrites.md documents the
// options and the --explain and --print-after-all formats.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "core/text_printer.h"
#include "pipeline/checked_tier.h"
#include "rewrites/tier.h"
#include "tools/command.h"
#include "tools/config_options.h"
#include "tools/routine_io.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"
#include "tools/tier_options.h"

namespace fp::cli {
namespace {

struct RewriteOptions {
  std::string file;
  std::string output;
  bool explain = false;
  bool print_after_all = false;
  TierOptions tier;
  ConfigOptions config;
};

void run_rewrite(const RewriteOptions& o) {
  Config config = o.config.resolve();
  Routine r = load_checked_routine(o.file);
  TierOptions tier = o.tier;
  tier.explain = o.explain;
  warn_gated_off_selections(config, tier);
  const RewriteResult res = run_tier_checked(r, config, tier);
  if (o.print_after_all)
    for (const auto& s : res.rounds)
      std::fprintf(stderr, "# ---- after round %d, member %s (%s) ----\n%s", s.round, s.member.c_str(),
                   s.changed ? "changed" : "unchanged", print_routine(s.routine).c_str());
  if (o.explain) std::fputs(explain_text(res).c_str(), stderr);
  write_text_output(o.output, routine_file_text(res.routine));
}

void setup_rewrite(CLI::App& app) {
  auto opt = std::make_shared<RewriteOptions>();
  CLI::App* sub = app.add_subcommand(
      "rewrite", "Run the rewrite tier on a routine (before placement) and print the rewritten routine");
  sub->add_option("FILE", opt->file, "Routine in the .fp text format ('-' reads standard input)")->required();
  sub->add_flag("--explain", opt->explain,
                "Print every application (with its claims) and every decline (reason code and sentence) to "
                "standard error");
  sub->add_flag("--print-after-all", opt->print_after_all,
                "Print the routine after each member's application in each round to standard error");
  add_tier_options(*sub, opt->tier);
  add_output_option(*sub, opt->output, "the rewritten routine");
  add_config_options(*sub, opt->config);
  sub->callback([opt] { run_rewrite(*opt); });
}

FP_REGISTER_COMMAND("rewrite", setup_rewrite);

}  // namespace
}  // namespace fp::cli
