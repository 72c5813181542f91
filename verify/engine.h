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
#include "verify/engine_options.h"
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

// Discharges one task (no cache).
Verdict discharge(const Task& task, const EngineOptions& options);

// Discharges every task: cache lookups, then the misses on `options.jobs` threads. Verdicts in
// task order.
std::vector<Verdict> verify_tasks(const std::vector<Task>& tasks, const EngineOptions& options);

}  // namespace fp::verify
