#pragma once
// The block-skip lemma of the block fold (rewrites/online_softmax/block_fold.h, "SKIPS";
// docs/bounds.md §7 "Skipped blocks"): when every score of a key block is -inf, the fold's O(value
// cells) skip branch leaves the row state — max, sum and numerator — bit for bit as the computed
// block would. Proved once per (state, numerator, value) precisions with Z3's floating-point theory
// over every value (NaN, infinities and signed zeros included), exp uninterpreted but for its
// specified values, each query unsat:
//   max      max(x, -inf) = x (the block's max is the previous max; the term store's own rule)
//   floor    t0 = exp(-inf - fl), fl = max(m, LOWEST), is +0, or NaN exactly when fl is NaN
//   rescale  and then α = exp(max(m, LOWEST) - fl) is NaN too (so U·α is NaN on both sides)
//   sum      (0 + t0) + t0 = 0 + t0: the b cells' sum is 0 + t0 for every b >= 1
//   product  with t0 = +0 a cell's product t0·v is 0·v, a zero or NaN for every v
//   base     x + -0 = x (the numerator before the block's additions: x = U·α)
//   step     (x + Z) + P = x + (Z + P) for zeros-or-NaNs Z, P: by induction over the block's keys,
//            x + 0·v_1 + … + 0·v_b = x + Z_b with Z_b = -0 + 0·v_1 + … + 0·v_b
//   closed   Z + P is again a zero or NaN
// (the sum and numerator for every b by induction over the keys).

#include <optional>
#include <string>

#include "core/ir.h"
#include "verify/verdict.h"

namespace fp::verify {

struct SkipLemma {
  bool proved = false;
  std::string detail;  // the proof's sentence, or which query failed and why
};

// `value` empty: the sum's part alone (the max and sum queries), for l.
SkipLemma block_skip_lemma(Prec state, Prec numerator, std::optional<Prec> value, const Limits& limits);

}  // namespace fp::verify
