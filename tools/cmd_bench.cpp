// `flashproof bench attention`: the CPU (or GPU) attention benchmark — composed vs rewritten
// (every member's gate on) on a compiled executor, at each sequence length, runs interleaved, median of the
// repeats: time, GFLOP/s (4·sq·sk·d per head, forward), fraction of the machine's f32 peak measured in the
// same run (exec/cpu_peak.h), and peak memory (the memory report of the placed routine; the C executor's
// measured peak is checked against it). Prints a table, optionally writes CSV and a PNG plot (python3 +
// matplotlib, skipped when missing). docs/executors.md shows a run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "core/diagnostic.h"
#include "core/interpreter_program.h"
#include "core/memory_report.h"
#include "core/placement.h"
#include "core/random_inputs.h"
#include "core/support/atomic_file.h"
#include "exec/c_executor.h"
#include "exec/cpu_peak.h"
#include "exec/executor.h"
#include "exec/interleaved_timing.h"
#include "exec/jit.h"
#include "frontend/attention.h"
#include "pipeline/prepared_program.h"
#include "rewrites/tier.h"
#include "tools/command.h"
#include "tools/config_options.h"
#include "tools/option_checks.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"

namespace fp::cli {
namespace {

// Timed runs per form and length: a median of a million runs is already exact to the clock.
constexpr int kMaxRepeats = 1'000'000;

struct BenchOptions {
  std::string what;
  std::string seqs = "512,1024,2048,4096";
  std::int64_t d = 64;
  std::int64_t heads = 1;
  std::int64_t composed_max_seq = kMaxAttentionSize;
  int repeats = 5;
  std::string output;
  std::string csv;
  std::string plot;
  std::string executor = "c";
  int threads = 0;
  std::string mask = "none";
  std::int64_t interp_max_seq = 0;
  std::uint64_t seed = 1;
  std::string max_memory;
  ConfigOptions config;
};

struct Row {
  std::int64_t seq = 0;
  std::string form;  // composed | rewritten
  double median_s = 0, min_s = 0;
  double gflops = 0;
  double peak_fraction = 0;
  std::int64_t report_peak = 0;
  std::int64_t measured_peak = -1;
  int square_buffers = 0;
  double interp_s = -1;
};

std::vector<std::int64_t> parse_seqs(const std::string& s) {
  std::vector<std::int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 1 || v > kMaxAttentionSize) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw UserError(kExitUsage, "", 0, 0,
                      fmt::format("--seq: expected lengths like 512,1024, found '{}'", item));
    }
  }
  if (out.empty()) throw UserError(kExitUsage, "", 0, 0, "--seq: no lengths given");
  return out;
}

