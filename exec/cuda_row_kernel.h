#pragma once
// The CUDA row kernel's plan (internal to exec/): which statements run as one CUDA thread per row
// with the row's tiles in per-thread arrays and the key and value blocks staged through shared
// memory, and what is staged. The emission is exec/cuda_codegen.cpp's; docs/executors.md
// ("CUDA: the row kernel") states the mapping and why it computes what the interpreter computes.
//
// A top-level statement gets a row kernel when
//  - its rows (the longest parallel-safe prefix of its loop chain, codegen::parallel_safe) are
//    not empty: one of them (the spread row) is spread over the threads of a block (at most
//    2^31 − 1 blocks), the others (the outer rows, one per block row of the grid) are uniform
//    over a block;
//  - the body of its last row (looked through a block that is all of it) holds a live scan
//    directly (one carrying a running max and a rescaled sum, one over blocks of another node's
//    rows with several statements per step); and
//  - something is gained: a row-private tile (exec/row_private.h) or a staged node.
// A node is staged for the scan when it is read in the scan's body, never written in the
// statement, not read through a virtual node's replay, not row-private, and every read of it in
// the body indexes each axis with the same uniform part (outer row symbols and the scan's symbol)
// plus a part in the body's own loop symbols alone: per scan iteration, the cells read lie in one
// box at a uniform base, copied by the whole block into shared memory (__syncthreads before and
// after) before any thread reads it. Boxes are taken in node order while they fit kSharedBudget.
// The spread row is the one that leaves the most bytes staged (attention's query rows: the keys
// and values do not depend on them), then the longest.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/ir.h"
#include "exec/program_plan.h"
#include "exec/row_private.h"

namespace fp::codegen {

// Static shared memory per kernel for staged boxes (the static limit is 48 KiB).
inline constexpr std::int64_t kSharedBudget = 40 * 1024;
// Per-thread array cells a row-private tile may take (past this it stays in global memory).
inline constexpr std::int64_t kTileCellLimit = 1024;

struct StagedNode {
  int node = -1;                     // index in plan.placed.nodes
  std::vector<Index> base;           // per axis: the box's first index (uniform symbols only)
  std::vector<std::int64_t> extent;  // per axis: the box's extent
  std::int64_t cells() const;
};

struct RowKernelPlan {
  std::vector<const Stmt*> rows;     // the grid loops (rows[spread] over a block's threads)
  std::size_t spread = 0;
  const std::vector<StmtP>* body = nullptr;  // the last row's statements (one-block bodies looked through)
  const Stmt* scan = nullptr;        // the scan in `body` whose reads are staged
  std::vector<RowPrivateNode> tiles; // row-private nodes kept in per-thread arrays
  std::vector<StagedNode> staged;
};

// The row kernel for top-level statement `position` with rows `rows`, or nothing.
std::optional<RowKernelPlan> plan_row_kernel(const ProgramPlan& plan, int position,
                                             const std::vector<const Stmt*>& rows);

}  // namespace fp::codegen
