// Figures of the verify engine (docs/verify.md "Benchmarks"):
//   BM_VerifyAttentionSuite  every obligation of the tier on the attention programs
//                            (tests/fixtures/attention_suite.h), no cache: time per obligation (median,
//                            p95, max) per claim kind
//   BM_CacheHit              the same tasks answered from the proof cache: time per verdict
//   BM_VerifyModel/<jobs>/<gates>/<mask>  issue 12's model: a 24-layer training step, 16 heads, seq
//                            4096, d 128; gates 0: online_softmax, 1: and the block fold
//                            (online_softmax_block=64), 2: the approximate profile (every gate,
//                            the fused backward too); mask 0 causal, 1 padding:512, 2 none: cold (no
//                            cache) and from the cache, wall seconds, decided count, scope all sizes
//                            count, peak RSS. Cold only in a fresh process (certificates and solver
//                            answers are kept per process): run one at a time,
//                            --benchmark_filter=BM_VerifyModel/1/1/0
//   BM_Tightness/<prec>      worst observed error / bound on 10^4 MPFR rows (the certificate's (c))
//   BM_FoldTightness/<prec>/<B>  the same through the block fold in blocks of min(B, n), B in {1, 2,
//                            3, 7, 16, 64, 2^20 (>= every n: one block)} (docs/bounds.md §7)
//   BM_RealsCertificate      Z3 over the reals, n = 1..3, every pattern: time and proved count
//   BM_ExpUlpF32             fp_exp64's error in binary64 ulps over f32 inputs (the f64 bound's η64
//                            on such arguments), against long double expl; every 4099th pattern by
//                            default, all 2^32 with FLASHPROOF_EXP_F32_STRIDE=1 (minutes)
//   BM_Exp32Ulp              fp_exp32's error in f32 ulps (exp.f32, the bound's η32 = U32·2^-23)
//                            against MPFR on every 4099th f32 pattern; the exhaustive sweep is
//                            bench/exp_ulp_bench's
// Run: build/bench/verify_bench [--benchmark_filter=...]

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/numerics.h"
#include "frontend/attention.h"
#include "rewrites/config.h"
#include "tests/fixtures/attention_suite.h"
#include "verify/bounds/exp_reference.h"
#include "verify/engine.h"
#include "verify/online_softmax/bounds/mpfr_reference.h"
#include "verify/online_softmax/bounds/normalizer_bound.h"
#include "verify/online_softmax/smt/queries.h"

namespace fp::verify {
namespace {

std::vector<Task> suite_tasks() {
  std::vector<Task> tasks;
  Config cfg;
  cfg.set("online_softmax", "true");
  for (const auto& c : attention_suite()) {
    TierTasks tt =
        tier_tasks(build_attention(c.spec), cfg, {}, c.name + ".fp", "flashproof verify " + c.name + ".fp");
    for (auto& t : tt.tasks) {
      t.id = c.name + "/" + t.id;
      tasks.push_back(std::move(t));
    }
  }
  return tasks;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(k, v.size() - 1)];
}

EngineOptions bench_options(bool cache, const std::string& dir) {
  EngineOptions o;
  o.use_cache = cache;
  o.cache_dir = dir;
  o.cex_dir = (std::filesystem::temp_directory_path() / "flashproof-verify-bench-cex").string();
  return o;
}

void BM_VerifyAttentionSuite(benchmark::State& state) {
  std::vector<Task> tasks = suite_tasks();
  std::map<std::string, std::vector<double>> by_claim;
  std::vector<double> all;
  int proved = 0;
  for (auto _ : state) {
    std::vector<Verdict> vs = verify_tasks(tasks, bench_options(false, ""));
    for (const auto& v : vs) {
      by_claim[v.claim].push_back(v.seconds);
      all.push_back(v.seconds);
      proved += v.proved();
    }
  }
  state.counters["obligations"] = static_cast<double>(tasks.size());
  state.counters["proved"] = static_cast<double>(proved) / static_cast<double>(state.iterations());
  state.counters["median_ms"] = 1e3 * percentile(all, 0.5);
  state.counters["p95_ms"] = 1e3 * percentile(all, 0.95);
  state.counters["max_ms"] = 1e3 * percentile(all, 1.0);
  for (const auto& [claim, t] : by_claim) {
    state.counters[claim + "_median_ms"] = 1e3 * percentile(t, 0.5);
    state.counters[claim + "_p95_ms"] = 1e3 * percentile(t, 0.95);
  }
}
BENCHMARK(BM_VerifyAttentionSuite)->Unit(benchmark::kSecond)->Iterations(1);

void BM_CacheHit(benchmark::State& state) {
  std::vector<Task> tasks = suite_tasks();
  std::string dir = (std::filesystem::temp_directory_path() / "flashproof-verify-bench-cache").string();
  std::filesystem::remove_all(dir);
  verify_tasks(tasks, bench_options(true, dir));  // fill
  std::vector<double> per;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Verdict> vs = verify_tasks(tasks, bench_options(true, dir));
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int hits = 0;
    for (const auto& v : vs) hits += v.cached;
    if (hits != static_cast<int>(vs.size())) state.SkipWithError("not every verdict came from the cache");
    per.push_back(s / static_cast<double>(vs.size()));
  }
  state.counters["per_verdict_us"] = 1e6 * percentile(per, 0.5);
  state.counters["obligations"] = static_cast<double>(tasks.size());
}
BENCHMARK(BM_CacheHit)->Unit(benchmark::kMillisecond)->Iterations(5);

