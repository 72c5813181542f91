// `all-sizes-lift.block-fold`: the block fold's running max (claim `fold-max`) is the composed max
// reduction, bit for bit, for every extent — the structural proof of verify/online_softmax/
// fold_lift.h: the fold reads the same scores of each row in the same order, padded with -inf,
// which max leaves alone — then the bitwise check of a small instance the tier emits for a shrunk
// source (the fold hard-codes its block count and tail, so its extents are not substituted) as a
// cross-check (verify/checkers/exact_lift.h). Without the lift, the bitwise check at the routines'
// sizes.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rewrites/online_softmax/claims.h"
#include "verify/checkers/exact_lift.h"
#include "verify/online_softmax/checkers/checkers.h"
#include "verify/online_softmax/fold_lift.h"
#include "verify/program_equality.h"
#include "verify/routine_pair_memo.h"
#include "verify/size_reduction.h"

namespace fp::verify {

// The instance the fold lifts' cross-checks run on: the tier's fold of a shrunk source, in blocks
// of at most kInstanceBlock keys so that it has several blocks (and, at 4 or 8 keys, a tail) —
// covered by the lift too; the routine's own sizes when the task cannot re-emit (a hand-written
// pair), its target is not what the tier emits, or no instance is lifted.
constexpr std::int64_t kInstanceBlock = 3;

EmitTarget fold_instance_emit(const Task& t) {
  if (!t.reemit_with) return nullptr;
  const osm::SumTerms* terms = osm::sum_terms(t.obligation);
  const std::int64_t block = std::min<std::int64_t>(terms && terms->block > 0 ? terms->block : kInstanceBlock,
                                                    kInstanceBlock);
  const Task::Settings settings = {{std::string(osm::kBlockKey), std::to_string(block)}};
  return [reemit = t.reemit_with, settings](const Routine& s) { return reemit(s, settings); };
}

ShrunkPair fold_instance(const Task& t, const Limits& limits) {
  const EmitTarget emit = fold_instance_emit(t);
  if (!emit) return ShrunkPair{t.src, t.tgt, {}};
  // The application's three claims share one instance, kept per process for the application and
  // the block.
  static RoutinePairMemo<ShrunkPair> memo(1024);
  const osm::SumTerms* terms = osm::sum_terms(t.obligation);
  const std::string key =
      fmt::format("{}|{}|{}", fmt::join(t.app.statements, ","), terms ? terms->block : 0, limits.rlimit);
  if (std::optional<ShrunkPair> known = memo.find(t.src, t.tgt, key)) return *known;
  const ShrunkPair small = tier_cross_check_instance(
      t, emit, [&](const ShrunkPair& p) { return lift_fold(p.src, p.tgt, t.app, limits).proved; });
  memo.put(t.src, t.tgt, key, small);
  return small;
}

Task fold_instance_task(const Task& t, const ShrunkPair& instance) {
  Task out = t;
  out.src = instance.src;
  out.tgt = instance.tgt;
  if (!instance.extents.empty()) out.reemit = fold_instance_emit(t);
  return out;
}

Checker block_fold_max_lift_checker() {
  return exact_lift_checker(
      "all-sizes-lift.block-fold",
      "the block fold's running max is the composed max reduction, bit for bit, for every extent, plus the bitwise "
      "check of a small instance the tier emits",
      [](const Task& t, const EngineOptions& o) {
        const FoldLift lift = lift_fold(t.src, t.tgt, t.app, o.limits);
        const bool covers_m = t.obligation.covers.size() == 1 && t.obligation.covers[0].node == lift.m;
        ExactLift out{lift.proved && lift.m_stored && covers_m,
                      lift.proved && !covers_m ? "the claim does not cover the fold's row max" : lift.why_not,
                      lift.steps,
                      "the fold takes the maxima of the same scores of each row in the same order, its padding -inf, "
                      "for every extent (structural, over symbolic extents)",
                      std::nullopt};
        if (out.proved) out.instance = fold_instance(t, o.limits);
        return out;
      });
}

}  // namespace fp::verify
