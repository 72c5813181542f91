#pragma once
// Shape 1 of online softmax — the scan normalizer (id online-softmax.normalizer-scan).
//
// MATCHES, over one reduced axis (nests are `for* -> set`, related only through the axes of the
// nodes they share — axis_roles.h — never through loop symbol names):
//   a_init  m[rows] = -inf                       fill nest covering exactly the max's cells
//   a       m[rows] = max(m[rows], x[.., t, ..])  the anchor: exactly one loop (t) not indexing m
//   n_pos   n[..] = sub(x[..], m[..])             pointwise, n's only writer
//   e_pos   e[..] = exp(n[..])                    pointwise, e's only writer
//   c_init  zero l   |  l[rows'] = 0              whole-node zero-out or a fill of the sum's cells
//   c       l[rows'] = add(l[rows'], e[..])       sum over t; rows' is a permutation of the rows
// Every pair of candidates (n, e, sum) off the anchor is tried in program order and the first
// complete one wins, so a side chain (a second x - m, an exp that never reaches a sum) does not
// hide the real one.
//
// EMITS at a: the max nest's row loops (same symbols, ranges, order) around
//   scan t in <t range> forward carry(mp -> mn : SP = -inf:SP, lp -> ln : SP = 0:SP) {
//     local xs : SP;  xs := x[..]                           -- the score read once per step
//     mn := max.SP(mp, xs)
//     ln := add.SP(mul.SP(lp, exp.SP(sub.SP(max.SP(mp, LOWEST), max.SP(mn, LOWEST)))),
//                  exp.SP(sub.SP(xs, max.SP(mn, LOWEST))))
//     m[rows] = mn                                          -- both trajectories, every step,
//     l[rows'] = where.SP(eq.SP(mn, -inf:SP), nan:SP, ln)   -- so downstream readers see them
//   }
// and deletes a_init, c_init and c. n and e stay as the definitions of their nodes. SP is the
// state precision (f32 for f16/bf16/f32 scores, f64 for f64) and LOWEST its lowest finite value.
// The update has no comparison: flooring both maxima at LOWEST makes a masked (-inf) prefix
// rescale by exp(0) = 1 on a zero sum, and the first live score rescale it by exp(LOWEST - x) = 0;
// a NaN score poisons the row through max and exp as in the composed form. The one comparison
// decides only what a row with no live score yet STORES: NaN, the composed form's value for an
// all -inf row, while the carried state stays 0. Minted local names derive from m, l and x and
// are unique in the routine.
//
// CLAIMS: exact `normalizer-max` — m equals the composed max bitwise (same maxima, same order);
// bounded `normalizer-sum` — l is the composed sum of exp(x - m) reassociated into a running
// rescaled sum of T terms carried at SP (storage precision of l, state SP), NaN exactly where the
// composed form has NaN.
//
// DECLINES (the routine is left exactly as it was; code in brackets):
//   [dead-loop]             a nest of the match has a loop that runs zero times
//   [partial-loop]          a loop does not start at 0 or does not cover its node's full extent
//   [non-plain-index]       the max stores m or reads x at an index that is not a plain
//                           iterator or a fixed index, or uses a symbol twice
//   [multiple-reduced-axes] more than one loop of the max does not index m
//   [scores-not-reduced]    x is not indexed by the reduced loop
//   [no-sum-chain]          no x - m -> exp -> sum chain hangs off the max
//   [index-mismatch]        a chain nest reads or writes at indices that do not follow the max's
//                           axes (or has a loop indexing none of them)
//   [non-float-chain]       any of m, l, x, n, e is not floating point
//   [chain-precision-mismatch] a node or operation of the chain is not at the scores' precision
//   [extra-writer]          n or e has more than one writer, or m or l a writer outside the match
//   [no-max-init]           m is not set to -inf, cell-wise over the max's cells, before the max
//   [no-sum-init]           l is not zeroed (whole node or cell-wise 0 fill) before the sum
//   [zero-out-too-wide]     a whole-node zero-out of l covers more cells than the sum writes
//   [program-order]         not max < n < e < sum in program order
//   [x-written-after-max]   anything writes x after the max
//   [m-read-before-max]     anything reads m between its init and the max
//   [l-read-before-sum]     anything reads l between its zero-out (or the max, if earlier) and
//                           the sum
// The census behind the last three sees into guards, loops, scans and locals (routine_view.h).

#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "rewrites/name_minter.h"
#include "rewrites/online_softmax/claims.h"
#include "rewrites/online_softmax/routine_view.h"

namespace fp::osm {

struct Normalizer {
  int a_init = -1, a = -1, n_pos = -1, e_pos = -1, c_init = -1, c = -1;
  std::string x, m, n, e, l;
  Prec score_prec = Prec::F32;
  std::vector<NestLoop> rows;  // the max nest's loops other than t, in order
  NestLoop t;
  std::vector<Index> m_idcs, x_idcs, l_idcs;  // in the max nest's symbols
};

struct NormalizerSearch {
  std::vector<Normalizer> found;
  // member, shape, statement, line, code and sentence set; round left 0 for the caller.
  std::vector<Decline> declines;
};

// Every normalizer in the routine, one per matching max reduction, and one decline per max
// reduction that did not match.
NormalizerSearch find_normalizers(const RoutineView& view);

// The statement replacing the max nest.
StmtP emit_normalizer_scan(const Normalizer& nz, NameMinter& names);

// The record of one application (positions 1-based; round left 0).
Application normalizer_application(const Normalizer& nz, const RoutineView& view, const Stmt& emitted);

}  // namespace fp::osm
