// `flashproof compile FILE -o OUT.so --abi OUT.json`: compiles a routine with the C executor and
// writes the shared object it loaded (the bytes the JIT verified against the cache's seal) and a
// JSON description of its entry function, so that another program can load the object into its
// own process and call it — scripts/bench-peers does this from Python with ctypes, to time
// flashproof and PyTorch in one process. The ABI is exec/c_codegen.h's: `int ENTRY(fpx_ctx*,
// void** bufs)` with one slot per node in the order of "slots"; the caller fills the inputs'
// slots with 64-byte aligned buffers (cells at the node's width), reads the outputs' slots after
// the call and releases them with free(); ctx.threads is the worker thread count.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/diagnostic.h"
#include "core/memory_report.h"
#include "core/support/atomic_file.h"
#include "exec/c_codegen.h"
#include "exec/c_executor.h"
#include "exec/executor.h"
#include "pipeline/prepared_program.h"
#include "tools/command.h"
#include "tools/standard_output.h"
#include "tools/config_options.h"
#include "tools/routine_io.h"
#include "tools/shared_options.h"

namespace fp::cli {
namespace {

struct CompileOptions {
  std::string file;
  std::string output;
  std::string abi;
  std::string source;
  ConfigOptions config;
};

std::string abi_json(const CObjectExport& x) {
  nlohmann::json j;
  j["abi_version"] = kCAbiVersion;
  j["entry"] = x.entry;
  j["ctx"] = {"live", "peak", "failed_bytes", "threads"};  // int64 fields, in order
  j["routine"] = x.plan.placed.name;
  j["report_peak_bytes"] = x.plan.report.peak_bytes;
  nlohmann::json slots = nlohmann::json::array();
  for (const Node& n : x.plan.placed.nodes) {
    if (!n.is_input && !n.is_output) {
      slots.push_back({{"name", n.name}});
      continue;
    }
    slots.push_back({{"name", n.name},
                     {"prec", prec_name(n.prec)},
                     {"dims", n.dims},
                     {"input", n.is_input},
                     {"output", n.is_output}});
  }
  j["slots"] = slots;
  return j.dump(1) + "\n";
}

void setup_compile(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "compile",
      "Compile a routine with the C executor; write the shared object and its entry's ABI (JSON) for "
      "loading it in another program's process");
  auto o = std::make_shared<CompileOptions>();
  sub->add_option("file", o->file, "Routine ('-' for standard input)")->required();
  sub->add_option("-o,--output", o->output, "Where the shared object goes")->required();
  sub->add_option("--abi", o->abi, "Write the entry's ABI (buffer slots, ctx fields) as JSON");
  sub->add_option("--source", o->source, "Write the generated C");
  add_config_options(*sub, o->config);
  sub->callback([o] {
    run_reporting_executor_failures("compile", [&] {
      check_distinct_outputs({{"-o", o->output}, {"--abi", o->abi}, {"--source", o->source}});
      const Routine r = load_checked_routine(o->file);
      const Config cfg = o->config.resolve();
      const ExecOptions eo = exec_options(cfg, source_name(o->file));
      auto ex = make_executor("c", eo);
      require_available(*ex);
      const CObjectExport x = export_c_object(r, eo);
      check_output_path(o->output);
      check_output_path(o->abi);
      check_output_path(o->source);
      write_file_atomically(o->output, x.object_bytes, 0755);
      if (!o->abi.empty()) write_file_atomically(o->abi, abi_json(x));
      if (!o->source.empty()) write_file_atomically(o->source, x.source);
    });
  });
}

}  // namespace
FP_REGISTER_COMMAND("compile", setup_compile);
}  // namespace fp::cli
