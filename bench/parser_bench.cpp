// Throughput of the `.fp` parser and printer (MB/s of text) on a large generated routine: many
// attention-like loop nests with affine indices, locals, scans and every kind of constant,
// about 4 MB of text in all.

#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/ir.h"
#include "core/text_parser.h"
#include "core/text_printer.h"

namespace {

using namespace fp;

// One nest: a dot-product accumulation into a local, a guarded store and a running-max scan.
StmtP nest(int k) {
  const std::string acc = "acc" + std::to_string(k);
  Index b = Index::iter("b"), i = Index::iter("i"), d = Index::iter("d");
  Index shifted{{{4, "i"}, {1, "d"}}, -1};
  auto q = get("q", {b, i, d}, Prec::F32);
  auto kk = get("k", {b, shifted, d}, Prec::BF16);
  auto sum = binary(BinOp::Add, get_local(acc, Prec::F32), binary(BinOp::Mul, q, kk, Prec::F32), Prec::F32);
  auto guarded = ternary(
      TernOp::Where, binary(BinOp::Lt, get_local(acc, Prec::F32), constant(-INFINITY, Prec::F32), Prec::F32),
      constant(0.125, Prec::F32),
      unary(UnOp::Exp, binary(BinOp::Sub, get_local(acc, Prec::F32), constant(1.5e-3, Prec::F32), Prec::F32),
            Prec::F32),
      Prec::F32);
  auto running_max = scan_loop(
      "t", 0, 63, ScanDir::Forward, {Carried{"mp", "mn", Prec::F32, constant(-INFINITY, Prec::F32)}},
      {set_local("mn", binary(BinOp::Max, get_local("mp", Prec::F32),
                              get("s", {b, Index::iter("t")}, Prec::F32), Prec::F32)),
       set("m", {b}, get_local("mn", Prec::F32))});
  return for_loop("b", 0, 3,
                  {for_loop("i", 0, 127,
                            {declare_local(acc, Prec::F32), set_local(acc, constant(0.0, Prec::F32)),
                             for_loop("d", 0, 63, {set_local(acc, sum)}), set("s", {b, i}, guarded),
                             comment("nest " + std::to_string(k))}),
                   running_max});
}

Routine large_routine(int nests) {
  Routine r;
  r.name = "bench";
  r.attrs = {{"seq_q", 128}, {"seq_k", 512}};
  r.nodes = {
      Node{"q", {4, 128, 64}, Prec::F32, MemMode::Materialized, true, false, {}},
      Node{"k", {4, 576, 64}, Prec::BF16, MemMode::Materialized, true, false, {}},
      Node{"s", {4, 128}, Prec::F32, MemMode::Materialized, false, false, {}},
      Node{"m", {4}, Prec::F32, MemMode::Materialized, false, true, {}},
  };
  std::vector<StmtP> body;
  for (int k = 0; k < nests; ++k) body.push_back(nest(k));
  r.body = seq(std::move(body));
  return r;
}

const Routine& bench_routine() {
  static const Routine r = large_routine(6000);
  return r;
}

const std::string& bench_text() {
  static const std::string text = print_routine(bench_routine());
  return text;
}

void BM_ParseRoutine(benchmark::State& state) {
  const std::string& text = bench_text();
  for (auto _ : state) {
    Routine r = parse_routine(text, "bench.fp");
    benchmark::DoNotOptimize(r.body);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(text.size()));
  state.counters["text_MB"] = static_cast<double>(text.size()) / 1e6;
}
BENCHMARK(BM_ParseRoutine)->Unit(benchmark::kMillisecond);

void BM_PrintRoutine(benchmark::State& state) {
  const Routine& r = bench_routine();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = print_routine(r);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_PrintRoutine)->Unit(benchmark::kMillisecond);

// Constants dominate counterexample files: shortest round-trip printing and exact parsing.
void BM_ParseConstants(benchmark::State& state) {
  std::string text = "routine c {\n  local v : f64\n";
  for (int k = 0; k < 100000; ++k)
    text += "  v := add.f64(" + print_constant(1.0 / (k + 3), Prec::F64) + ":f64, -" +
            print_constant(k * 1e-310, Prec::F64) + ":f64)\n";
  text += "}\n";
  for (auto _ : state) {
    Routine r = parse_routine(text, "constants.fp");
    benchmark::DoNotOptimize(r.body);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_ParseConstants)->Unit(benchmark::kMillisecond);

}  // namespace