std::int64_t peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  return 0;
}

void BM_VerifyModel(benchmark::State& state) {
  AttentionSpec s;
  s.layers = 24;
  s.heads = 16;
  s.sq = s.sk = 4096;
  s.d = s.e = 128;
  const char* masks[] = {"causal", "padding:512", "none"};
  s.mask = masks[state.range(2)];
  s.train = true;
  const std::int64_t gates = state.range(1);
  Config cfg = make_config(gates == 2 ? "approximate" : "", {}, {});
  cfg.set("online_softmax", "true");
  if (gates == 1) cfg.set("online_softmax_block", "64");
  state.SetLabel(fmt::format("{}, {}", gates == 0 ? "online_softmax" : gates == 1 ? "+ block fold 64" : "approximate",
                             s.mask));
  const std::vector<Task> tasks = tier_tasks(build_attention(s), cfg, {}, "model.fp", "flashproof verify model.fp").tasks;
  const std::string dir = (std::filesystem::temp_directory_path() / "flashproof-verify-bench-model").string();
  double cold = 0, cached = 0;
  int decided = 0, all_sizes = 0;
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    EngineOptions o = bench_options(true, dir);
    o.jobs = static_cast<int>(state.range(0));
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Verdict> vs = verify_tasks(tasks, o);
    cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    std::vector<Verdict> again = verify_tasks(tasks, o);
    cached = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    decided = all_sizes = 0;
    for (const auto& v : vs) {
      decided += v.proved();
      all_sizes += v.scope.all_sizes;
    }
  }
  state.counters["obligations"] = static_cast<double>(tasks.size());
  state.counters["decided"] = decided;
  state.counters["all_sizes"] = all_sizes;
  state.counters["cold_s"] = cold;
  state.counters["cached_s"] = cached;
  state.counters["peak_rss_MiB"] = static_cast<double>(peak_rss_kib()) / 1024.0;
}
BENCHMARK(BM_VerifyModel)
    ->ArgsProduct({{1, 2}, {0, 1, 2}, {0, 1, 2}})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_Tightness(benchmark::State& state) {
  const Prec p = static_cast<Prec>(state.range(0));
  MpfrReport r;
  for (auto _ : state) {
    Limits l;
    r = mpfr_check_normalizer(p, 64, l);
  }
  state.SetLabel(prec_name(p));
  state.counters["rows"] = r.rows;
  state.counters["violations"] = r.violations;
  state.counters["tightness"] = r.worst_pair;
  state.counters["src_of_Bsrc"] = r.worst_src;
  state.counters["tgt_of_Btgt"] = r.worst_tgt;
}
BENCHMARK(BM_Tightness)
    ->Arg(static_cast<int>(Prec::F64))
    ->Arg(static_cast<int>(Prec::F32))
    ->Arg(static_cast<int>(Prec::F16))
    ->Arg(static_cast<int>(Prec::BF16))
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_FoldTightness(benchmark::State& state) {
  const Prec p = static_cast<Prec>(state.range(0));
  const std::int64_t block = state.range(1);
  MpfrReport r;
  for (auto _ : state) {
    Limits l;
    r = mpfr_check_normalizer(p, 64, l, block);
  }
  state.SetLabel(fmt::format("{} B={}", prec_name(p), block));
  state.counters["rows"] = r.rows;
  state.counters["violations"] = r.violations + r.nan_mismatches + r.max_mismatches + r.output_violations;
  state.counters["O_tightness"] = r.worst_output;
  state.counters["tightness"] = r.worst_pair;
  state.counters["src_of_Bsrc"] = r.worst_src;
  state.counters["tgt_of_Btgt"] = r.worst_tgt;
}
BENCHMARK(BM_FoldTightness)
    ->ArgsProduct({{static_cast<int>(Prec::F64), static_cast<int>(Prec::F32), static_cast<int>(Prec::F16),
                    static_cast<int>(Prec::BF16)},
                   {1, 2, 3, 7, 16, 64, 1 << 20}})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_RealsCertificate(benchmark::State& state) {
  int proved = 0, total = 0;
  for (auto _ : state) {
    proved = total = 0;
    for (int n = 1; n <= 3; ++n)
      for (int pat = 0; pat < (1 << (n - 1)); ++pat) {
        smt::RealBoundQuery q;
        q.n = n;
        for (int i = 0; i < n - 1; ++i) q.pattern += ((pat >> i) & 1) ? '1' : '0';
        q.storage_exp_eps = q.state_exp_eps = exp_error(Prec::F32, 0.52);
        q.rel = normalizer_bound(Prec::F32, Prec::F32, n, 0.52).rel;
        smt::SmtLimits lim;
        lim.timeout_s = 5;
        proved += smt::check_real_bound(q, lim).status == smt::SmtStatus::Unsat;
        ++total;
      }
  }
  state.counters["proved"] = proved;
  state.counters["patterns"] = total;
}
BENCHMARK(BM_RealsCertificate)->Unit(benchmark::kSecond)->Iterations(1);

