#pragma once
// Placement (virtualization): decides, for every intermediate node, whether it is stored in a
// buffer (materialized) or recomputed at each read (virtual). The rules are in docs/placement.md;
// in short, a node is recomputed when it has one definition that can be replayed anywhere — one
// pointwise nest, or a fill plus one accumulating nest — and replaying it is cheap enough: a
// reduction over at most `max_inline_reduction` iterations, a pointwise value read once, or a
// trivially cheap pointwise value. Placement never changes a value (core/ir.h: recomputation is
// deterministic); it only changes node modes.

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"

namespace fp {

struct PlacementConfig {
  // Config key virtualize_max_inline_reduction: the largest reduction trip count (product of the
  // extents of the accumulating nest's loops that do not index the target) recomputed at its
  // reads. Negative: reductions are never recomputed.
  std::int64_t max_inline_reduction = 16;
};

struct PlacementDecision {
  std::string node;
  MemMode mode;        // the mode the node has in PlacementResult::routine
  std::string reason;  // one sentence: why
};

struct PlacementResult {
  Routine routine;                           // the input with node modes decided
  std::vector<PlacementDecision> decisions;  // one per node, in declaration order
};

// `r` must pass the checker. Deterministic; place(place(r).routine) decides the same modes.
PlacementResult place(const Routine& r, const PlacementConfig& cfg);

}  // namespace fp
