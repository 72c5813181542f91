// `search.block-fold-output`: the block fold's O (claim `fold-output`) against the composed
// (p / l)·v — a counterexample search against the bound docs/bounds.md §7 derives and
// verify/smt/fold_output_induction.cpp proves for every (n, b) (fold_output_bound):
// |O_fold - O_src| <= rel_z·Σ_j (|P̂_j| + kappa)·|v_j| + abs. The target is not yet tied to the
// fold's recurrence (no term identity for O) and no MPFR rows confirm it, so this checker never
// says `bounded`: a cell outside the bound is `refuted` with the case (no correct fold is outside
// it), none found is `unknown`.

#include <fmt/format.h>

#include <cmath>

#include "verify/bounds/bound_formula.h"
#include "verify/case_attach.h"
#include "verify/checkers/builtin.h"
#include "verify/downstream_bounds.h"
#include "verify/search.h"

namespace fp::verify {

namespace {

void search_fold_output(Verdict& v, const Task& t, const EngineOptions& o) {
  const Obligation& ob = t.obligation;
  auto unknown = [&](std::string why) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = std::move(why);
  };
  if (!ob.bound || ob.covers.empty() || ob.bound->block < 1 || t.app.statements.empty())
    return unknown(fmt::format("the claim {} of {} records no bound terms with a block size", ob.claim, t.shape));
  const BoundTerms& bt = *ob.bound;
  const std::string out = ob.covers[0].node;
  const Node* node = t.src.find_node(out);
  std::string p;
  for (const auto& [role, name] : t.app.matched)
    if (role == "p") p = name;
  const FoldOutputBound fb = fold_output_bound(bt.storage, bt.state, bt.terms, bt.block, o.limits.exp_ulp);
  if (!node || !t.tgt.find_node(out) || p.empty() || !fb.defined)
    return unknown(!fb.defined ? "no bound of the fold's output at these terms: " + fb.undefined_reason
                               : "no node " + out + " on both sides, or no probabilities matched");
  if (node->prec != bt.storage)
    return unknown(fmt::format("{} is stored at {}, not at the scores' precision {}: the bound assumes it is",
                               out, prec_name(node->prec), prec_name(bt.storage)));
  std::string why;
  const auto plan = scaled_reduction_plan(t.src, static_cast<std::size_t>(t.app.statements[0] - 1), fb.rel_z, fb.abs,
                                          &why, p, fb.kappa);
  if (!plan || plan->checks[0].node != out) return unknown("the source's value pass: " + why);
  const std::vector<std::string> watched = {out};
  const std::vector<std::string> kept = {out, plan->checks[0].scale_node};
  const Routine src_run = through_last_writer(instrument_source(t.src, {&*plan}, watched, false), kept);
  const Routine tgt_run = through_last_writer(with_outputs(t.tgt, watched, false), watched);
  PairRunner runner(src_run, tgt_run, plan->checks);
  v.steps.push_back(fmt::format(
      "bound searched against: |{0}_fold - {0}_src| <= {1:.3g}·Σ(|{5}| + {2:.3g})·|v| + {3:.3g} at n = {4}, b = "
      "{6} (docs/bounds.md §7; the formula proved for every n and b by the fold's output induction)",
      out, fb.rel_z, fb.kappa, fb.abs, bt.terms, p, bt.block));
  const int trials = scaled_search_trials(runner, o.limits.search_trials);
  if (auto found = search_counterexample(runner, trials, o.limits.seed)) {
    v.kind = VerdictKind::Refuted;
    v.message = "outside the bound: " + found->mismatch.text();
    v.steps.push_back(fmt::format("counterexample search: trial {} ({}) violates it", found->trial, found->family));
    attach_case(v, t, o, src_run, tgt_run, plan->checks, std::move(*found));
    return;
  }
  v.kind = VerdictKind::Unknown;
  v.reason = UnknownReason::Approximation;
  v.message = fmt::format(
      "the fold's {} is not certified yet: its bound is proved for every n and b (docs/bounds.md §7), but the target "
      "is not tied to the fold's recurrence and no MPFR rows confirm it; no counterexample in {} trials",
      out, trials);
}

}  // namespace

Checker block_fold_output_search_checker() {
  Checker c;
  c.id = "search.block-fold-output";
  c.description =
      "the block fold's O against the composed (p / l)·v: refuted when a counterexample exceeds the bound proved "
      "for every n and b (docs/bounds.md §7), else unknown (never bounded: the recurrence is not tied yet)";
  c.discharge = search_fold_output;
  return c;
}

}  // namespace fp::verify
