#pragma once
// Shape 4 of online softmax — the block fold, FlashAttention-2's recurrence (id
// online-softmax.block-fold). Gate: `online_softmax` on and `online_softmax_block` = B > 0, or `auto`
// (kAutoFoldBlock).
//
// MATCHES, per normalizer that shape 1 recognized (normalizer_scan.h: m = max x, n = x - m,
// e = exp n, l = sum e over the key axis t):
//   P       P[..] = div(e[..], l[..])           P's only writer, pointwise, at e's cells
//   z_o     zero O
//   f_at    O[..] = add(O[..], mul(P[..], v[..]))  the value pass (either operand order), reading
//           P directly; its other loops (the value axes) index O as plain iterators
//   chain   x's definition unfolded through single-writer pointwise nests storing whole nodes of
//           x's shape, each read at the cell it defines (the scale, the mask's where), down to
//   S       the score contraction: `zero S` and one nest S[..] = add(S[..], mul(a[..], b[..]))
//           writing every cell of S (the other chain reads — a mask tensor — are leaves).
//
// EMITS at f_at, around the max's row loops (same symbols and ranges), with bk = min(B, sk) and
// nkb = ceil(sk / bk) blocks, minted tiles with the row axes last — T[j, rows] (bk cells per row,
// the state precision SP), U[e, rows] (one cell per value-axis cell, the wider of SP and O's state
// precision) and Q[d, rows] (the contraction's operand that does not depend on the key, at its
// own precision: a copy); below, T[j], U[e] and Q[d] are the current row's cells — and one scan
// per row:
//   Q[:] = a[row, :]                                   the row operand, copied (rows last)
//   U[:] = 0;  T[:] = 0
//   scan tb in 0..nkb-1 carry (mp -> mn = -inf, lp -> ln = 0) {
//     [tail] T[j] = -inf for every j                     padding: zero weight, never a zero score
//     for j [tail: if bk·tb + j < sk] {                        the block's scores, computed as composed:
//       T[j] = 0; T[j] += Q·b over the contraction's loops; T[j] = chain(T[j]) }
//                                     (without a tail: three loops over j, the contraction one nest)
//     mn := max(…max(mp, T[0])…, T[bk-1])           the same maxima in the same order
//     fl := max(mn, LOWEST);  α := exp(max(mp, LOWEST) - fl)   shape 1's floors
//     T[j] = exp(T[j] - fl);  ln := lp·α + Σ_j T[j]
//     U[e] = U[e]·α;  U[e] += T[j]·v[.., bk·tb + j, e]  [tail-guarded]
//     [m live] m = mn;  [l live] l = where(mn == -inf, NaN, ln)  (every block)
//     if tb == nkb - 1: O[row, e] = U[e] / where(mn == -inf, NaN, ln)
//   }
// followed by the live definitions reading the row state (n, e, P, … read after the fold: a
// training step's backward), moved there unchanged. Removed: the max and its -inf fill, the sum
// and its zero-out, zero O, the value pass, the dead row-state definitions, and the score chain
// (S's zero and contraction, the pointwise chain) where nothing else reads it.
//
// SKIPS (fully masked key blocks), when x's definition is where(pred, ·, -inf) with pred an i32
// predicate of the indices that can only turn from true to false as the key grows inside a block
// (lt of affine indices whose difference grows with the key, and max / min of such: causal,
// padding and prefix masks): live := pred at the block's first key. Then
//   Z[tb, e, v's row axes] = -0 + 0·v[.., bk·tb + j, e] over the block's keys  (once, before the rows)
//   and per block:  if live { the block as above, its max and sum into locals }
//                   if live == 0 { max := mp; fl, α as above; sum := 0 + exp(-inf - fl);
//                                  ln := lp·α + sum; U[e] = U[e]·α + Z[tb, e] }
//   then mn := max, ln := sum (the carried values, at the scan body's top level).
// A block with no live key has all its scores -inf, and then the skip branch's state is the
// computed block's bit for bit (NaN, infinities and signed zeros included: verify/
// block_skip_lemma.h), in O(value cells) instead of the block's contractions and exponentials. No
// skip for any other mask (a finite or NaN fill, a mask tensor, live keys that are not a prefix).
//
// CLAIMS: exact `fold-max` (m, when it lands: the same maxima in the same order — padded cells are
// -inf, which max leaves alone); bounded `fold-sum` (l: shape 1's recurrence, block by block;
// certified: docs/bounds.md §7's induction for every n and b) and `fold-output` (O: the value
// contraction reassociated, (Σ p·v)/l block by block instead of Σ (p/l)·v; certified per cell
// relative to Σ(|p| + κ)|v|: docs/bounds.md §7 "O").
//
// DECLINES (that normalizer keeps the two-pass form, shapes 1-2; code in brackets):
//   [no-value-pass]           no reduction of P·v reads the normalizer's probabilities
//   [value-pass-not-direct]   the value pass reads probabilities that are not e / l directly (a
//                             dropout-like step in between)
//   [value-pass-shape]        the value pass has a loop that neither follows P's axes nor indexes
//                             O as a plain iterator over its full extent, or stores O at another
//                             index
//   [output-slice]            the value pass does not write every cell of O (a slice of O)
//   [output-read]             O is an input, or read between its zero-out and the value pass, or
//                             not zeroed right before it
//   [scores-not-contraction]  x's chain does not end at one contraction of two reads, or a chain
//                             node has another writer, another shape, or is read at another cell
//   [precision-mismatch]      the contraction, the probabilities or O are not floating point, or
//                             the score node's precision is not x's
//   [input-written-in-span]   a node the fold reads (a, b, v, chain leaves) is written between
//                             its first composed read and the value pass
//   [row-state-reader]        a definition reading the row state cannot be moved behind the fold
//                             (not a single-writer pointwise nest, or it reads a node written in
//                             between)
//   [tile-too-large]          a row's score and numerator tiles exceed the local budget
//                             (kFoldTileBudget bytes)

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "rewrites/name_minter.h"
#include "rewrites/online_softmax/normalizer_scan.h"
#include "rewrites/online_softmax/routine_view.h"

namespace fp::osm {

inline constexpr std::int64_t kFoldTileBudget = 64 * 1024;
// online_softmax_block = auto: the fastest B of the CPU sweep (flat for B >= 64, slower below).
inline constexpr std::int64_t kAutoFoldBlock = 64;

struct FoldMatch;  // block_fold.cpp

struct FoldPlan {
  std::shared_ptr<const FoldMatch> match;
  // Statements the fold consumes (0-based positions): deleted, except f_at which gets the fold.
  std::vector<int> consumed;
  int f_at = -1;
  // Nodes the consumed statements wrote (the score chain, the row state, the probabilities): the
  // member drops the declarations nothing mentions any more.
  std::vector<std::string> consumed_nodes;
};

// The fold of `nz` with block size `block` (> 0), or a Decline (round 0) saying why not.
std::variant<FoldPlan, Decline> match_fold(const RoutineView& view, const Normalizer& nz, std::int64_t block);

// The statements replacing f_at (the fold, then the moved definitions), and the tiles to declare.
struct FoldEmission {
  std::vector<StmtP> stmts;
  std::vector<Node> tiles;
  bool skips = false;   // fully masked blocks are skipped (SKIPS)
  std::string no_skip;  // why a masked fold skips nothing (empty: skips, or no mask)
};
FoldEmission emit_fold(const FoldPlan& plan, const RoutineView& view, NameMinter& names);

Application fold_application(const FoldPlan& plan, const RoutineView& view, const FoldEmission& emitted);

}  // namespace fp::osm
