#pragma once
// The all-sizes proof of the fused backward (online-softmax.fused-backward): dV bit for bit (claim
// `backward-dv`), and dQ, dK the fused form over the source's composed one (claims `backward-dq`,
// `backward-dk`, whose bound docs/bounds.md §8 proves for every size) — independent of the
// rewrite's own matcher: it reads the source and the target as they are and argues over symbolic
// extents, so the sizes in the routines only fix where the blocks fall.
//
// Source (checked on the IR; every index of a node of the scores' shape a plain loop symbol over a
// whole axis, every read followed through the scores' axes): the gradient's one accumulation
// `G[c] = add(G[c], mul(Y[..], X[..]))` under loops of which exactly one, the inner axis (from 0,
// n iterations), indexes Y but not G — Y = P for dV, the score gradient for dQ and dK; P's
// definition unfolded through single-writer pointwise nests of P's shape (each reads the next at
// the cell it defines; every other read is a leaf) down to `zero S` and the contraction S = Σ a·b;
// for dQ and dK also the composed score gradient under Y: links `zero N; N += f(prev)` (f one of
// prev, where(pred, prev, 0), prev·c; one scale at most) down to ng += eg·e (e P's exponentials,
// P = e / l), eg = `zero`, += dP / l, += lg, lg = `zero`, += dP·(−e / (l·l)) over the key axis, dP a
// contraction; one floating-point precision; each writer before its reader; e and l unchanged from
// P to ng.
//
// Target: the source's top-level statements kept in order (the consumed ones dropped, new ones
// inserted), one new statement writing G (the nest), and
//   - G written by no other new or consumed statement; every node the nest reads (and the row dot
//     reads) holds what the source read: only kept statements write it, and none between the
//     source's read and the target's; no kept statement the nest moved across touches G;
//   - the nest: G's row loops (over whole axes) around [row copies] `Tg[c, rows] = G[..]`, the
//     blocks `for ib in 0..NB-1 { block(B·ib, B) }` and, when B does not divide n, the tail
//     block(B·NB, R), R = n mod B, NB = n div B, then `G[..] = Tg[c, rows]`; each block over its
//     cells j (0..count-1) recomputes the pair's P in a tile T[j, ..] — T = 0, the contraction (its
//     row operand read from its copy), every link of the line as the source defines it at the pair
//     — and, for dQ and dK, dP in its tile the same way, ds = p·(dP − D[row]) and the source's
//     links with their own cell read as 0; then `Tg[c, rows] += Y·X[pair]` for every c;
//   - D written by one new statement before the nest: D[rows] = Σ_e dO·O from 0 through a local,
//     over exactly the output-gradient row the pair's dP reads, O as the source ends with it;
//   - a skip: the steps before a where(pred, T, fill) of P's line (or a link 0 + where(pred, ds, 0))
//     under `if live`, live = pred at the block's cell where it is true longest (pred an index
//     predicate monotone in j: the first cell if it can only fall, the last if it can only rise),
//     so a block where live is false has pred false at every cell and the where gives its fill
//     whatever the tiles held;
//   - the tiles the nest's own, every access of the nest within its node for every iteration.
// IEEE + and · commute exactly: operand order is not compared.
//
// Consequence (for every n >= 1, B >= 1 and every other extent): every cell of G adds, in the inner
// axis's order (verify/online_softmax/fused_backward_order.h proves it for every block count), each
// pair's product of the same operand by — for dV — the source's P, bit for bit, so G is the
// source's bit for bit; — for dQ and dK — the fused form over the source's e, l, dP, dO and O, which
// is what the bound of docs/bounds.md §8 is about. Scope: one precision (at f16 and bf16 the tier
// computes ds at f32: refused, left to the term identity at the routine's sizes).

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
