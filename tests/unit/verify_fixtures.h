#pragma once
// Shared by the verify soundness tests (mutants, size reduction): engine options for one test's
// case directory, and the tier obligations of a small attention program.

#include <filesystem>
#include <string>
#include <vector>

#include "frontend/attention.h"
#include "verify/engine.h"

namespace fp::verify::testing {

// No proof cache, a small reals certificate and MPFR sample (the bound formula is certified by
// its own tests), cases under the temporary directory in a fresh folder per `tag`.
inline EngineOptions engine_options(const std::string& tag, int search_trials = Limits{}.search_trials) {
  EngineOptions o;
  o.use_cache = false;
  o.limits.real_n = 1;
  o.limits.mpfr_rows = 1000;
  o.limits.search_trials = search_trials;
  o.cex_dir = (std::filesystem::temp_directory_path() / ("flashproof-verify-test-" + tag)).string();
  std::filesystem::remove_all(o.cex_dir);
  return o;
}

// The tier's obligations on the attention `s` builds (online_softmax on).
inline std::vector<Task> attention_tasks(const AttentionSpec& s) {
  Config cfg;
  cfg.set("online_softmax", "true");
  return tier_tasks(build_attention(s), cfg, {}, "attention.fp", "flashproof verify attention.fp").tasks;
}

// The tier's obligations on forward attention (batch 1, one head, online_softmax on).
inline std::vector<Task> attention_tasks(std::int64_t seq, std::int64_t width, Prec prec = Prec::F32) {
  AttentionSpec s;
  s.sq = s.sk = seq;
  s.d = s.e = width;
  s.precision = prec;
  return attention_tasks(s);
}

// The tasks of one application of `shape` (the first one).
inline std::vector<Task> tasks_of_shape(const std::vector<Task>& tasks, const std::string& shape) {
  std::vector<Task> out;
  for (const auto& t : tasks)
    if (t.shape == shape && (out.empty() || t.app.statements == out[0].app.statements)) out.push_back(t);
  return out;
}

}  // namespace fp::verify::testing
