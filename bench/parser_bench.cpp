// Throughput of the `.fp` parser and printer (MB/s of text) on a large generated routine: many
// attention-like loop nests with affine indices, locals, scans and every kind of constant,
// about 3 MB of text in all. BM_ParsePathological: the parser's time and peak heap on 10 MB inputs
// of the shapes that used to blow up (one line of noops: 2.6 s and 508 MB; x:=x statements:
// 744 MB); the target is at most 1 s and 100 MB for any 10 MB input.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "core/diagnostic.h"
#include "core/ir.h"
#include "core/text_parser.h"
#include "core/text_printer.h"

// The heap this benchmark binary holds, live and at its peak since the last reset: every
// operator new of the process is counted (a benchmark binary of its own, so nothing else pays).
namespace {
std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_peak{0};

void count_allocation(void* p) {
  const std::size_t now = g_live.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
  std::size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  count_allocation(p);
  return p;
}
// GCC inlines this into library code and then takes the free() for a mismatch with the standard
// operator new it assumes; every operator new in this program is the one above, which mallocs.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(malloc_usable_size(p));
  std::free(p);
}
#pragma GCC diagnostic pop
void operator delete(void* p, std::size_t) noexcept {
  operator delete(p);
}

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

// Constants dominate counterexample files: shortest round-trip printing and exact parsing. 50000
// statements (2.5 MB): 100000 of them would take some 80 MB of IR, past kMaxRoutineBytes.
void BM_ParseConstants(benchmark::State& state) {
  std::string text = "routine c {\n  local v : f64\n";
  for (int k = 0; k < 50000; ++k)
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

// 10 MB inputs: `head`, `unit` repeated, `tail`.
std::string ten_mb(const std::string& head, const std::string& unit, const std::string& tail) {
  std::string s = head;
  while (s.size() + unit.size() <= 10'000'000 + head.size()) s += unit;
  return s + tail;
}

struct Shape {
  const char* name;
  std::string text;
};

const std::vector<Shape>& pathological_shapes() {
  static const std::vector<Shape> shapes{
      {"noops", ten_mb("routine r {\n", "noop ", "\n}\n")},
      {"local_stores", ten_mb("routine r {\n  local x : f32\n", "x:=x ", "\n}\n")},
      {"zeros", ten_mb("routine r {\n  node a : f32[1] materialized output\n", "zero a\n", "}\n")},
      {"comments", ten_mb("routine r {\n", "comment \"\" ", "\n}\n")},
      {"indices",
       ten_mb("routine r {\n  node a : f32[1] materialized output\n  a[", "0, ", "0] = 1:f32\n}\n")},
      {"extents", ten_mb("routine r {\n  node a : f32[", "1, ", "1] materialized\n}\n")},
      {"index_terms",
       ten_mb("routine r {\n  node a : f32[1] materialized output\n  a[", "0 + i - ", "i] = 1:f32\n}\n")},
      {"nested_ops", ten_mb("routine r {\n  local x : f64\n  x := ", "neg.f64(", "\n}\n")},
      {"number", ten_mb("routine r {\n  local x : f64\n  x := ", "7", ":f64\n}\n")},
      {"identifier", ten_mb("routine ", "a", " {}\n")},
      {"comment_line", ten_mb("routine r {\n  #", "c", "\n}\n")},
  };
  return shapes;
}

// Time per parse (a routine or its error) and peak heap above the text itself.
void BM_ParsePathological(benchmark::State& state) {
  const Shape& shape = pathological_shapes()[static_cast<std::size_t>(state.range(0))];
  std::size_t peak = 0;
  bool error = false;
  for (auto _ : state) {
    const std::size_t base = g_live.load();
    g_peak.store(base);
    try {
      Routine r = parse_routine(shape.text, "big.fp");
      benchmark::DoNotOptimize(r.body);
    } catch (const UserError&) {
      error = true;
    }
    peak = std::max(peak, g_peak.load() - base);
  }
  state.SetLabel(std::string(shape.name) + (error ? " (error)" : " (parsed)"));
  state.counters["peak_heap_MB"] = static_cast<double>(peak) / 1e6;
  state.counters["text_MB"] = static_cast<double>(shape.text.size()) / 1e6;
}
BENCHMARK(BM_ParsePathological)->DenseRange(0, 10)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
