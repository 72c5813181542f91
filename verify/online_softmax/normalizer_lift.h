#pragma once
// The all-sizes proof of an online normalizer scan (online-softmax.normalizer-scan), independent
// of the rewrite's own matcher: it reads the source and the target as they are and argues over
// symbolic extents, so the sizes in the routines only instantiate the bound.
//
// Structure (checked on the IR; no extent's value is used):
//   - source and target declare the same nodes; the target's top-level statements are the
//     source's with the anchor replaced by one nest and three statements (the max's init, the
//     sum's init and the sum) deleted, every other statement identical;
//   - every index of every statement below is a plain loop symbol, each loop indexes an axis and
//     runs over the whole extent of every axis it indexes (0..extent-1, ascending), so in any
//     well-formed instance of the program, loops that index the same axis have the same trip
//     count, whatever the extents are;
//   - source: `m[rows] = -inf` over every cell of m; the anchor `m[rows] = max(m[rows], x[..])`
//     with exactly one loop t not indexing m and every loop indexing x once; `n = sub(x, m)`,
//     `e = exp(n)` pointwise; l zeroed (whole node or a 0 fill of every cell); the sum
//     `l[rows'] = add(l[rows'], e[..])` over t — each read at the cell the previous statement
//     wrote for the same (row, t), followed through the axes (never through symbol names); all
//     nodes and operations at one precision p;
//   - the census: m is written only by its init and the anchor and read by nothing before the
//     anchor; l is written only by its init and the sum and read by nothing before the sum; n and
//     e have one writer each; nothing writes x after the anchor; the order is
//     init < anchor < n < e < sum;
//   - target: the anchor's row loops around `scan t forward carry(mp -> mn : q = -inf,
//     lp -> ln : q = 0) { local xs : q; xs := x[..]; mn := max.q(mp, xs); ln := the recurrence;
//     m[rows] = mn; l[rows'] = where.q(eq.q(mn, -inf), nan, ln) }` at the same axes, q the state
//     precision of p (core/ir.h), the recurrence exactly as docs/bounds.md models it.
// Consequence, by induction over the steps of each row (for every extent ≥ 1): the target's m is
// the source's max fold (max is commutative and returns an operand or NaN, so folding the
// widened scores at q and storing back at p is the fold at p), bitwise; the target's l is the
// online recurrence over the same row of scores whose composed sum the source's l is — the
// statement the bound certificate's induction (verify/online_softmax/smt/induction.cpp) takes as its premise.

#include <string>
#include <vector>

#include "rewrites/application.h"

namespace fp::verify {

struct NormalizerLift {
  bool proved = false;
  std::string why_not;  // the first condition that failed
  std::vector<std::string> steps;
  std::string m, l;      // the max and sum nodes the proof covers
  std::int64_t row_terms = 0;  // the reduced axis' extent in these routines (n)
};

NormalizerLift lift_normalizer(const Routine& src, const Routine& tgt, const Application& app);

}  // namespace fp::verify
