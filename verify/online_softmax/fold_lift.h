#pragma once
// The all-sizes proof of a block fold (online-softmax.block-fold, FlashAttention-2's recurrence),
// independent of the rewrite's own matcher: it reads the source and the target as they are and
// argues over symbolic extents, so the sizes in the routines only instantiate the bounds.
//
// Source (checked on the IR; every index a plain loop symbol over a whole axis, every read followed
// through the axes of the scores x): the composed normalizer of lift::ComposedNormalizerReader
// (m = max x over the key axis t, n = x - m, e = exp n, l = Σ e), the probabilities P = e / l
// (pointwise, one writer), `zero O` and the value pass O[rows, c] += P·v over P's axes and value
// loops c indexing O; x's definition unfolded through single-writer pointwise nests (each read at
// the cell it defines; the other reads are leaves) down to `zero S` and the contraction
// S = Σ_d a·b, one factor (the row operand a) not indexed by the key. Everything at x's precision p.
//
// Target: the source's top-level statements, in order, less the ones the fold consumes (m's and l's
// inits and reductions, P, zero O, the value pass, n and e, and the score chain where nothing else
// reads it), with the value pass replaced by [the zero sums Z,] the fold nest and the row-state
// definitions read after it (the source's own statements, unchanged); no kept statement reads a
// node only consumed statements wrote (but m, l and O, which the fold stores), and nothing writes
// the fold's inputs (a, b, v, the chain's leaves) between the scores and the fold. The fold nest:
// the max's row loops (the same symbols and ranges) around
//   Q[cell(d), rows] = a[..]  (the row operand copied)   U[ucell(c), rows] = 0   T[j, rows] = 0
//   scan tb in 0..K-1 carry (mp -> mn : q = -inf, lp -> ln : q = 0) {
//     the block's scores in T: [tail: T = -inf; and under `bk·tb + j < sk`] T = 0;
//       T += Q·b[key bk·tb + j] over d (the contraction's order); T = x's chain over T
//     its max from mp in key order, floor max(·, LOWEST), α = exp(max(mp, LOWEST) - floor),
//     T = exp(T - floor), its sum from 0 in key order, lp·α + sum;
//     U = U·α;  U += T·v[key bk·tb + j] (tail-guarded)
//     [skips: the computed block under `live`, pred at the block's first key, and under
//      `live == 0` the skipped one — max kept, the same floor and α, 0 + exp(-inf - floor),
//      U = U·α + Z[tb, c] with Z = -0 + Σ_j 0·v over the block's keys]
//     norm = where(mn == -inf, NaN, ln); [m = mn] [l = norm]; on tb = K - 1: O = U / norm }
// with bk the tile's key cells, K = ceil(sk / bk) blocks of the key extent sk, q = state_prec(p), a
// tail exactly when bk does not divide sk, a skip only where x's definition is where(pred, ·, -inf)
// with pred an index comparison that can only turn from true to false as the key grows (so a block
// whose first key is masked has every key masked), and the block-skip lemma (block_skip_lemma.h)
// proved at these precisions. IEEE + and · commute exactly: operand order is not compared.
//
// Consequence, by induction over the blocks of each row (for every sk ≥ 1, bk ≥ 1 and every other
// extent): T holds the row's scores x, bit for bit, at q (widened exactly), padded with -inf; the
// scan's state is the fold's recurrence over them (docs/bounds.md §7), which verify/online_softmax/
// smt/fold_induction.cpp and fold_output_induction.cpp bound for every (n, b); m is the max fold
// over the same scores in the same order (a padded -inf leaves max alone), bit for bit.

#include <cstdint>
#include <string>
#include <vector>

#include "rewrites/application.h"
#include "verify/verdict.h"

namespace fp::verify {

struct FoldLift {
  bool proved = false;
  std::string why_not;  // the first condition that failed
  std::vector<std::string> steps;
  std::string m, l, o;           // the row state's and the output's nodes
  bool m_stored = false, l_stored = false;
  std::int64_t keys = 0, block = 0;  // sk and bk in these routines
  bool skips = false;
};

FoldLift lift_fold(const Routine& src, const Routine& tgt, const Application& app, const Limits& limits);

}  // namespace fp::verify
