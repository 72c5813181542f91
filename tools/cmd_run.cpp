// `flashproof run FILE`: runs a routine on an executor (--executor, one of exec/executor.h's
// registry, default the interpreter). Inputs come from .npy files (--input NAME=PATH) or are drawn
// reproducibly (--seed N, written next to the outputs; --random-inputs N is its deprecated
// spelling); each output is written to DIR/NAME.npy. --report-memory prints the placement's memory
// report (and, for the compiled C executor, the peak it measured from its own allocations).
#include <fmt/format.h>

#include <filesystem>

#include "core/diagnostic.h"
#include "core/input_validation.h"
#include "core/interpreter.h"
#include "core/memory_report.h"
#include "core/npy.h"
#include "core/placement.h"
#include "core/support/atomic_file.h"
#include "core/tensor_summary.h"
#include "exec/executor.h"
#include "pipeline/prepared_program.h"
#include "tools/command.h"
#include "tools/config_options.h"
#include "tools/option_checks.h"
#include "tools/routine_io.h"
#include "tools/shared_options.h"

namespace fp::cli {
namespace {

struct RunOptions {
  std::string file;
  std::vector<std::string> inputs;  // NAME=PATH
  std::optional<std::uint64_t> seed;
  std::string output_dir;
  bool report_memory = false;
  bool quiet = false;
  std::string executor = "interp";
  int threads = 0;
  std::string max_memory;
  ConfigOptions config;
};

void write_tensors(const std::string& dir, const TensorMap& tensors) {
  for (const auto& [name, t] : tensors) write_npy((std::filesystem::path(dir) / (name + ".npy")).string(), t);
}

// An unbound input is a missing input (66) whatever the executor; say how to bind it, since
// `run` without --input or --seed is the common first try.
void require_every_input(const Routine& r, const TensorMap& in, const std::string& file) {
  for (const Node* n : r.inputs())
    if (!in.count(n->name))
      throw UserError(
          kExitMissingInput, file, 0, 0,
          fmt::format("missing input '{}' (expected {}): bind it with --input {}=PATH.npy, or draw "
                      "every unbound input with --seed N",
                      n->name, tensor_type_string(n->prec, n->dims), n->name));
}

void run(const RunOptions& o) {
  const Config cfg = o.config.resolve();  // before the file: a bad --set is reported first
  // With a rewrite gate on, what runs is the rewritten routine (pipeline/prepared_program.h).
  PrepareOptions po;
  po.source_name = o.file;
  po.threads = o.threads;
  const PreparedProgram prepared = prepare_program(load_checked_routine(o.file), cfg, po);
  const Routine& r = prepared.routine;
  std::unique_ptr<Executor> ex = make_executor(o.executor, prepared.exec);
  require_available(*ex);
  // Before the inputs or any buffer exist: too big for the machine is an error, not a crash.
  preflight_memory(estimate_run_memory(r, o.executor, prepared.exec.placement), o.max_memory, o.file);
  TensorMap in = load_inputs(r, o.inputs, o.seed);
  require_every_input(r, in, source_name(o.file));
  std::unique_ptr<CompiledProgram> prog = ex->compile(r);
  TensorMap out = prog->run(in);
  if (!o.output_dir.empty()) {
    create_output_directories(o.output_dir);
    write_tensors(o.output_dir, out);
    if (o.seed) write_tensors(o.output_dir, in);
  }
  if (!o.quiet) fmt::print("{}", format_tensor_summaries(out));
  if (o.report_memory) {
    PlacementResult placed = place(r, prepared.exec.placement);
    fmt::print("\n{}", format_memory_report(memory_report(placed.routine)));
    if (prog->last_stats().peak_bytes >= 0)
      fmt::print("measured peak {} bytes ({} executor)\n", prog->last_stats().peak_bytes, o.executor);
  }
}

void setup_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Run a routine on the interpreter or a compiled executor");
  auto o = std::make_shared<RunOptions>();
  sub->add_option("file", o->file, "Routine to run (.fp)")->required();
  sub->add_option("--input", o->inputs, "Bind an input: NAME=PATH.npy (repeatable)");
  CLI::Option* seed = add_seed_option(
      *sub, o->seed,
      "the random inputs: draw every unbound input from it (written next to the outputs); without it every "
      "input must be bound with --input");
  add_deprecated_alias(*sub, "--random-inputs", seed, o->seed, {any_integer<std::uint64_t>()});
  sub->add_option("--output-dir", o->output_dir, "Write each output as DIR/NAME.npy");
  sub->add_flag("--report-memory", o->report_memory, "Print the placement's memory report");
  sub->add_flag("-q,--quiet", o->quiet, "Do not print the outputs' summary");
  add_executor_option(*sub, "--executor", o->executor, "Executor");
  sub->add_option("--threads", o->threads, "C executor threads (default: $FLASHPROOF_THREADS or all cores)")
      ->transform(thread_count());
  add_max_memory_option(*sub, o->max_memory);
  add_config_options(*sub, o->config);
  sub->callback([o] { run_reporting_executor_failures("run", [&] { run(*o); }); });
}

}  // namespace
FP_REGISTER_COMMAND("run", setup_run);
}  // namespace fp::cli
