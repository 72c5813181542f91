#pragma once
// The all-sizes proof of the fused backward's dV (online-softmax.fused-backward, claim
// `backward-dv`), independent of the rewrite's own matcher: it reads the source and the target as
// they are and argues over symbolic extents, so the sizes in the routines only fix where the blocks
// fall.
//
// Source (checked on the IR; every index of a node of the scores' shape a plain loop symbol over a
// whole axis, every read followed through the probabilities' axes): dV's one accumulation
// `G[c] = add(G[c], mul(P[..], X[..]))` (X the output gradient), under loops of which exactly one,
// the inner axis (from 0, n iterations), indexes P but not G; P's definition unfolded through
// single-writer pointwise nests of P's shape (each reads the next at the cell it defines; every
// other read is a leaf) down to `zero S` and the contraction S = Σ a·b; every link, S and P at one
// floating-point precision; the writers in order zero S < S < … < P < the accumulation.
//
// Target: the source's top-level statements kept in order (the consumed ones dropped, new ones
// inserted), one new statement writing G (the dV nest), and
//   - G written by no other new or consumed statement; the kept statements between the source's
//     accumulation and the nest touch neither G nor, between each leaf's read in the source and the
//     nest, that leaf; no leaf written by a consumed or new statement;
//   - the nest: G's row loops (over whole axes) around [row copies] `Tg[c, rows] = G[..]`, the
//     blocks, `G[..] = Tg[c, rows]`; the blocks `for ib in 0..NB-1 { block(B·ib, B) }` and, when
//     B does not divide n, the tail block(B·NB, R), R = n mod B, NB = n div B; each block over its
//     cells j (0..count-1) recomputes the pair's P in a tile T[j, ..] — T = 0, the contraction
//     (its row operand read from its copy), then every link of the line in order, each source
//     definition with the pair's indices and the previous link read from T — and adds
//     `Tg[c, rows] += T[j, ..]·X[pair]` for every c;
//   - a skip: the steps before a link `where(pred, T, fill)` (pred and fill not reading T) under
//     `if live`, live = pred at the block's cell where pred is true longest (pred an index
//     predicate monotone in j: the first cell if it can only fall, the last if it can only rise),
//     so a block where live is false has pred false at every cell and the where gives `fill`
//     whatever T held;
//   - the tiles the nest's own, every access of the nest within its node for every iteration.
// IEEE + and · commute exactly: operand order is not compared.
//
// Consequence (for every n >= 1, B >= 1 and every other extent): every cell of G adds, in the inner
// axis's order, each pair's product of the same P value, bit for bit, by the same X value — with
// the per-cell order of verify/online_softmax/fused_backward_order.h — so G is the source's, bit
// for bit.

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/online_softmax/claims.h"
#include "verify/verdict.h"

namespace fp::verify {

struct BackwardLift {
  bool proved = false;
  std::string why_not;  // the first condition that failed
  std::vector<std::string> steps;
  std::int64_t pairs = 0, block = 0;  // n and B in these routines
  bool tail = false, skips = false;
  std::int64_t keys = 0, width = 0;  // dQ, dK: the keys of a row and the value columns of the row dot
};

// `gradient` one of the application's dV, dQ and dK (`roles` as it names its nodes).
BackwardLift lift_fused_backward(const Routine& src, const Routine& tgt, const osm::BackwardRoles& roles,
                                 const std::string& gradient);

}  // namespace fp::verify
