#pragma once
// The bound's second confirmation (docs/bounds.md §5): property-based and adversarial rows of
// scores, each run through the composed normalizer and through its online-softmax rewrite (the
// tier's own output, on the interpreter), both compared against an MPFR reference of the exact
// sum S = Σ exp(x_t - max x) at >= 200 bits.
//
// Row families (every value representable at the storage precision): uniform, huge dynamic
// range, ties, -inf prefixes, near overflow (±max finite, x - m overflowing), near the lowest
// finite value, increasing runs (a new maximum at every key: the most rescales), increasing runs
// with step ~1 (the argument-rounding worst case), tiny and subnormal values, decreasing runs,
// small integers, rows with NaN / +inf (NaN positions only) and all -inf rows.

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"
#include "verify/verdict.h"

namespace fp::verify {

struct FamilyStats {
  std::string name;
  int rows = 0;
  double worst = 0;  // worst |l_tgt - l_src| / (REL |l_src|) in this family
};

struct MpfrReport {
  Prec storage = Prec::F32, state = Prec::F32;
  int rows = 0;          // rows checked
  int finite_rows = 0;   // rows with a finite l (the bound applies)
  int special_rows = 0;  // NaN rows: NaN positions compared
  int bits = 0;
  std::vector<std::int64_t> key_counts;  // the n values used
  int violations = 0;                    // rows exceeding a bound (REL, B_src or B_tgt)
  int nan_mismatches = 0;                // rows where exactly one side is NaN
  int max_mismatches = 0;                // rows where m differs bitwise (the exact claim)
  std::string first_violation;
  double worst_pair = 0;  // max |l_tgt - l_src| / (REL |l_src|): the tightness figure
  double worst_src = 0;   // max |l_src - S| / (B_src S)
  double worst_tgt = 0;   // max |l_tgt - S| / (B_tgt S)
  std::string worst_row;
  // With a block fold: its output O on the finite rows (one value column of signed values).
  int output_rows = 0;
  int output_violations = 0;  // rows outside fold_output_bound (or NaN in one side only)
  double worst_output = 0;    // max |O_fold - O_src| / (rel_z·Σ(|P̂| + κ)|v| + abs): O's tightness
  std::string worst_output_row;
  std::string first_output_violation;
  std::vector<FamilyStats> families;
  double seconds = 0;
};

// Checks normalizer_bound(storage, state_prec(storage), n, exp_ulp) on limits.mpfr_rows rows at
// limits.mpfr_bits bits, with key counts from a fixed ladder plus `n_focus` (when the bound is
// defined there). Deterministic in limits.seed. With `block` > 0 the rows run through the block
// fold instead (fold_rows_routine rewritten with online_softmax_block = block) against
// fold_bound(storage, state, n, min(block, n)).
MpfrReport mpfr_check_normalizer(Prec storage, std::int64_t n_focus, const Limits& limits, std::int64_t block = 0);

// The composed normalizer over `rows` rows of `n` keys at precision p (inputs x, outputs m and
// l): the shape online-softmax.normalizer-scan rewrites.
Routine normalizer_rows_routine(Prec p, std::int64_t rows, std::int64_t n);
// The composed attention over `rows` rows of `n` given scores at precision p, in the form the
// block fold matches: s = Σ_d one[i, d]·x[i, j, d] over one d (exactly x: one = 1), m, l
// (outputs), p = e / l, o = Σ_j p·v (one value column, v = 1).
Routine fold_rows_routine(Prec p, std::int64_t rows, std::int64_t n);

}  // namespace fp::verify