void BM_ExpUlpF32(benchmark::State& state) {
  std::uint64_t stride = 4099;
  if (const char* s = std::getenv("FLASHPROOF_EXP_F32_STRIDE"))
    stride = std::max<std::uint64_t>(1, std::strtoull(s, nullptr, 10));
  double worst = 0, worst_x = 0;
  std::uint64_t checked = 0;
  for (auto _ : state) {
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += stride) {
      float xf = std::bit_cast<float>(static_cast<std::uint32_t>(b));
      if (!std::isfinite(xf)) continue;
      double x = xf;
      double got = fp_exp64(x);
      if (!std::isfinite(got) || got < 0x1p-1022) continue;  // overflow / subnormal: absolute terms
      long double ref = std::exp(static_cast<long double>(x));
      int e = 0;
      std::frexp(got, &e);
      double err =
          static_cast<double>(std::fabs(static_cast<long double>(got) - ref) / std::ldexp(1.0L, e - 53));
      ++checked;
      if (err > worst) {
        worst = err;
        worst_x = x;
      }
    }
  }
  state.counters["max_ulp_f64"] = worst;
  state.counters["worst_x"] = worst_x;
  state.counters["checked"] = static_cast<double>(checked);
  state.counters["stride"] = static_cast<double>(stride);
}
BENCHMARK(BM_ExpUlpF32)->Unit(benchmark::kSecond)->Iterations(1);

void BM_Exp32Ulp(benchmark::State& state) {
  double worst = 0, worst_x = 0;
  std::uint64_t checked = 0;
  for (auto _ : state) {
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 4099) {
      const float xf = std::bit_cast<float>(static_cast<std::uint32_t>(b));
      if (!std::isfinite(xf)) continue;
      const double err = exp_narrow_ulp_error(Prec::F32, xf, fp_exp32(xf));
      ++checked;
      if (err > worst) {
        worst = err;
        worst_x = xf;
      }
    }
  }
  state.counters["max_ulp_f32"] = worst;
  state.counters["worst_x"] = worst_x;
  state.counters["checked"] = static_cast<double>(checked);
  state.counters["figure"] = kExp32MaxUlp;
}
BENCHMARK(BM_Exp32Ulp)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace fp::verify
