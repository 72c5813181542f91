#pragma once
// The verify engine: turns the tier's obligations (or one hand-written pair) into verdicts.
//
// Every obligation is discharged on its own (source, target) pair: the source is the routine at
// the start of the application's tier round, the target the same routine after that round's
// member ran with only the application's shape enabled. An exact claim proved on such a pair is
// a statement-level equivalence, so it composes with the other shapes' rewrites; a bounded claim
// is certified on the pair it is about.
//
// Dispatch (docs/verify.md):
//   value-pass (exact)        all-sizes lift (value_pass_lift.h) + bitwise check at the routine's
//                             sizes (pair_check.h)
//   any other exact claim     bitwise check of the covered nodes (pair_check.h)
//   normalizer-sum (bounded)  recurrence + certificate + differential (normalizer_check.h)
//   --claim exact             bitwise check of every output of the pair
//   --claim bounded:REL       relative check (rel·|src|, NaN positions exact) of every output
// A refuted verdict's counterexample is reduced in size (verify/size_reduction.h), minimized and
// written as a runnable case directory; the verdict itself is decided at the obligation's sizes.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rewrites/tier.h"
#include "verify/verdict.h"

namespace fp::verify {

struct Task {
  std::string id;      // "1.normalizer-sum", or "pair"
  std::string member;  // "" for a hand-written pair
  std::string shape;
  Application app;
  Obligation obligation;
  Routine src, tgt;
  std::optional<double> rel;  // hand-written bounded:REL
  bool hand_pair = false;
  std::string file;
  std::string repro;
};

// Progress notifications (verify/progress.h implements the terminal and plain-line forms).
struct ProgressSink {
  virtual ~ProgressSink() = default;
  virtual void started(const Task& t) = 0;
  virtual void finished(const Task& t, const Verdict& v) = 0;
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
  ProgressSink* progress = nullptr;
};

// The tier's applications on `r`, one task per obligation, in application order. `repro_base`
// is the command that reproduces the run; each task's repro adds `--obligation ID`.
struct TierTasks {
  RewriteResult result;
  std::vector<Task> tasks;
};
TierTasks tier_tasks(const Routine& r, const Config& config, const TierOptions& options,
                     const std::string& file, const std::string& repro_base);

// A hand-written pair: claim "exact" or "bounded:REL" (REL a positive number). Throws
// UserError(64) for a malformed claim.
Task pair_task(Routine src, Routine tgt, const std::string& claim, const std::string& file,
               const std::string& repro);
// Parses "bounded:REL": nullopt for "exact".
std::optional<double> parse_claim(const std::string& claim);

// Discharges one task (no cache).
Verdict discharge(const Task& task, const EngineOptions& options);

// Discharges every task: cache lookups, then the misses on `options.jobs` threads. Verdicts in
// task order.
std::vector<Verdict> verify_tasks(const std::vector<Task>& tasks, const EngineOptions& options);

// What a task's cached verdict must answer (verify/proof_cache.h): the routines' text hashes,
// member and version, shape, claim, covers, bound terms, statements, limits, and the engine,
// semantics, solver, tool and build identities. A cached entry is used only for an equal identity.
nlohmann::json task_identity(const Task& task, const Limits& limits);
// The cache key of a task under the given limits (the SHA-256 of its identity).
std::string cache_key(const Task& task, const Limits& limits);

}  // namespace fp::verify
