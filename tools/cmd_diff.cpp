// `flashproof diff FILE [--executor A] [--vs B] [--rewrite]`: differential runs. Runs a routine
// on two executors with the same inputs (drawn from --seed, default 1, or read with --input
// NAME=PATH.npy) and compares every output cell:
//   - without --rewrite, FILE itself runs on both (no tier): every output must agree bitwise;
//   - with --rewrite, FILE runs on A and the tier's rewrite of it (--profile/--set choose the
//     members) on B; outputs that no bounded claim reaches must agree bitwise, outputs with a
//     certified bound must agree within it cell by cell, other outputs a bounded claim reaches are
//     held to a stand-in tolerance (outside it: unknown) — tools/diff_report.h; NaN positions
//     always exactly.
// On a mismatch (or a stand-in violation) it writes a replayable case directory (routines, inputs, both
// outputs, replay.sh) and exits 1. An unavailable executor makes the verdict unknown and the exit code 69, as
// in run and bench. docs/executors.md documents the report.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include "core/diagnostic.h"
#include "core/diagnostic_render.h"
#include "core/npy.h"
#include "core/support/atomic_directory.h"
#include "core/support/executable_path.h"
#include "exec/executor.h"
#include "flashproof/version.h"
#include "pipeline/prepared_program.h"
#include "rewrites/tier.h"
#include "tools/command.h"
#include "tools/config_options.h"
#include "tools/diff_report.h"
#include "tools/option_checks.h"
#include "tools/routine_io.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"

