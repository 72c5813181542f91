// Throughput of the fuzzing targets (fuzz/), one core, inputs per second (items_per_second):
//   BM_FuzzParse             the `parse` target: draw a valid or mutated .fp text, parse, check,
//                            print, reparse (target: >= 10^4 inputs/s)
//   BM_FuzzRewrite           the `rewrite` target: draw an attention case, run the tier, the diff
//                            plan and the interpreter on both sides (target: >= 200 programs/s)
//   BM_FuzzExecInterpreter   the `exec` target's interpreter half: draw a random routine and
//                            hostile data, interpret (target: >= 200 programs/s); the compiled C
//                            half costs one compiler run per program and is BM_FuzzExec
//   BM_FuzzExec              the whole `exec` target (compiler included)
//   BM_FuzzVerify            the `verify` target (Z3 and the MPFR confirmation included)
// Each iteration draws a new input from its own seed, as a campaign does.
#include <benchmark/benchmark.h>

#include "core/interpreter.h"
#include "core/text_parser.h"
#include "fuzz/hostile_data.h"
#include "fuzz/random_routine.h"
#include "fuzz/target.h"

namespace {

void run_target(benchmark::State& state, const char* name) {
  const fp::fuzz::Target& t = *fp::fuzz::find_target(name);
  std::uint64_t seed = 1;
  std::int64_t findings = 0;
  for (auto _ : state) {
    const std::string input = t.generate(seed++).value();
    findings += t.run(input, "bench").finding.has_value();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["findings"] = static_cast<double>(findings);
}

void BM_FuzzParse(benchmark::State& state) { run_target(state, "parse"); }
void BM_FuzzRewrite(benchmark::State& state) { run_target(state, "rewrite"); }
void BM_FuzzExec(benchmark::State& state) { run_target(state, "exec"); }
void BM_FuzzVerify(benchmark::State& state) { run_target(state, "verify"); }

void BM_FuzzExecInterpreter(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    const fp::Routine r = fp::fuzz::sample_routine(seed);
    const fp::TensorMap in = fp::fuzz::hostile_inputs(r, seed++, 25);
    benchmark::DoNotOptimize(fp::interpret(r, in));
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_FuzzParse)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_FuzzRewrite)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_FuzzExecInterpreter)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_FuzzExec)->MeasureProcessCPUTime()->UseRealTime()->Iterations(10);
BENCHMARK(BM_FuzzVerify)->MeasureProcessCPUTime()->UseRealTime()->Iterations(5);

}  // namespace
