// The CPU attention benchmark as a Google Benchmark target (the same measurement as
// `flashproof bench attention`, docs/executors.md): composed vs rewritten (online softmax,
// two-pass form) attention forward at f32, batch 1, one head, d = e = 64, sq = sk in
// {512, 1024, 2048, 4096}, on the compiled C executor. Time is the compiled entry function's
// (manual time, inputs already converted); counters: GFLOP/s (4·sq·sk·d), fraction of the f32
// peak measured at start-up with the FMA kernel compiled by the same JIT (exec/cpu_peak.h), and
// the memory report's peak bytes.
//
// Defaults (overridable on the command line): 5 repetitions reported as aggregates (median),
// and random interleaving of the benchmarks, so composed and rewritten runs alternate.
// Threads: $FLASHPROOF_THREADS (default: all cores). Opt-in: never part of the test run.

#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/attention.h"
#include "core/memory_report.h"
#include "core/placement.h"
#include "core/random_inputs.h"
#include "exec/cpu_peak.h"
#include "exec/executor.h"
#include "rewrites/tier.h"

namespace fp {
namespace {

double g_peak_gflops = 0;

struct Prepared {
  std::unique_ptr<CompiledProgram> program;
  TensorMap inputs;
  std::int64_t peak_bytes = 0;
};

// Compiled once per (seq, form), on first use.
Prepared& prepared(std::int64_t seq, bool rewritten) {
  static std::map<std::pair<std::int64_t, bool>, Prepared> cache;
  auto it = cache.find({seq, rewritten});
  if (it != cache.end()) return it->second;
  AttentionSpec s;
  s.sq = s.sk = seq;
  s.d = s.e = 64;
  s.precision = Prec::F32;
  Routine r = build_attention(s);
  if (rewritten) {
    Config c;
    c.set("online_softmax", "true");
    r = run_tier(r, c).routine;
  }
  Prepared p;
  ExecOptions o;
  p.program = make_executor("c", o)->compile(r);
  p.inputs = random_inputs(r, 1);
  p.peak_bytes = memory_report(place(r, o.placement).routine).peak_bytes;
  return cache.emplace(std::make_pair(seq, rewritten), std::move(p)).first->second;
}

void attention(benchmark::State& state, bool rewritten) {
  const std::int64_t seq = state.range(0);
  Prepared& p = prepared(seq, rewritten);
  p.program->run(p.inputs);  // warm-up
  for (auto _ : state) {
    p.program->run(p.inputs);
    state.SetIterationTime(p.program->last_stats().compute_seconds);
  }
  const double flops = 4.0 * static_cast<double>(seq) * static_cast<double>(seq) * 64.0;
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  // GFLOP/s over the measured peak, as a rate counter too (the library divides by the time).
  state.counters["peak_frac"] = benchmark::Counter(g_peak_gflops > 0 ? flops / 1e9 / g_peak_gflops : 0,
                                                   benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_MiB"] = static_cast<double>(p.peak_bytes) / (1024.0 * 1024.0);
  state.counters["peak_GFLOP/s"] = g_peak_gflops;
}

void composed(benchmark::State& s) {
  attention(s, false);
}
void rewritten(benchmark::State& s) {
  attention(s, true);
}

}  // namespace
}  // namespace fp

BENCHMARK(fp::composed)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(fp::rewritten)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  bool reps = false, interleave = false;
  for (int i = 1; i < argc; ++i) {
    reps = reps || std::strncmp(argv[i], "--benchmark_repetitions", 23) == 0;
    interleave = interleave || std::strncmp(argv[i], "--benchmark_enable_random_interleaving", 38) == 0;
  }
  static char rep_flag[] = "--benchmark_repetitions=5";
  static char agg_flag[] = "--benchmark_report_aggregates_only=true";
  static char inter_flag[] = "--benchmark_enable_random_interleaving=true";
  if (!reps) {
    args.push_back(rep_flag);
    args.push_back(agg_flag);
  }
  if (!interleave) args.push_back(inter_flag);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  fp::PeakMeasurement pk = fp::measure_f32_peak(fp::ExecOptions{});
  fp::g_peak_gflops = pk.gflops;
  benchmark::AddCustomContext("f32_peak_gflops", std::to_string(pk.gflops) + " (" + pk.instruction + ", " +
                                                     std::to_string(pk.threads) + " threads)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
