#pragma once
// Symbolic execution: runs a routine at its concrete sizes over symbolic inputs, exactly as
// core/ir.h's SEMANTICS say, and leaves every node cell holding a hash-consed term (term.h).
//
// Loops, scans and indices are concrete (sizes are the routine's own); only values are symbolic.
// An `if` whose condition is a constant runs one branch; any other `if` runs its body and merges
// every cell and local it may have changed as where(cond, new, old) — the statement's own
// semantics (cond != 0, NaN counts as true).
//
// Input cells become TermStore::var(node, cell); every other node starts at +0, as the semantics
// say. Throws TermLimitExceeded when the store's budget is exhausted.

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir.h"
#include "core/ir_visit.h"
#include "verify/symbolic/term.h"

namespace fp::verify {

// Every node's cells (row-major), by node name.
struct SymMemory {
  std::unordered_map<std::string, std::vector<TermP>> cells;
  const std::vector<TermP>& at(const std::string& node) const;
};

struct SymexecOptions {
  // Called before each top-level statement runs (positions as top_level_statements gives them,
  // 0-based) and once more with the statement count after the last: lets a caller look at the
  // memory at a program point (e.g. the scores a max reduction reads).
  std::function<void(int pos, const SymMemory& memory)> at_top_level;
};

SymMemory symexec(const Routine& r, TermStore& store, const SymexecOptions& options = {});


// The row-major flat cell of `idx` (concrete values) in a node of dims `dims`.
std::int64_t flat_cell(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& idx);

}  // namespace fp::verify
