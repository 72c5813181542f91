// Time to run the rewrite tier (online softmax on, backward gate off) on a training-step routine
// of 12, 24, 48 and 96 stacked self-attention layers (forward + composed backward, projections
// included), and how it grows with the layer count. Building the routine is not timed.
//
// frontend/attention.h caps one build at kMaxAttentionLayers; a larger count is built as independent
// stacks of at most that many layers, each stack's nodes renamed apart, in one routine — the same
// statements and normalizers per layer, which is all the tier's cost depends on.

#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "frontend/attention.h"
#include "core/ir.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"

namespace {

using namespace fp;

ExprP rename(const ExprP& e, const std::string& suffix) {
  Expr x = *e;
  if (x.kind == ExprKind::Get) x.name += suffix;
  for (auto& a : x.args) a = rename(a, suffix);
  return std::make_shared<const Expr>(std::move(x));
}

StmtP rename(const StmtP& s, const std::string& suffix) {
  Stmt x = *s;
  if (x.kind == StmtKind::Set || x.kind == StmtKind::Zero) x.name += suffix;
  if (x.value) x.value = rename(x.value, suffix);
  for (auto& b : x.body) b = rename(b, suffix);
  return std::make_shared<const Stmt>(std::move(x));
}

Routine training_routine(int layers) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 2;
  spec.sq = spec.sk = 16;
  spec.d = spec.e = 8;
  spec.mask = "causal";
  spec.leaf = false;
  spec.train = true;
  Routine out;
  std::vector<StmtP> body;
  for (int done = 0, chunk = 0; done < layers; ++chunk) {
    spec.layers = std::min(layers - done, kMaxAttentionLayers);
    Routine r = build_attention(spec);
    const std::string suffix = layers > kMaxAttentionLayers ? "_s" + std::to_string(chunk) : "";
    if (chunk == 0) {
      out.name = r.name;
      out.attrs = r.attrs;
    }
    for (Node n : r.nodes) {
      n.name += suffix;
      out.nodes.push_back(n);
    }
    body.push_back(suffix.empty() ? r.body : rename(r.body, suffix));
    done += spec.layers;
  }
  out.body = seq(std::move(body));
  return out;
}

void BM_RewriteTrainingStep(benchmark::State& state) {
  const int layers = static_cast<int>(state.range(0));
  Routine r = training_routine(layers);
  Config config;
  config.set("online_softmax", "true");
  std::size_t applications = 0;
  for (auto _ : state) {
    RewriteResult res = run_tier(r, config);
    applications = res.applications.size();
    benchmark::DoNotOptimize(res.routine.body);
  }
  state.counters["layers"] = layers;
  state.counters["applications"] = static_cast<double>(applications);
  state.counters["us_per_layer"] =
      benchmark::Counter(static_cast<double>(layers),
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_RewriteTrainingStep)->Arg(12)->Arg(24)->Arg(48)->Arg(96)->Unit(benchmark::kMillisecond);

}  // namespace
