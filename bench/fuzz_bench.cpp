// Throughput of the fuzzing targets (fuzz/), one core, inputs per second (items_per_second):
//   BM_FuzzParse             the `parse` target: draw a valid or mutated .fp text, parse, check,
//                            print, reparse (drawing included)
//   BM_FuzzParseProperty     the parser side alone: the same property on 1000 inputs drawn before
//                            timing (target: >= 10^4 parser inputs/s)
//   BM_FuzzRewrite           the `rewrite` target: draw an attention case, run the tier, the diff
//                            plan and the interpreter on both sides (target: >= 200 programs/s)
//   BM_FuzzExecInterpreter   the `exec` target's interpreter half: draw a random routine and
//                            hostile data, interpret (target: >= 200 programs/s); the compiled C
//                            half costs one compiler run per program and is BM_FuzzExec
//   BM_FuzzAttentionInterpreter  a random attention case (fuzz/attention_case.h: drawn, built,
//                            its hostile data) through the interpreter (target: >= 200 programs/s)
//   BM_FuzzExec              the whole `exec` target (compiler included)
//   BM_FuzzVerify            the `verify` target (Z3 and the MPFR confirmation included)
// Each iteration draws a new input from its own seed, as a campaign does.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/interpreter.h"
#include "fuzz/attention_case.h"
#include "core/text_parser.h"
#include "fuzz/hostile_data.h"
#include "fuzz/random_routine.h"
#include "fuzz/target.h"
#include "fuzz/text_round_trip.h"

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

void BM_FuzzParseProperty(benchmark::State& state) {
  const fp::fuzz::Target& t = *fp::fuzz::find_target("parse");
  std::vector<std::string> inputs;
  for (std::uint64_t seed = 1; seed <= 1000; ++seed) inputs.push_back(t.generate(seed).value());
  std::size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const std::string& input = inputs[i++ % inputs.size()];
    bytes += input.size();
    benchmark::DoNotOptimize(fp::fuzz::check_fp_text(input, "bench.fp"));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}

void BM_FuzzExecInterpreter(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    const fp::Routine r = fp::fuzz::sample_routine(seed);
    const fp::TensorMap in = fp::fuzz::hostile_inputs(r, seed++, 25);
    benchmark::DoNotOptimize(fp::interpret(r, in));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_FuzzAttentionInterpreter(benchmark::State& state) {
  std::uint64_t seed = 1;
  for (auto _ : state) {
    const fp::fuzz::AttentionCase c = fp::fuzz::draw(fp::fuzz::gen_attention_case(), seed++).value();
    const fp::Routine r = fp::fuzz::build_case_routine(c);
    benchmark::DoNotOptimize(fp::interpret(r, fp::fuzz::case_inputs(c, r)));
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_FuzzParse)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_FuzzParseProperty)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_FuzzRewrite)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_FuzzExecInterpreter)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_FuzzAttentionInterpreter)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK(BM_FuzzExec)->MeasureProcessCPUTime()->UseRealTime()->Iterations(10);
BENCHMARK(BM_FuzzVerify)->MeasureProcessCPUTime()->UseRealTime()->Iterations(5);

}  // namespace