std::string mib(std::int64_t bytes) {
  return fmt::format("{:.1f}", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

void write_plot(const std::string& csv, const std::string& png) {
  // argv only, never a shell: the file names travel as arguments.
  const char* script = R"py(
import csv, sys
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except Exception as e:
    print("plot skipped: matplotlib is not available (%s)" % e)
    sys.exit(3)
rows = list(csv.DictReader(open(sys.argv[1])))
fig, ax = plt.subplots(1, 2, figsize=(10, 4))
for form in ("composed", "rewritten"):
    r = [x for x in rows if x["form"] == form]
    seq = [int(x["seq"]) for x in r]
    ax[0].plot(seq, [float(x["median_ms"]) for x in r], marker="o", label=form)
    ax[1].plot(seq, [float(x["peak_mib"]) for x in r], marker="o", label=form)
ax[0].set_xscale("log", base=2); ax[0].set_yscale("log"); ax[0].set_xlabel("sequence length")
ax[0].set_ylabel("median time (ms)"); ax[0].legend(); ax[0].set_title("attention forward, f32")
ax[1].set_xscale("log", base=2); ax[1].set_yscale("log"); ax[1].set_xlabel("sequence length")
ax[1].set_ylabel("peak memory (MiB)"); ax[1].legend(); ax[1].set_title("memory report peak")
fig.tight_layout(); fig.savefig(sys.argv[2], dpi=120, format="png")
)py";
  // matplotlib draws into a scratch file; its bytes then reach `png` through an AtomicFile, so the
  // plot is whole or absent and a failure is 73/74 like every other output.
  const std::string scratch = sibling_temporary_name(
      (std::filesystem::temp_directory_path() / "flashproof-plot.png").string(), "tmp");
  std::string out;
  const int rc = run_program({"python3", "-c", script, csv, scratch}, out);
  std::string bytes;
  if (rc == 0) {
    std::ifstream f(scratch, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  std::error_code ignored;
  std::filesystem::remove(scratch, ignored);
  if (rc < 0 || rc == 127) {
    fmt::print("plot skipped: python3 is not available\n");
    return;
  }
  if (rc == 3) {  // matplotlib missing: the script said so
    fmt::print("{}", out);
    return;
  }
  if (rc != 0 || bytes.empty())
    throw UserError(kExitIoError, png, 0, 0,
                    fmt::format("drawing the plot failed (python3 exit {}): {}", rc, out));
  write_file_atomically(png, bytes);
  fmt::print("wrote {}\n", png);
}

AttentionSpec bench_spec(const BenchOptions& o, std::int64_t seq) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = o.heads;
  spec.sq = spec.sk = seq;
  spec.d = spec.e = o.d;
  spec.mask = o.mask;
  spec.precision = Prec::F32;
  return spec;
}

// `bench peak`: the measured f32 peak alone (scripts/bench-peers reports its figures against it).
void bench_peak(const BenchOptions& o) {
  const ExecOptions eo = exec_options(o.config.resolve(), "peak", o.threads);
  auto ex = make_executor("c", eo);
  require_available(*ex);
  const PeakMeasurement pk = measure_f32_peak(eo);
  write_text_output(o.output, fmt::format("measured f32 peak: {:.1f} GFLOP/s ({}, {} thread{}, same compiler "
                                          "and flags); without FMA: {:.1f} GFLOP/s (a multiply and an add, "
                                          "all flashproof's code may use)\n",
                                          pk.gflops, pk.instruction, pk.threads, pk.threads == 1 ? "" : "s",
                                          pk.unfused_gflops));
}

void bench_attention(const BenchOptions& o) {
  if (o.what == "peak") return bench_peak(o);
  if (o.what != "attention")
    throw UserError(kExitUsage, "", 0, 0,
                    fmt::format("bench: unknown benchmark '{}' (known: attention, peak)", o.what));
  const std::vector<std::int64_t> seqs = parse_seqs(o.seqs);
  Config cfg = o.config.resolve();
  const ExecOptions eo = exec_options(cfg, "attention", o.threads);
  auto ex = make_executor(o.executor, eo);
  require_available(*ex);

  const Config rewrite_cfg = with_every_gate_on(cfg);
  const auto rewrite = [&](const Routine& composed) {
    return prepare_program(composed, rewrite_cfg).routine;
  };

  // Every length is checked before the first one runs: each holds both forms' programs, the
  // interpreter's when timed, and one input set.
  for (std::int64_t seq : seqs) {
    const Routine composed = build_attention(bench_spec(o, seq));
    const Routine rewritten = rewrite(composed);
    std::vector<RunMemory> parts{estimate_run_memory(rewritten, o.executor, eo.placement)};
    if (seq <= o.composed_max_seq) parts.push_back(estimate_run_memory(composed, o.executor, eo.placement, true));
    if (seq <= o.interp_max_seq) parts.push_back(estimate_run_memory(composed, "interp", eo.placement, true));
    preflight_memory(combine(std::move(parts), fmt::format("both forms at seq {} on {}", seq, o.executor)),
                     o.max_memory, fmt::format("attention at seq {}", seq));
  }

  double peak_gflops = 0;
  std::string peak_kind;
  if (o.executor == "c") {
    PeakMeasurement pk = measure_f32_peak(eo);
    peak_gflops = pk.gflops;
    peak_kind = pk.instruction;
    fmt::print("measured f32 peak: {:.1f} GFLOP/s ({}, {} thread{}, same compiler and flags)\n", pk.gflops,
               pk.instruction, pk.threads, pk.threads == 1 ? "" : "s");
  }

  std::vector<Row> rows;
  for (std::int64_t seq : seqs) {
    Routine composed = build_attention(bench_spec(o, seq));
    Routine rewritten = rewrite(composed);
    // The composed form only up to --composed-max-seq (its [seq, seq] buffers grow as seq²).
    struct Form {
      const char* name;
      const Routine* routine;
    };
    std::vector<Form> forms;
    if (seq <= o.composed_max_seq) forms.push_back({"composed", &composed});
    forms.push_back({"rewritten", &rewritten});
    std::vector<std::unique_ptr<CompiledProgram>> progs;
    std::vector<CompiledProgram*> timed;
    for (const Form& f : forms) {
      progs.push_back(ex->compile(*f.routine));
      timed.push_back(progs.back().get());
    }
    TensorMap in = random_inputs(composed, o.seed);
    const std::vector<ProgramTimes> times = time_interleaved(timed, in, o.repeats);
    for (std::size_t f = 0; f < forms.size(); ++f) {
      Row r;
      r.seq = seq;
      r.form = forms[f].name;
      r.median_s = times[f].median();
      r.min_s = times[f].min();
      r.gflops = 4.0 * static_cast<double>(seq) * static_cast<double>(seq) * static_cast<double>(o.d) *
                 static_cast<double>(o.heads) / r.median_s / 1e9;
      r.peak_fraction = peak_gflops > 0 ? r.gflops / peak_gflops : 0;
      const MemoryReport m = memory_report(place(*forms[f].routine, eo.placement).routine);
      r.report_peak = m.peak_bytes;
      r.square_buffers = m.square_buffers;
      r.measured_peak = times[f].peak_bytes;
      if (seq <= o.interp_max_seq) {
        CompiledRoutine interp(*forms[f].routine);
        const auto t0 = std::chrono::steady_clock::now();
        interp.run(in);
        r.interp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      rows.push_back(r);
    }
    if (forms.size() == 2)
      fmt::print("seq {:>5}: composed {:.2f} ms, rewritten {:.2f} ms (median of {})\n", seq,
                 rows[rows.size() - 2].median_s * 1e3, rows.back().median_s * 1e3, o.repeats);
    else
      fmt::print("seq {:>5}: rewritten {:.2f} ms (median of {}; composed above --composed-max-seq)\n", seq,
                 rows.back().median_s * 1e3, o.repeats);
    std::fflush(stdout);
  }

  // The table, printed last.
  std::string table =
      fmt::format("\nattention forward, f32, batch 1, {} head{}, d = e = {}, mask {}, executor {}{}; rewritten = {}\n",
                  o.heads, o.heads == 1 ? "" : "s", o.d, o.mask, o.executor,
                  o.executor == "c" ? fmt::format(", {} thread{}", resolve_c_threads(o.threads),
                                                  resolve_c_threads(o.threads) == 1 ? "" : "s")
                                    : std::string(),
                  // What the rewritten form ran with: each member's gate on, then the user's own
                  // profile and settings (a block size, the backward gate) — nothing more.
                  fmt::format("the tier with {}{}{}", every_gate_setting(),
                              o.config.profile.empty() ? "" : " --profile " + o.config.profile,
                              o.config.settings.empty() ? "" : " --set " + fmt::format("{}", fmt::join(o.config.settings, " --set "))));
  table += fmt::format("{:>6}  {:<9}  {:>11}  {:>11}  {:>8}  {:>7}  {:>9}  {:>7}  {:>10}{}\n", "seq", "form",
                       "median ms", "min ms", "GFLOP/s", "% peak", "peak MiB", "square", "rw/comp",
                       o.interp_max_seq > 0 ? "  interp ms" : "");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const bool paired = r.form == "rewritten" && i > 0 && rows[i - 1].seq == r.seq;
    std::string ratio = paired ? fmt::format("{:.3f}", r.median_s / rows[i - 1].median_s) : "";
    table += fmt::format("{:>6}  {:<9}  {:>11.2f}  {:>11.2f}  {:>8.2f}  {:>7}  {:>9}  {:>7}  {:>10}{}\n",
                         r.seq, r.form, r.median_s * 1e3, r.min_s * 1e3, r.gflops,
                         peak_gflops > 0 ? fmt::format("{:.1f}", 100 * r.peak_fraction) : "-",
                         mib(r.report_peak), r.square_buffers, ratio,
                         o.interp_max_seq > 0 ? (r.interp_s >= 0 ? fmt::format("  {:>9.1f}", r.interp_s * 1e3)
                                                                 : fmt::format("  {:>9}", "-"))
                                              : "");
  }
  if (peak_gflops > 0) table += fmt::format("peak: {:.1f} GFLOP/s measured ({})\n", peak_gflops, peak_kind);
  for (const Row& r : rows)
    if (r.measured_peak >= 0 && r.measured_peak != r.report_peak)
      table += fmt::format("note: seq {} {}: measured peak {} bytes differs from the memory report's {}\n",
                           r.seq, r.form, r.measured_peak, r.report_peak);

  if (!o.csv.empty() || !o.plot.empty()) {
    std::string csv_path = o.csv;
    if (csv_path.empty())
      csv_path = (std::filesystem::temp_directory_path() / "flashproof-bench.csv").string();
    std::string csv =
        "seq,form,executor,threads,d,heads,median_ms,min_ms,gflops,peak_fraction,peak_gflops,peak_mib,peak_bytes,"
        "measured_peak_bytes,square_buffers,interp_ms\n";
    for (const Row& r : rows)
      csv += fmt::format("{},{},{},{},{},{},{:.4f},{:.4f},{:.3f},{:.5f},{:.2f},{},{},{},{},{}\n", r.seq, r.form,
                         o.executor, resolve_c_threads(o.threads), o.d, o.heads, r.median_s * 1e3, r.min_s * 1e3,
                         r.gflops, r.peak_fraction, peak_gflops, mib(r.report_peak), r.report_peak,
                         r.measured_peak, r.square_buffers,
                         r.interp_s >= 0 ? fmt::format("{:.3f}", r.interp_s * 1e3) : "");
    write_file_atomically(csv_path, csv);
    if (!o.csv.empty()) fmt::print("wrote {}\n", o.csv);
    if (!o.plot.empty()) write_plot(csv_path, o.plot);
  }
  write_text_output(o.output, table);
}

void setup_bench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "Benchmarks (figures, not tests): attention, peak");
  auto o = std::make_shared<BenchOptions>();
  sub->add_option("what", o->what, "Benchmark to run: attention, or peak (the measured f32 peak alone)")
      ->required();
  sub->add_option("--seq", o->seqs, "Sequence lengths (sq = sk), comma-separated")->capture_default_str();
  sub->add_option("--d", o->d, "Head width d (= value width e)")
      ->transform(integer_in<std::int64_t>(1, kMaxAttentionSize))
      ->capture_default_str();
  sub->add_option("--heads", o->heads, "Heads (batch x heads attention problems in one program)")
      ->transform(integer_in<std::int64_t>(1, kMaxAttentionSize))
      ->capture_default_str();
  sub->add_option("--composed-max-seq", o->composed_max_seq,
                  "Time the composed form only at lengths up to this (its [seq, seq] buffers grow as seq^2)")
      ->transform(integer_in<std::int64_t>(0, kMaxAttentionSize));
  sub->add_option("--repeats", o->repeats, "Timed runs per form and length (the median is reported)")
      ->transform(integer_in(1, kMaxRepeats))
      ->capture_default_str();
  add_output_option(*sub, o->output, "the table");
  sub->add_option("--csv", o->csv, "Write the rows as CSV");
  sub->add_option("--plot", o->plot, "Write a PNG plot (needs python3 with matplotlib; skipped otherwise)");
  add_executor_option(*sub, "--executor", o->executor, "Executor");
  sub->add_option("--threads", o->threads, "C executor threads (default: $FLASHPROOF_THREADS or all cores)")
      ->transform(thread_count());
  sub->add_option("--mask", o->mask, "Mask: none, causal, prefix:N, padding:N, banded:W, random:SEED")->capture_default_str();
  sub->add_option("--interp-max-seq", o->interp_max_seq,
                  "Also time the interpreter once at lengths up to this (0: never)")
      ->transform(integer_in<std::int64_t>(0, kMaxAttentionSize))
      ->capture_default_str();
  add_seed_option(*sub, o->seed, "the random inputs")->capture_default_str();
  add_max_memory_option(*sub, o->max_memory);
  add_config_options(*sub, o->config);
  sub->callback([o] { run_reporting_executor_failures("bench", [&] { bench_attention(*o); }); });
}

}  // namespace
FP_REGISTER_COMMAND("bench", setup_bench);
}  // namespace fp::cli
