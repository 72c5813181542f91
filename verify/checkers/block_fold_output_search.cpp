// `search.block-fold-output`: the block fold's O (claim `fold-output`) against the composed
// (p / l)·v — a counterexample search only. docs/bounds.md §7 derives, on paper, a bound on
// |O_fold - O_src| relative to Σ_j |P̂_j·v_j| (the magnitude the value pass's checks already use);
// that derivation is not machine-checked, so this checker never says `bounded`: a cell outside
// twice the derived bound (a margin against slips in the paper argument: a correct fold must not
// be refuted) on some input is `refuted` with the case, none found is `unknown`.

#include <fmt/format.h>

#include <cmath>

#include "verify/bounds/bound_formula.h"
#include "verify/case_attach.h"
#include "verify/checkers/builtin.h"
#include "verify/downstream_bounds.h"
#include "verify/search.h"

namespace fp::verify {

namespace {

using LD = long double;

// -ln of p's smallest subnormal: a key further below the maximum has a subnormal weight on both
// sides (docs/bounds.md §7, D_t).
LD subnormal_depth(Prec p) {
  const int e = p == Prec::F64 ? 1074 : p == Prec::F16 ? 24 : 149;
  return static_cast<LD>(e) * std::log(2.0L);
}

// Twice §7's pair bound on |O_fold - O_src| / Σ|P̂·v|, plus the final store's rounding; infinity
// when the normalizer bounds are undefined.
double output_search_rel(const BoundTerms& bt, double exp_ulp) {
  const NormalizerBound nb = fold_bound(bt.storage, bt.state, bt.terms, bt.block, exp_ulp);
  if (!nb.defined) return INFINITY;
  const LD ut = unit_roundoff(bt.state), us = unit_roundoff(bt.storage);
  const LD et = exp_error(bt.state, exp_ulp), es = exp_error(bt.storage, exp_ulp);
  const LD n = static_cast<LD>(bt.terms), b = static_cast<LD>(bt.block);
  const LD K = std::ceil(n / b);
  const LD psi = std::pow(1 + et, K) * std::pow(1 + ut, K * (b + 1)) - 1;
  const LD lam_t = std::expm1(ut * subnormal_depth(bt.state)), lam_s = std::expm1(us * subnormal_depth(bt.storage));
  const LD bt_ = nb.b_tgt, bs = nb.b_src;
  if (bt_ >= 1 || bs >= 1 || n * us >= 1) return INFINITY;
  const LD coef_fold = (((1 + lam_t) * (1 + psi) - 1) * (1 + ut) + ut + bt_) / (1 - bt_);
  const LD pi_s = (1 + lam_s) * (1 + es) * (1 + us) / (1 - bs) - 1;
  const LD gamma_n = n * us / (1 - n * us);
  const LD coef_src = pi_s + gamma_n * (1 + pi_s);
  if (pi_s >= 1) return INFINITY;
  return static_cast<double>(2 * ((coef_fold + coef_src) / (1 - pi_s) + 2 * us));
}

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
  const double rel = output_search_rel(bt, o.limits.exp_ulp);
  if (!node || !t.tgt.find_node(out) || !std::isfinite(rel))
    return unknown(!std::isfinite(rel) ? "no bound of the fold's output at these terms (docs/bounds.md §7)"
                                       : "no node " + out + " on both sides");
  // Subnormal results: a few absolute ω per contribution on each side.
  const double abs = 8 * static_cast<double>(bt.terms + 2) * model_underflow(node->prec);
  std::string why;
  const auto plan =
      scaled_reduction_plan(t.src, static_cast<std::size_t>(t.app.statements[0] - 1), rel, abs, &why);
  if (!plan || plan->checks[0].node != out) return unknown("the source's value pass: " + why);
  const std::vector<std::string> watched = {out};
  const std::vector<std::string> kept = {out, plan->checks[0].scale_node};
  const Routine src_run = through_last_writer(instrument_source(t.src, {&*plan}, watched, false), kept);
  const Routine tgt_run = through_last_writer(with_outputs(t.tgt, watched, false), watched);
  PairRunner runner(src_run, tgt_run, plan->checks);
  v.steps.push_back(fmt::format(
      "bound searched against: |{0}_fold - {0}_src| <= {1:.3g}·Σ|p·v| + {2:.3g} (twice docs/bounds.md §7's paper "
      "bound at n = {3}, b = {4}; not machine-checked)",
      out, rel, abs, bt.terms, bt.block));
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
      "no certified bound for the fold's {} yet (docs/bounds.md §7 derives one on paper; no induction proves it); no "
      "counterexample to twice that bound ({:.3g}·Σ|p·v|) in {} trials",
      out, rel, trials);
}

}  // namespace

Checker block_fold_output_search_checker() {
  Checker c;
  c.id = "search.block-fold-output";
  c.description =
      "the block fold's O against the composed (p / l)·v: refuted when a counterexample exceeds twice the paper "
      "bound of docs/bounds.md §7, else unknown (never bounded)";
  c.discharge = search_fold_output;
  return c;
}

}  // namespace fp::verify
