// Throughput of the reference interpreter in scalar operations per second (the `scalar_ops/s`
// counter): a matmul-like nest and a softmax-like chain at each precision, run through a
// CompiledRoutine (compiled once) and through interpret() (compile + run). A scalar operation is
// one arithmetic op of the routine (add, mul, max, exp, ...); loads, stores and loop control are
// not counted. The target is >= 50 M/s at f32 on one core (docs/semantics.md has the figures).

#include <benchmark/benchmark.h>

#include <cmath>

#include "core/interpreter.h"
#include "core/interpreter_program.h"
#include "core/numerics.h"

namespace fp {
namespace {

Tensor filled(Prec p, std::vector<std::int64_t> dims, double scale) {
  Tensor t = Tensor::zeros(p, std::move(dims));
  for (std::size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = round_to(p, scale * std::sin(0.37 * static_cast<double>(i)));
  return t;
}

// c[i, j] = Σ_k a[i, k] · b[k, j]: 2·n³ scalar ops.
Routine matmul(std::int64_t n, Prec p) {
  Routine r;
  r.name = "matmul";
  r.nodes = {make_node("a", {n, n}, p, true, false), make_node("b", {n, n}, p, true, false),
             make_node("c", {n, n}, p, false, true)};
  auto acc = binary(BinOp::Add, get_iters("c", {"i", "j"}, p),
                    binary(BinOp::Mul, get_iters("a", {"i", "k"}, p), get_iters("b", {"k", "j"}, p), p), p);
  r.body = seq(
      {zero("c"),
       for_loop("i", 0, n - 1,
                {for_loop("j", 0, n - 1, {for_loop("k", 0, n - 1, {set("c", iters({"i", "j"}), acc)})})})});
  return r;
}

// Row softmax in three passes: m = max_k x; s = Σ_k exp(x - m); y = exp(x - m) / s.
// 7 scalar ops per cell (max; sub, exp, add; sub, exp, div).
Routine softmax(std::int64_t rows, std::int64_t cols, Prec p) {
  Routine r;
  r.name = "softmax";
  r.nodes = {make_node("x", {rows, cols}, p, true, false), make_node("m", {rows}, p, false, false),
             make_node("s", {rows}, p, false, false), make_node("y", {rows, cols}, p, false, true)};
  auto x = get_iters("x", {"i", "k"}, p), m = get_iters("m", {"i"}, p), s = get_iters("s", {"i"}, p);
  auto e = unary(UnOp::Exp, binary(BinOp::Sub, x, m, p), p);
  r.body = seq(
      {for_loop("i", 0, rows - 1,
                {set("m", iters({"i"}), constant(-INFINITY, p)),
                 for_loop("k", 0, cols - 1, {set("m", iters({"i"}), binary(BinOp::Max, m, x, p))}),
                 set("s", iters({"i"}), constant(0, p)),
                 for_loop("k", 0, cols - 1, {set("s", iters({"i"}), binary(BinOp::Add, s, e, p))}),
                 for_loop("k", 0, cols - 1, {set("y", iters({"i", "k"}), binary(BinOp::Div, e, s, p))})})});
  return r;
}

void report(benchmark::State& state, double ops_per_run) {
  state.counters["scalar_ops/s"] =
      benchmark::Counter(ops_per_run, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Matmul(benchmark::State& state, Prec p) {
  const std::int64_t n = state.range(0);
  const CompiledRoutine cr(matmul(n, p));
  const TensorMap in = {{"a", filled(p, {n, n}, 2.0)}, {"b", filled(p, {n, n}, 3.0)}};
  for (auto _ : state) benchmark::DoNotOptimize(cr.run(in));
  report(state, 2.0 * static_cast<double>(n * n * n));
}

void BM_Softmax(benchmark::State& state, Prec p) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  const CompiledRoutine cr(softmax(rows, cols, p));
  const TensorMap in = {{"x", filled(p, {rows, cols}, 8.0)}};
  for (auto _ : state) benchmark::DoNotOptimize(cr.run(in));
  report(state, 7.0 * static_cast<double>(rows * cols));
}

// interpret() = compile + validate + run, on a small routine where compiling is a visible share.
void BM_InterpretSmallMatmul(benchmark::State& state) {
  const Routine r = matmul(8, Prec::F32);
  const TensorMap in = {{"a", filled(Prec::F32, {8, 8}, 2.0)}, {"b", filled(Prec::F32, {8, 8}, 3.0)}};
  for (auto _ : state) benchmark::DoNotOptimize(interpret(r, in));
  report(state, 2.0 * 8 * 8 * 8);
}

BENCHMARK_CAPTURE(BM_Matmul, f32, Prec::F32)->Arg(32)->Arg(64)->Arg(128)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Matmul, f64, Prec::F64)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Matmul, f16, Prec::F16)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Matmul, bf16, Prec::BF16)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Softmax, f32, Prec::F32)->Args({64, 1024})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Softmax, f16, Prec::F16)->Args({64, 1024})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_InterpretSmallMatmul)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fp
