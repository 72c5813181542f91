#pragma once
// How a verify run is carried out (verify/engine.h runs it): the limits of each obligation, the
// proof cache, where solver queries and counterexamples go, the worker count, the run's budget and
// its progress sink. A header of its own, so that the parts of the engine below engine.h (the
// verdict cache, the checkers' helpers) take the options without the engine itself.

#include <cstdint>
#include <optional>
#include <string>

#include "verify/verdict.h"

namespace fp::verify {

struct ProgressSink;  // verify/engine.h

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

}  // namespace fp::verify
