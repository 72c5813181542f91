#pragma once
// Verdicts in the proof cache (verify/proof_cache.h): what a task's entry answers (its identity),
// the cache a run uses, and the lookup that trusts an entry only when it answers this task.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "verify/engine_options.h"
#include "verify/proof_cache.h"
#include "verify/task.h"

namespace fp::verify {

// What a task's cached verdict must answer (verify/proof_cache.h): the routines' text hashes,
// member and version, shape, claim, covers, bound terms, statements, limits, and the engine,
// semantics, solver, tool and build identities. A cached entry is used only for an equal identity.
nlohmann::json task_identity(const Task& task, const Limits& limits);
// The cache key of a task under the given limits (the SHA-256 of its identity).
std::string cache_key(const Task& task, const Limits& limits);


// The proof cache a run uses: --cache-dir, else the default place (none without XDG_CACHE_HOME
// and HOME); --no-cache/--cache=off, --cache=refresh.
ProofCache engine_cache(const EngineOptions& o);

// The cached verdict of `t`, when the cache holds an authenticated entry with this task's
// identity whose verdict is about this task (and whose case directory still exists); its id,
// repro and file are this task's.
std::optional<Verdict> cached_verdict(const ProofCache& cache, const Task& t, const Limits& limits);

}  // namespace fp::verify
