#pragma once
// The score chain of a normalizer's scores x, shared by the block fold (which computes the scores
// itself) and the fused backward (which recomputes them per pair): x's definition unfolded through
// single-writer pointwise nests storing whole nodes of x's shape, each read at the cell it defines
// (the scale, the mask's where), down to the score contraction S: `zero S` and one nest
// S[..] = add(S[..], mul(a[..], b[..])) writing every cell of S. Other reads of the chain (a mask
// tensor, constants) are its leaves.

#include <string>
#include <variant>
#include <vector>

#include "core/ir.h"
#include "rewrites/online_softmax/routine_view.h"

namespace fp::osm {

struct ScoreChain {
  std::string s;  // the contraction's node
  Prec s_prec = Prec::F32;
  int s_zero = -1, s_pos = -1;  // its zero-out and its nest
  const Nest* score_nest = nullptr;
  std::vector<int> chain;                // the pointwise definitions, x's first
  std::vector<const Nest*> chain_nests;  // the same, as nests
};

// The chain under `x`, or the sentence saying why there is none.
std::variant<ScoreChain, std::string> find_score_chain(const RoutineView& view, const std::string& x);

}  // namespace fp::osm
