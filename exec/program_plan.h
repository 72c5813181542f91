#pragma once
// What the compiled executors need to know about a routine before generating code, computed once
// and shared by the C and CUDA generators:
//
//  - the routine placed by core/placement.h (compile() always places: a node found `virtual` that
//    cannot be replayed is corrected, so every virtual node below has a replayable definition);
//  - the top-level list (nested seqs spliced, as core/access_census.h numbers it) and which of its
//    statements only define virtual nodes (they do not run where they stand: the node's definition
//    is replayed at each read);
//  - each virtual node's definition (a pointwise nest, or a fill plus an accumulating nest);
//  - each buffer's live span over the top-level list, by exactly the memory report's rules
//    (core/memory_report.h: first access to last access, inputs from the start, outputs to the
//    end, reads of virtual nodes counted as reads of what their replay reads). The C executor
//    allocates a buffer before its first statement and frees it after its last, so its measured
//    peak is the report's peak_bytes (a test checks equality);
//  - for each top-level nest, whether its loops may be reordered and run in parallel (nest_shape).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/access_census.h"
#include "core/ir.h"
#include "core/memory_report.h"
#include "core/placement.h"

namespace fp {

// How a virtual node is recomputed at a read.
struct VirtualDef {
  enum class Kind { Pointwise, Reduction } kind = Kind::Pointwise;
  // Pointwise: the node's one defining nest. Reduction: the accumulating nest.
  Nest nest;
  // Reduction: the fill, either `zero n` (fill_value null) or a nest storing the constant
  // fill_value to every cell.
  ExprP fill_value;
};

// A buffer's live span over the top-level list; first < 0: never live (never allocated).
struct BufferSpan {
  int first = -1;
  int last = -1;
};

// A top-level perfect nest `for* -> set` whose store W[J] visits distinct cells for distinct
// iterations of its "target" loops (each axis of J a plain iterator of a distinct loop, or fixed)
// and that reads W only at exactly J. Then, for a fixed cell, the other ("reduced") loops run in
// the same lexicographic order whatever the position of the target loops, so the nest may be
// reordered with every target loop outside every reduced loop (relative orders kept), the target
// loops run in parallel, and the cell kept in a register across the reduced loops: all without
// changing a single bit (docs/executors.md).
struct NestShape {
  Nest nest;
  std::vector<const Stmt*> target;   // outermost first (original relative order)
  std::vector<const Stmt*> reduced;  // outermost first
  std::vector<int> target_axis;      // target[i] indexes axis target_axis[i] of W
  bool self_read = false;            // the value reads W (at J): an accumulation
};
std::optional<NestShape> nest_shape(const Stmt& s);

struct ProgramPlan {
  Routine placed;
  std::vector<const Stmt*> top;  // the top-level list (pointers into placed.body)
  std::vector<bool> replayed;    // per position: only defines virtual nodes, not run where it stands
  std::map<std::string, int, std::less<>> node_index;  // name -> index in placed.nodes
  std::vector<BufferSpan> span;                        // per node of placed.nodes (virtual: never)
  std::map<std::string, VirtualDef, std::less<>> virtuals;
  MemoryReport report;
  // A local declared at the top level (outside every loop): the CUDA generator then runs the
  // routine as one serial kernel.
  bool top_level_locals = false;

  const Node& node(std::string_view name) const;
  bool is_virtual(std::string_view name) const { return virtuals.count(name) > 0; }
  int position_of(const Stmt* s) const;  // -1 if not a top-level statement
  // Buffers (node indices) whose span starts / ends at position p.
  std::vector<int> starting_at(int p) const;
  std::vector<int> ending_at(int p) const;
  // The first top-level statement touching node `i` overwrites every cell before anything reads
  // it (`zero n`, or a pointwise full-cover nest storing n without reading it): its initial zeros
  // are never observed (the C executor skips zeroing it; the CUDA executor poisons it instead and
  // checks after the run that no poison survived).
  bool overwritten_first(int i) const;
  // The nodes one replay of virtual `name` reads (transitively through virtual nodes; never virtual).
  const std::set<std::string>& replay_reads(const std::string& name) const;

  std::map<std::string, std::set<std::string>> replay_reads_;  // memo of replay_reads
  std::map<const Stmt*, int> position_;
};

// Places `r` (which must pass the checker) and plans it. Internal error if placement left a
// virtual node without a replayable definition (placement's contract).
ProgramPlan make_plan(const Routine& r, const PlacementConfig& cfg);

// Every node that `s` (any statement, at any depth) writes with `set` or `zero`.
std::set<std::string> written_nodes(const Stmt& s);

}  // namespace fp
