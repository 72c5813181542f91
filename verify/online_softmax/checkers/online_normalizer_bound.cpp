// `certified-bound.online-normalizer`: an online (running max, rescaled running sum) recurrence
// against the composed max-then-sum: the target's row computation is proved to be the recurrence
// over the source's chain, the bound formula (docs/bounds.md) is proved for every n by induction
// (Z3 over the reals) and certified at the obligation's (storage, state, n) by per-pattern reals
// queries for small n and MPFR rows, and the interpreter differential checks the normalizer and
// everything downstream within their propagated bounds
// (verify/online_softmax/normalizer_check.h, verify/downstream_bounds.h). `certified-bound.block-fold-sum` is the
// same check for the block fold's l (docs/bounds.md §7: its recurrence in blocks, its induction).

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "core/ir_visit.h"

#include "rewrites/online_softmax/claims.h"
#include "verify/case_attach.h"
#include "verify/downstream_bounds.h"
#include "verify/online_softmax/bounds/normalizer_bound.h"
#include "verify/online_softmax/checkers/checkers.h"
#include "verify/online_softmax/normalizer_check.h"
#include "verify/verdict_cache.h"

namespace fp::verify {

namespace {

// All sizes when the recurrence holds for every extent and the formula for every n; the routine's
// size then only instantiates REL.
Scope scope_of(const BoundedCheck& bc, bool induction, int real_n, std::int64_t block) {
  const std::string reals = real_n > 0 ? fmt::format(" and n <= {} by the per-pattern reals queries", real_n) : "";
  if (bc.all_sizes && induction)
    return Scope{true, fmt::format("all sizes: the recurrence for every extent (structural), the bound formula for "
                                   "every n{} (induction: Z3 over the reals, under the rounding model and the exp "
                                   "assumption of docs/bounds.md); REL stated for n = {}{} (the formula confirmed by "
                                   "MPFR rows at the key counts the certificate lists{}), REL(n{}) of the "
                                   "formula at other sizes",
                                   block > 0 ? " and every block size b" : "", bc.bound.n,
                                   block > 0 ? fmt::format(", b = {}", block) : "", reals, block > 0 ? ", b" : "")};
  if (induction)
    return Scope{false, bc.scope + fmt::format("; the bound formula proved for every n{} by induction (Z3 over the "
                                               "reals, under the rounding model and the exp assumption of "
                                               "docs/bounds.md), checked at n = {} against the stated REL; "
                                               "confirmed by MPFR rows at the key counts the certificate lists{}",
                                               block > 0 ? " and every block size b" : "", bc.bound.n, reals)};
  return Scope{false, bc.scope + fmt::format("; the bound formula argued for every n on paper (docs/bounds.md), its "
                                             "induction not proved (see the certificate); certified for n = {} by "
                                             "MPFR rows and n <= {} over the reals",
                                             bc.bound.n, std::max(real_n, 3))};
}

void certify(Verdict& v, const Task& t, const EngineOptions& o) {
  const osm::SumTerms* terms = osm::sum_terms(t.obligation);
  if (!terms) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = fmt::format("no certifier for the bounded claim {} of {}: it records no bound terms",
                            t.obligation.claim, t.shape);
    return;
  }
  ProofCache cache = engine_cache(o);
  // A fold hard-codes its block count and tail: its cross-check instance is the tier's fold of a
  // shrunk source (fold_instance), not the pair with its extents substituted.
  std::function<ShrunkPair()> small;
  if (terms->block > 0) small = [&] { return fold_instance(t, o.limits); };
  BoundedCheck bc = check_normalizer_sum(t.src, t.tgt, t.app, t.obligation, o.limits,
                                         o.use_cache ? &cache : nullptr, dump_prefix(t, o), small);
  v.kind = bc.kind;
  v.reason = bc.reason;
  v.message = bc.message;
  v.steps.insert(v.steps.end(), bc.steps.begin(), bc.steps.end());
  bool induction = false;
  for (const auto& p : bc.bound.parts)
    if (p.name == "induction") induction = p.status == "proved";
  v.scope = scope_of(bc, induction, o.limits.real_n, terms->block);
  v.bound = bc.bound;
  if (bc.kind == VerdictKind::Refuted && bc.counterexample) {
    // The case is of the pair at the sizes the checks ran at (a small instance after the lift).
    const bool reduced = !equal(bc.case_src, t.src);
    Task shown = terms->block > 0 && reduced ? fold_instance_task(t, ShrunkPair{bc.case_src, bc.case_tgt, {{}}}) : t;
    shown.src = bc.case_src;
    shown.tgt = bc.case_tgt;
    attach_case(v, shown, o, bc.src_run, bc.tgt_run, bc.checks, std::move(*bc.counterexample));
  }
}

// The certified bound of the sum `terms` describe: the scan's, or the fold's in blocks.
NormalizerBound sum_bound(const osm::SumTerms& b, double exp_ulp) {
  return b.block > 0 ? fold_bound(b.storage, b.state, b.terms, b.block, exp_ulp)
                     : normalizer_bound(b.storage, b.state, b.terms, exp_ulp);
}

// The certified plan of the sum's claim: l within its REL, everything downstream of it within the
// bounds that REL propagates to (verify/downstream_bounds.h).
std::optional<DownstreamPlan> sum_plan(const Routine& src, const Application& app, const Obligation& ob,
                                       double exp_ulp, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<DownstreamPlan> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  const osm::SumTerms* terms = osm::sum_terms(ob);
  if (ob.kind != ObligationKind::Bounded || !terms || ob.covers.empty())
    return fail(fmt::format("{} is not a bounded claim with bound terms", ob.claim));
  const NormalizerBound nb = sum_bound(*terms, exp_ulp);
  if (!nb.defined) return fail("no certified bound: " + nb.undefined_reason);
  if (app.statements.empty()) return fail("the application names no anchor statement");
  const auto anchor_pos = static_cast<std::size_t>(app.statements[0] - 1);
  if (anchor_pos >= top_level_statements(src).size()) return fail("the anchor statement is out of range");
  // A fold's O is its own claim's (fold-output): nothing computed from it is bounded by l's REL.
  const std::vector<std::string> co_perturbed =
      terms->block > 0 ? std::vector<std::string>{osm::fold_roles(app).o} : std::vector<std::string>{};
  return plan_downstream(src, app.statements, anchor_pos, ob.covers[0].node, nb.rel, co_perturbed);
}

// The normalizer's certified REL carried through P = e / l and Σ P·v, or, where the formula has
// no certified form, 8·(n + 2)·u_state + 4·u_storage.
double stand_in(const Obligation& ob, double exp_ulp) {
  const osm::SumTerms* terms = osm::sum_terms(ob);
  const osm::SumTerms b = terms ? *terms : osm::SumTerms(0, Prec::F32, Prec::F32);
  const NormalizerBound nb = sum_bound(b, exp_ulp);
  if (!nb.defined)
    return 8.0 * static_cast<double>(b.terms + 2) * unit_roundoff(b.state) + 4.0 * unit_roundoff(b.storage);
  const double rp = quotient_perturbation(0.0, nb.rel, b.storage);
  return std::max(nb.rel, dot_perturbation(rp, b.terms, b.storage));
}

// A checker of this file: the certified check, its plan and its stand-in.
Checker certified_checker(std::string id, std::string description) {
  Checker c;
  c.id = std::move(id);
  c.description = std::move(description);
  c.discharge = certify;
  c.plan = sum_plan;
  c.stand_in_tolerance = stand_in;
  return c;
}

}  // namespace

// The block fold's l (claim `fold-sum`): the same certified check with the fold's recurrence, its
// induction for every (n, b) and its MPFR rows (docs/bounds.md §7).
Checker block_fold_sum_bound_checker() {
  return certified_checker(
      "certified-bound.block-fold-sum",
      "the block fold's l within the certified bound REL(n, b) of the composed sum: its recurrence for every extent "
      "(the fold's structural lift, else at the routine's sizes), the fold's induction for every n and b, MPFR rows "
      "through the fold");
}

Checker online_normalizer_bound_checker() {
  return certified_checker("certified-bound.online-normalizer",
                           "an online (max, rescaled sum) recurrence within the certified bound of the composed sum, "
                           "and its downstream nodes within their propagated bounds");
}

}  // namespace fp::verify
