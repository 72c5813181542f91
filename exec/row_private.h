#pragma once
// Row-private nodes: buffers an executor may replace by one small private slice per iteration of a
// statement's leading loops, without changing a bit (internal to exec/).
//
// The lemma. Let node n be neither an input, an output, a requested node nor a virtual one, let
// every access to n lie in one top-level statement P (no other statement and no virtual
// definition's replay touches it, no `zero n`), and let `rows` be a prefix of P's perfect loop
// chain such that, for each loop L of `rows`, every access to n indexes one fixed axis a(L) with
// L's plain iterator (and no loop or scan inside P binds L's symbol again). Then:
//  - an iteration of the `rows` loops touches only the cells whose axes a(L) equal its iterators
//    (its slice), and distinct iterations have disjoint slices;
//  - a slice holds +0 when its iteration starts (n starts at +0 and nothing else writes it), and
//    nothing reads it after that iteration (every access is in P, inside the iteration);
// so running each iteration on a fresh slice zeroed at its start, indexed by the other axes alone,
// computes exactly what the whole buffer computes. The compiled C executor uses it to keep the
// per-row tiles of a band run in lanes on the stack (exec/c_schedule_private_tiles.cpp,
// docs/executors.md).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/program_plan.h"

namespace fp::codegen {

struct RowPrivateNode {
  int node = -1;                 // index in plan.placed.nodes
  std::vector<std::size_t> axis;  // axis[i]: the axis rows[i] indexes
};

// The cells of one slice of `n` (a row-private node): the product of the dims its rows do not index.
std::int64_t slice_cells(const Node& n, const RowPrivateNode& r);

// The nodes the lemma above makes private to the iterations of `rows` (a prefix of the perfect
// loop chain of top-level statement `position`), in node order.
std::vector<RowPrivateNode> row_private_nodes(const ProgramPlan& plan, int position,
                                              const std::vector<const Stmt*>& rows);

}  // namespace fp::codegen