namespace fp::cli {
namespace {

struct DiffOptions {
  std::string file;
  std::string a = "interp";
  std::string b = "c";
  bool rewrite = false;
  std::uint64_t seed = 1;
  std::vector<std::string> inputs;  // NAME=PATH
  std::string format = "text";
  std::string output;
  std::string case_dir;
  std::string fail_on = "unknown";
  int threads = 0;
  std::string max_memory;
  ConfigOptions config;
};

std::string fresh_case_dir(const std::string& requested) {
  namespace fs = std::filesystem;
  if (!requested.empty()) return requested;
  std::string dir = "flashproof-diff-case";
  for (int k = 2; fs::exists(dir); ++k) dir = fmt::format("flashproof-diff-case-{}", k);
  return dir;
}

void write_tensors(AtomicDirectory& dir, const std::string& sub, const TensorMap& ts) {
  dir.make_subdirectory(sub);
  for (const auto& [name, t] : ts) {
    std::unique_ptr<AtomicFile> f = dir.open(sub + "/" + name + ".npy");
    write_npy(*f, t);
    f->commit();
  }
}

// How output `node` is compared: bitwise, unless a --rewrite plan holds it to a certified check or
// to the stand-in.
verify::NodeCheck output_check(const std::optional<verify::RewriteDiffPlan>& plan, const std::string& node) {
  if (plan) return plan->check_for(node);
  verify::NodeCheck check;
  check.node = node;
  return check;
}

void run_diff(const DiffOptions& o) {
  const Config cfg = o.config.resolve();
  const Routine original = load_checked_routine(o.file);
  // The second run's program: with --rewrite the tier's (re-checked) output, else FILE itself.
  PrepareOptions po;
  po.source_name = o.file;
  po.threads = o.threads;
  po.rewrite = o.rewrite;
  const PreparedProgram prepared = prepare_program(original, cfg, po);
  const Routine& second = prepared.routine;
  DiffReport rep;
  rep.file = o.file;
  rep.executor_a = o.a;
  rep.executor_b = o.b;
  rep.rewrite = o.rewrite;
  rep.command = command_line();
  std::optional<verify::RewriteDiffPlan> plan;
  if (prepared.tier) {
    const RewriteResult& res = *prepared.tier;
    for (const Application& app : res.applications)
      for (const Obligation& ob : app.obligations) {
        rep.claims.push_back(fmt::format("{} {}: {}", app.shape, ob.claim, obligation_kind_name(ob.kind)));
      }
    if (res.applications.empty())
      rep.claims.push_back(
          fmt::format("none: the tier changed nothing (its gates are off? e.g. {})", every_gate_setting()));
    plan = verify::plan_rewrite_diff(original, res);
  }
  // Both runs share the inputs and the first one's outputs live on while the second runs: the
  // estimates add up. Checked before the inputs or any buffer exist.
  const PlacementConfig& placement = prepared.exec.placement;
  preflight_memory(combine({estimate_run_memory(plan ? plan->source : original, o.a, placement),
                            estimate_run_memory(second, o.b, placement, true)},
                           fmt::format("{} then {}, the first one's outputs kept", o.a, o.b)),
                   o.max_memory, o.file);
  const TensorMap in = load_inputs(original, o.inputs, o.seed);
  rep.inputs = o.inputs.empty() ? fmt::format("seed {}", o.seed)
                                : fmt::format("seed {} with {} from files", o.seed, o.inputs.size());

  auto ea = make_executor(o.a, prepared.exec);
  auto eb = make_executor(o.b, prepared.exec);
  for (const Executor* e : {ea.get(), eb.get()}) {
    const Availability av = e->available();
    if (!av) {
      // No comparison was made: the report says so (verdict unknown, for CI reports), and the exit
      // code is run's and bench's for the same machine (69, whatever --fail-on says): a diff that
      // never ran must not pass as one that found nothing.
      rep.verdict = "unknown";
      rep.message = fmt::format("executor '{}' is unavailable: {}", e->name(), av.reason);
      write_text_output(o.output, render_diff_report(rep, o.format));
      print_diagnostic(DiagnosticText{Severity::Error, "", 0, 0, rep.message});
      set_exit_code(kExitUnavailable);
      return;
    }
  }
  // With --rewrite the first executor runs the original instrumented with the certified bounds'
  // per-cell magnitudes (its own outputs unchanged).
  TensorMap out_a = ea->compile(plan ? plan->source : original)->run(in);
  // Certified checks whose per-cell bounds are evaluated from that run (on the same executor).
  if (plan) {
    plan->complete(out_a, [&](const Routine& r, const TensorMap& inputs) { return ea->compile(r)->run(inputs); });
    rep.notes = plan->notes;
    rep.statements = plan->statements;
  }
  const TensorMap out_b = eb->compile(second)->run(in);
  bool mismatch = false, outside_stand_in = false;
  for (const Node* n : second.outputs()) {
    const verify::OutputComparison& c =
        rep.outputs.emplace_back(verify::compare_output(output_check(plan, n->name), out_a, out_b));
    (c.check.kind == verify::NodeCheck::Kind::StandIn ? outside_stand_in : mismatch) |= !c.ok();
  }
  if (!mismatch && !outside_stand_in) {
    rep.verdict = "agree";
    rep.message = fmt::format("every cell of {} output{} agrees", rep.outputs.size(),
                              rep.outputs.size() == 1 ? "" : "s");
  } else {
    int bad = 0;
    for (const auto& c : rep.outputs) bad += !c.ok();
    rep.verdict = mismatch ? "mismatch" : "unknown";
    rep.message = mismatch ? fmt::format("{} of {} outputs differ", bad, rep.outputs.size())
                           : fmt::format("{} of {} outputs are outside the stand-in tolerance, which is not a "
                                         "certified bound: no verdict",
                                         bad, rep.outputs.size());
    // The replayable case: routines, inputs, both outputs, and the command that reproduces it,
    // staged and renamed into place so that it is complete or absent.
    rep.case_dir = fresh_case_dir(o.case_dir);
    AtomicDirectory case_dir(rep.case_dir);
    case_dir.write_file("original.fp", routine_file_text(original, o.seed));
    if (o.rewrite) case_dir.write_file("rewritten.fp", routine_file_text(second, o.seed));
    write_tensors(case_dir, "inputs", in);
    write_tensors(case_dir, o.a + "-outputs", out_a);
    write_tensors(case_dir, o.b + "-outputs" + (o.a == o.b ? "-2" : ""), out_b);
    // The environment the executors read is part of the case (a compiler flag can be the cause).
    std::string env;
    for (const char* var :
         {"FLASHPROOF_CC", "FLASHPROOF_CFLAGS", "FLASHPROOF_THREADS", "FLASHPROOF_CUDA_COMPILER"})
      if (const char* v = std::getenv(var); v && *v) env += fmt::format("{}={} ", var, shell_quote(v));
    std::string cmd = fmt::format("{}\"$FLASHPROOF\" diff original.fp --executor {} --vs {}",
                                  env.empty() ? "" : "env " + env, shell_quote(o.a), shell_quote(o.b));
    if (o.rewrite) {
      cmd += " --rewrite";
      if (!o.config.profile.empty()) cmd += " --profile " + shell_quote(o.config.profile);
      for (const auto& s : o.config.settings) cmd += " --set " + shell_quote(s);
    }
    for (const auto& [name, t] : in) cmd += " --input " + shell_quote(name + "=inputs/" + name + ".npy");
    case_dir.write_file(
        "replay.sh",
        fmt::format("#!/bin/sh\n# flashproof {}\n# command: {}\n# Replays this differential case "
                    "(exit 1 while the executors still disagree).\n{}cd \"$(dirname \"$0\")\" || "
                    "exit 66\nexec {} \"$@\"\n",
                    FLASHPROOF_VERSION, rep.command, replay_script_preamble(), cmd),
        0777);
    case_dir.commit();
    rep.replay = rep.case_dir + "/replay.sh";
  }
  write_text_output(o.output, render_diff_report(rep, o.format));
  set_exit_code(diff_exit_code(rep, o.fail_on == "unknown"));
}

void setup_diff(CLI::App& app) {
  auto* sub = app.add_subcommand("diff",
                                 "Differential run: a routine (or, with --rewrite, the original vs its "
                                 "rewrite) on two executors, every output cell compared");
  auto o = std::make_shared<DiffOptions>();
  sub->add_option("file", o->file, "Routine (.fp)")->required();
  add_executor_option(*sub, "--executor", o->a, "First executor");
  add_executor_option(*sub, "--vs", o->b, "Second executor");
  sub->add_flag(
      "--rewrite", o->rewrite,
      "Run the original on the first executor and the tier's rewrite (per --profile/--set) on the second");
  add_seed_option(*sub, o->seed, "the random inputs: every input --input does not bind is drawn from it")
      ->capture_default_str();
  sub->add_option("--input", o->inputs, "Bind an input from a file: NAME=PATH.npy (repeatable)");
  add_format_option(*sub, o->format, report_formats());
  add_output_option(*sub, o->output, "the report");
  add_case_dir_option(*sub, o->case_dir,
                      "the replayable case on a mismatch (default ./flashproof-diff-case[-N])");
  add_fail_on_option(*sub, o->fail_on);
  sub->add_option("--threads", o->threads, "C executor threads (default: $FLASHPROOF_THREADS or all cores)")
      ->transform(thread_count());
  add_max_memory_option(*sub, o->max_memory);
  add_config_options(*sub, o->config);
  sub->callback([o] { run_reporting_executor_failures("diff", [&] { run_diff(*o); }); });
}

}  // namespace
FP_REGISTER_COMMAND("diff", setup_diff);
}  // namespace fp::cli
