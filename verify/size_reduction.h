#pragma once
// Size reduction of a counterexample: shrinks the extents of a failing (source, target) pair so
// that the written case is as small as the bug allows (the issue's "fewest cells, smallest sizes,
// simplest values"; minimize_counterexample in verify/search.h then works on the cells).
//
// What a substitution V → v changes, in both routines alike (resize_routine):
//   - every node dim equal to V;
//   - every routine attr equal to V (seq_q, seq_k: they hold extents);
//   - the bounds of every `for` and `scan` that ranges over an axis of extent V (its symbol is a
//     node index ±sym + c on such an axis): a bound in the last three cells of the axis and past
//     its middle is counted from the end (to = V-1 → v-1, to = V-2 → v-2; a backward scan's
//     bounds alike); one near the start stays. A loop whose symbol indexes no node axis is
//     resized only when it is 0..V-1;
//   - on an axis of extent V, an index -sym + c or a fixed index c with c near the end as above
//     (a reversed loop's read V-1-t, the last cell V-1).
// Nothing else: constants (a mask length), embedded index values and indices near the start stay.
// So the resized pair is not the rewrite applied to a smaller program; it is the same pair with
// its extents substituted, and only the checker and a re-run say whether it still shows the bug.
//
// reduce_sizes keeps a substitution only when (1) both resized routines, and every companion
// (e.g. the pair as the case writes it), pass the well-formedness checker (core/checker.h), and the
// companions are faithful when the options say how to tell (the tier emits exactly the resized
// target for the resized source) — a rejected candidate is counted, never run — and (2) the
// resized pair still fails its checks:
// first on the failing inputs cropped to the new dims (the leading cells of each axis, then the
// trailing ones), else on a short search_counterexample at the new size. Extents are tried
// largest first, each with the candidates 1, 2, 3, 4, V/8, V/4, V/2 (smallest first, the first
// that fails is kept), and the passes repeat until none shrinks or the budget of interpreter runs
// is spent. Extents of different axes that are equal (or become equal) shrink together.
//
// Sound by construction: what it returns was run and fails (the unchanged pair and inputs when
// nothing shrinks); only how small it gets is heuristic. The checks are the original ones: a
// bound computed for the original sizes (n keys) is looser than the one for fewer keys, so a
// violation of it at the reduced size is a violation of the tighter bound too.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "verify/search.h"
#include "verify/task.h"
#include "verify/verdict.h"

namespace fp::verify {

// `r` with the extent V replaced by v as described above (not checked: run check_routine).
Routine resize_routine(const Routine& r, std::int64_t V, std::int64_t v);

struct SizeReductionOptions {
  int budget = 600;        // interpreter runs (pairs), crops and searches together
  int search_trials = 40;  // search_counterexample trials per candidate whose crops pass
  std::uint64_t seed = 1;  // the search's seed
  // When set, a candidate is kept only if its resized companions are faithful (for a tier task: the
  // resized target is exactly what the tier emits for the resized source, verify/task.h's reemit),
  // so a written case is an instance of the rewrite, not a substitution the tier would never make
  // (a target that hard-codes a block count and a tail, say).
  std::function<bool(const std::vector<Routine>& companions)> faithful;
};

struct SizeReduction {
  Routine src, tgt;                 // the pair the runner ran, at the reduced sizes
  std::vector<Routine> companions;  // the companions, resized alike (same order)
  Found found;                      // inputs on which (src, tgt) fails, and the mismatch
  // original extent → final extent, for each extent of the original routines that changed,
  // largest first.
  std::vector<ExtentReduction> extents;
  int runs = 0;                 // interpreter runs spent
  int rejected_by_checker = 0;  // candidates whose resized routines were not well formed
  int rejected_unfaithful = 0;  // candidates the tier would not emit (SizeReductionOptions::faithful)
  int tried = 0;                // candidates tried (each a substitution of one extent)

  bool reduced() const { return !extents.empty(); }
  // "64→2, 16→1"; empty when nothing shrank.
  std::string text() const;
};

// A small instance of a pair whose claim is proved for every extent, for the concrete
// cross-checks that follow the proof (a differential, a short search, a bitwise comparison): every
// extent above `cap` substituted by `cap`, largest first, each substitution kept only when both
// resized routines are well formed. What the instance's checks find is a fact about the same
// family of programs the all-sizes proof covers.
struct ShrunkPair {
  Routine src, tgt;
  std::vector<ExtentReduction> extents;  // empty: nothing above cap, or no substitution was well formed
};
ShrunkPair shrink_pair(const Routine& src, const Routine& tgt, std::int64_t cap);
// The cross-check instance: extents of 8, or of 4 when one run of the pair at 8 would take more
// than kCrossCheckInstanceWork scalar operations (a 24-layer training step).
inline constexpr double kCrossCheckInstanceWork = 2e6;
ShrunkPair cross_check_instance(const Routine& src, const Routine& tgt);

// The cross-check instance of a pair whose target hard-codes sizes (a count of blocks and the
// size of the last one): the source shrunk as above, and the target the rewrite emits for it
// (`emit`, a tier task's reemit) in place of a substitution the rewrite would never make; a
// candidate is kept only when the emitted target is well formed. `accept` may refuse an instance (one the all-sizes proof
// does not cover).
using EmitTarget = std::function<std::optional<Routine>(const Routine& src)>;
ShrunkPair faithful_cross_check_instance(const Routine& src, const Routine& tgt, const EmitTarget& emit,
                                         const std::function<bool(const ShrunkPair&)>& accept);
// The same for a pair whose source holds an earlier round's rewrite, which hard-codes its sizes
// too (a rewrite in a round after one that emitted blocks): the routine the tier ran on
// (`origin`) is shrunk instead, `reach` re-runs the tier's earlier rounds on it (a task's reach),
// `emit` makes the target.
ShrunkPair faithful_cross_check_instance(const Routine& origin, const EmitTarget& reach, const Routine& src,
                                         const Routine& tgt, const EmitTarget& emit,
                                         const std::function<bool(const ShrunkPair&)>& accept);

// A tier task's cross-check instance (`emit` the member's re-emission, `accept` whether a shrunk
// pair is still covered by the proof): the routine's own sizes unless the target is what the tier
// emits (emitted_by_tier); else shrunk through the routine the tier ran on when the task knows it
// (a source holding an earlier round's rewrite hard-codes sizes too), else through the source.
ShrunkPair tier_cross_check_instance(const Task& t, const EmitTarget& emit,
                                     const std::function<bool(const ShrunkPair&)>& accept);
// Whether the task's target is what the tier emits for its source (a planted or hand-edited target
// is cross-checked at its own sizes); asked once per application.
bool emitted_by_tier(const Task& t);

// Shrinks the extents of `runner`'s pair, which fails on `found.inputs`.
SizeReduction reduce_sizes(const PairRunner& runner, const Found& found, std::vector<Routine> companions,
                           const SizeReductionOptions& options = {});

}  // namespace fp::verify
