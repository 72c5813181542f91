#pragma once
// The verify engine: turns the tier's obligations (or one hand-written pair) into verdicts.
//
// Dispatch (docs/verify.md): each obligation goes to the checker its shape declares for its claim
// (ClaimSpec::checker, rewrites/member.h; the checkers are verify/checkers.h); a hand-written pair
// to `bitwise` (--claim exact) or `relative` (--claim bounded:REL). The engine is split by
// responsibility: tasks (task.h), dispatch under the budget (dispatch.cpp), the proof cache
// (verdict_cache.h), the worker threads (engine.cpp) and the counterexample case (case_attach.h).
// A refuted verdict's counterexample is reduced in size (verify/size_reduction.h), minimized and
// written as a runnable case directory; the verdict itself is decided at the obligation's sizes.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rewrites/tier.h"
#include "verify/task.h"
#include "verify/verdict.h"

namespace fp::verify {

// Progress notifications (verify/progress.h implements the terminal and plain-line forms).
struct ProgressSink {
  virtual ~ProgressSink() = default;
  virtual void started(const Task& t) = 0;
  virtual void finished(const Task& t, const Verdict& v) = 0;
  // The phase an obligation entered (verify/phase_clock.h); from the discharging thread.
  virtual void phase(const Task& /*t*/, const std::string& /*phase*/) {}
};

struct EngineOptions {
  Limits limits;
  bool use_cache = true;       // false: neither read nor write the proof cache
  bool refresh_cache = false;  // compute every verdict, then store it (--cache=refresh)
  std::string cache_dir;       // default: ProofCache::default_dir()
  std::string dump_smt_dir;  // write every solver query here (disables cache reads)
  std::string cex_dir = "flashproof-cex";
  // Shrink a refuted verdict's case to smaller extents before minimizing its cells
  // (verify/size_reduction.h); off writes it at the obligation's sizes.
  bool reduce_case_sizes = true;
  int jobs = 1;
  // Wall-clock budget of the whole run (every obligation); none when unset. Obligations it cuts
  // short or never starts end unknown (resource limit), like those their own budget_s stops.
  std::optional<double> run_budget_s;
  // The interpreter's memory per concrete check (--max-memory; verify/compare.h): none when unset.
  std::optional<std::int64_t> interpreter_memory_bytes;
  std::string interpreter_memory_origin;
  ProgressSink* progress = nullptr;
};

// Discharges one task (no cache).
Verdict discharge(const Task& task, const EngineOptions& options);

// Discharges every task: cache lookups, then the misses on `options.jobs` threads. Verdicts in
// task order.
std::vector<Verdict> verify_tasks(const std::vector<Task>& tasks, const EngineOptions& options);

}  // namespace fp::verify
