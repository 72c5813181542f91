// The verify engine's run (verify/engine.h): cache lookups, then the misses on worker threads.

#include "verify/engine.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "core/support/deadline.h"
#include "verify/verdict_cache.h"

namespace fp::verify {

namespace {

double elapsed(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<Verdict> verify_tasks(const std::vector<Task>& tasks, const EngineOptions& o) {
  std::vector<Verdict> out(tasks.size());
  std::vector<std::size_t> todo;
  const ProofCache cache = engine_cache(o);
  cache.open();  // a refused directory is reported here, not from a worker thread
  const bool read_cache = cache.reads() && o.dump_smt_dir.empty();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (read_cache) {
      const auto t0 = std::chrono::steady_clock::now();
      if (std::optional<Verdict> v = cached_verdict(cache, tasks[i], o.limits)) {
        v->seconds = elapsed(t0);
        if (o.progress) {
          o.progress->started(tasks[i]);
          o.progress->finished(tasks[i], *v);
        }
        out[i] = std::move(*v);
        continue;
      }
    }
    todo.push_back(i);
  }
  std::atomic<std::size_t> next{0};
  const auto run_end =
      o.run_budget_s ? std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                             std::chrono::duration<double>(*o.run_budget_s))
                     : std::chrono::steady_clock::time_point::max();
  const std::string run_label =
      o.run_budget_s ? fmt::format("the run's wall-clock budget ({:g} s, --run-budget)", *o.run_budget_s) : "";
  auto worker = [&] {
    ScopedDeadline run_budget(run_end, run_label);
    for (;;) {
      std::size_t k = next.fetch_add(1);
      if (k >= todo.size()) return;
      const Task& t = tasks[todo[k]];
      if (o.progress) o.progress->started(t);
      Verdict v = discharge(t, o);
      if (cache.writes() && v.reason != UnknownReason::Timeout && !v.decided_by_clock)
        cache.put(task_identity(t, o.limits), to_json(v));
      if (o.progress) o.progress->finished(t, v);
      out[todo[k]] = std::move(v);
    }
  };
  const int jobs = std::max(1, std::min<int>(o.jobs, static_cast<int>(todo.size())));
  if (jobs <= 1) {
    worker();
  } else {
    // An exception in a worker (a case directory that cannot be written, memory exhausted) stops
    // the others and is rethrown here, on the caller's thread: never std::terminate.
    std::mutex failure_mu;
    std::exception_ptr failure;
    auto guarded = [&] {
      try {
        worker();
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mu);
        if (!failure) failure = std::current_exception();
        next.store(todo.size());
      }
    };
    std::vector<std::thread> threads;
    for (int j = 0; j < jobs; ++j) threads.emplace_back(guarded);
    for (auto& th : threads) th.join();
    if (failure) std::rethrow_exception(failure);
  }
  return out;
}

}  // namespace fp::verify
