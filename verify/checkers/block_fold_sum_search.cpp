// `search.block-fold-sum`: the block fold's l (claim `fold-sum`) against the composed sum — a
// counterexample search only. docs/bounds.md §7 derives that the fold's l stays within shape 1's
// REL(n) of the composed sum at every block size; that derivation is on paper and the target is
// not identified as the fold's recurrence, so this checker never says `bounded`: a cell outside
// REL(n) on some input is `refuted` (with the case: no correct fold can be outside a valid bound),
// none found is `unknown`. The certified checker of issue 13 replaces it.

#include <fmt/format.h>

#include "core/interpreter.h"
#include "verify/bounds/bound_formula.h"
#include "verify/case_attach.h"
#include "verify/checkers/builtin.h"
#include "verify/search.h"

namespace fp::verify {

namespace {

void search_fold_sum(Verdict& v, const Task& t, const EngineOptions& o) {
  const Obligation& ob = t.obligation;
  if (!ob.bound || ob.covers.empty()) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = fmt::format("the claim {} of {} records no bound terms", ob.claim, t.shape);
    return;
  }
  const BoundTerms& bt = *ob.bound;
  const std::string l = ob.covers[0].node;
  const Node* node = t.src.find_node(l);
  const NormalizerBound nb = normalizer_bound(bt.storage, bt.state, bt.terms, o.limits.exp_ulp);
  if (!node || !t.tgt.find_node(l) || !nb.defined) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = !nb.defined ? "no bound: " + nb.undefined_reason : "no node " + l + " on both sides";
    return;
  }
  NodeCheck check;
  check.node = l;
  check.kind = NodeCheck::Kind::Relative;
  check.rel = nb.rel;
  check.prec = node->prec;
  const std::vector<NodeCheck> checks = {check};
  const Routine src_run = through_last_writer(with_outputs(t.src, {l}, false), {l});
  const Routine tgt_run = through_last_writer(with_outputs(t.tgt, {l}, false), {l});
  PairRunner runner(src_run, tgt_run, checks);
  v.steps.push_back(fmt::format("bound searched against: REL({}) = {:.3g} of shape 1 (docs/bounds.md §7: the fold's "
                                "l stays within it at every block size; a paper derivation)",
                                bt.terms, nb.rel));
  const int trials = scaled_search_trials(runner, o.limits.search_trials);
  if (auto found = search_counterexample(runner, trials, o.limits.seed)) {
    v.kind = VerdictKind::Refuted;
    v.message = "outside the bound: " + found->mismatch.text();
    v.steps.push_back(fmt::format("counterexample search: trial {} ({}) violates REL({})", found->trial,
                                  found->family, bt.terms));
    attach_case(v, t, o, src_run, tgt_run, checks, std::move(*found));
    return;
  }
  v.kind = VerdictKind::Unknown;
  v.reason = UnknownReason::Approximation;
  v.message = fmt::format(
      "no certified bound for the fold's {} yet (docs/bounds.md §7 is a paper derivation, and the target is not "
      "identified as the fold's recurrence); no counterexample to REL({}) = {:.3g} in {} trials",
      l, bt.terms, nb.rel, trials);
}

}  // namespace

Checker block_fold_sum_search_checker() {
  Checker c;
  c.id = "search.block-fold-sum";
  c.description =
      "the block fold's l against the composed sum: refuted when a counterexample exceeds REL(n), else unknown "
      "(never bounded)";
  c.discharge = search_fold_sum;
  return c;
}

}  // namespace fp::verify
