// `certified-bound.block-fold-output`: the block fold's O (claim `fold-output`) against the
// composed (p / l)·v, per output cell: |O_fold - O_src| <= rel_z·Σ_j (|P̂_j| + κ)·|v_j| + abs
// (docs/bounds.md §7 "O"). `bounded` needs (i) the target's O tied to the fold's numerator
// recurrence — for every extent by the fold's structural lift (fold_lift.h; the checks then run on
// a small instance the tier emits, against its own bound), else by term identity at the routine's
// sizes (normalizer_check.h fold_output_identity),
// (ii) the fold's certificate — its induction for every n and b (l's and O's queries) and the MPFR
// rows through the fold, O included — and (iii) the interpreter differential and the adversarial
// search inside the bound. A cell outside the bound is `refuted` with the case; a target that is
// not the recurrence, or an incomplete certificate, is `unknown`.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/random_inputs.h"
#include "rewrites/online_softmax/claims.h"

#include "verify/case_attach.h"
#include "verify/downstream_bounds.h"
#include "verify/online_softmax/bounds/normalizer_bound.h"
#include "verify/online_softmax/checkers/checkers.h"
#include "verify/online_softmax/fold_lift.h"
#include "verify/online_softmax/normalizer_check.h"
#include "verify/search.h"
#include "verify/verdict_cache.h"

namespace fp::verify {

namespace {

// The fold's partial numerators can overflow where O does not, and the bound holds in the absence
// of overflow (docs/bounds.md §4, §7): a one-sided infinity is outside its hypothesis when an
// intermediate numerator could reach the threshold. Against the running maximum each exponential is
// at most 1 (rounding aside), so a partial numerator is at most about Σ|v| over the row — not
// l·Σ|p·v|: before the maximum rises, keys the final maximum makes negligible weigh 1 — and the
// per-cell magnitude Σ(|P̂| + κ)|v| is at least κ·Σ|v|. The headroom is max(n, 1/κ), doubled for
// the exponentials' and the sums' rounding (n·u_state < 1/2 wherever the bound is defined)
// (NodeCheck::overflow_headroom). `flashproof fuzz rewrite` found the 1/κ case: f64, two keys of
// v = 1.8e308 weighing 5.5e-4 each in O but 1 each in the numerator until a masked score of 7.5
// raised the maximum.
void with_numerator_headroom(DownstreamPlan& plan, std::int64_t keys, double kappa) {
  const double n = static_cast<double>(std::max<std::int64_t>(keys, 1));
  const double headroom = 2 * (kappa > 0 ? std::max(n, 1 / kappa) : n);
  for (NodeCheck& c : plan.checks) c.overflow_headroom = headroom;
}

std::string fraction(double v) {
  return fmt::format("{:.3g}", v);
}

void certify_fold_output(Verdict& v, const Task& t, const EngineOptions& o) {
  const Obligation& ob = t.obligation;
  auto unknown = [&](UnknownReason r, std::string why) {
    v.kind = VerdictKind::Unknown;
    v.reason = r;
    v.message = std::move(why);
  };
  const osm::SumTerms* terms = osm::sum_terms(ob);
  if (!terms || ob.covers.empty() || terms->block < 1 || t.app.statements.empty())
    return unknown(UnknownReason::Unsupported,
                   fmt::format("the claim {} of {} records no bound terms with a block size", ob.claim, t.shape));
  const osm::SumTerms& bt = *terms;
  const std::string out = ob.covers[0].node;
  const Node* node = t.src.find_node(out);
  const std::string p = osm::fold_roles(t.app).p;
  const FoldOutputBound fb = fold_output_bound(bt.storage, bt.state, bt.terms, bt.block, o.limits.exp_ulp);
  if (!node || !t.tgt.find_node(out) || p.empty() || !fb.defined)
    return unknown(UnknownReason::Unsupported,
                   !fb.defined ? "no bound of the fold's output at these terms: " + fb.undefined_reason
                               : "no node " + out + " on both sides, or no probabilities matched");
  if (node->prec != bt.storage)
    return unknown(UnknownReason::Unsupported,
                   fmt::format("{} is stored at {}, not at the scores' precision {}: the bound assumes it is", out,
                               prec_name(node->prec), prec_name(bt.storage)));
  BoundInfo bi;
  bi.formula =
      "|O_fold - O_src| <= rel_z·Σ_j (|P̂_j| + κ)·|v_j| + abs per output cell (docs/bounds.md §7 \"O\": the "
      "numerator's invariant through K = ceil(n/b) blocks of a rescale and b additions, the closing through O = U / "
      "L, the composed probabilities and value pass)";
  bi.instantiated = fmt::format("n = {}, b = {}, storage {}, state {}: rel_z = {:.6g}, κ = {:.6g}, abs = {:.3g}",
                                bt.terms, bt.block, prec_name(bt.storage), prec_name(bt.state), fb.rel_z, fb.kappa,
                                fb.abs);
  bi.value = fb.rel_z;
  bi.relative_to = fmt::format("Σ(|{}| + κ)·|v|", p);
  bi.n = bt.terms;
  bi.exp_assumption = exp_assumption_text(o.limits.exp_ulp);
  v.steps.push_back("bound: " + bi.instantiated);
  // (i) the recurrence: for every extent by the fold's structural lift (fold_lift.h), else by term
  // identity at the routine's sizes.
  const FoldLift lift = lift_fold(t.src, t.tgt, t.app, o.limits);
  const bool all_sizes = lift.proved && lift.o == out && lift.keys == bt.terms && lift.block == bt.block;
  RecurrenceCheck id;
  if (all_sizes) {
    id.proved = true;
    id.detail = fmt::format("(i) recurrence: for every extent, {} is the fold's numerator over its norm, the block "
                            "fold (blocks of {}) of the composed value pass's row of scores: {}",
                            out, bt.block, fmt::join(lift.steps, "; "));
  } else {
    if (!lift.why_not.empty() || lift.proved)
      v.steps.push_back("the structural lift does not hold (" +
                        (lift.proved ? fmt::format("the fold's output is not {} over {} keys in blocks of {}", out,
                                                   bt.terms, bt.block)
                                     : lift.why_not) +
                        "); the recurrence is checked at the routine's sizes");
    id = fold_output_identity(t.src, t.tgt, t.app, bt, out, p, o.limits);
  }
  v.steps.push_back(id.proved ? id.detail : "(i) recurrence not established: " + id.detail);
  bi.parts.push_back(CertificatePart{"(i) recurrence", id.proved ? "proved" : "failed", id.detail});
  // (iii) differential and search, on a small instance of the family when the recurrence holds for
  // every extent (the tier's fold of a shrunk source, checked against its own bound REL(n', b')),
  // else at the routine's sizes; the full budget when the recurrence is not established.
  Task run = t;
  FoldOutputBound run_fb = fb;
  std::int64_t run_keys = bt.terms;
  bool reduced = false;
  std::string where = "routine's own random inputs";
  if (all_sizes) {
    const ShrunkPair small = fold_instance(t, o.limits);
    const FoldLift small_lift = lift_fold(small.src, small.tgt, t.app, o.limits);
    const FoldOutputBound small_fb =
        fold_output_bound(bt.storage, bt.state, small_lift.keys, small_lift.block, o.limits.exp_ulp);
    if (!small.extents.empty() && small_lift.proved && small_fb.defined) {
      run = fold_instance_task(t, small);
      run_fb = small_fb;
      run_keys = small_lift.keys;
      reduced = true;
      where = fmt::format("random inputs at reduced sizes ({}; its own bound, n = {}, b = {})",
                          extents_text(small.extents), small_lift.keys, small_lift.block);
    }
  }
  std::string why;
  auto plan = scaled_reduction_plan(run.src, static_cast<std::size_t>(t.app.statements[0] - 1), run_fb.rel_z,
                                    run_fb.abs, &why, p, run_fb.kappa);
  if (!plan || plan->checks[0].node != out)
    return unknown(UnknownReason::Unsupported, "the source's value pass: " + why);
  with_numerator_headroom(*plan, run_keys, run_fb.kappa);
  const std::vector<std::string> watched = {out};
  const std::vector<std::string> kept = {out, plan->checks[0].scale_node};
  const Routine src_run = through_last_writer(instrument_source(run.src, {&*plan}, watched, false), kept);
  const Routine tgt_run = through_last_writer(with_outputs(run.tgt, watched, false), watched);
  PairRunner runner(src_run, tgt_run, plan->checks);
  std::map<std::string, double> worst;
  for (int k = 0; k < 4; ++k) {
    TensorMap in = random_inputs(run.src, o.limits.seed + static_cast<std::uint64_t>(k));
    if (auto m = runner.run(in, &worst)) {
      v.kind = VerdictKind::Refuted;
      v.message = "outside the bound on the " + where + ": " + m->text();
      attach_case(v, run, o, src_run, tgt_run, plan->checks, Found{in, *m, "random (differential)", 0});
      return;
    }
  }
  bi.worst_observed = worst[out];
  bi.parts.push_back(CertificatePart{"differential", "confirmed",
                                     fmt::format("{} (4 seeds): worst {} of the bound on {}", where,
                                                 fraction(worst[out]), out)});
  // After a proof for every extent a cross-check's worth; a quarter of the budget after one at the
  // routine's sizes; the whole budget when the recurrence is not established.
  const int trials =
      all_sizes ? std::max(0, cross_check_runs(runner, std::min(kProvedSearchTrials, o.limits.search_trials)) - 4)
                : scaled_search_trials(runner, id.proved ? std::max(1, o.limits.search_trials / 4)
                                                         : o.limits.search_trials);
  if (auto found = search_counterexample(runner, trials, o.limits.seed)) {
    v.kind = VerdictKind::Refuted;
    v.message = "outside the bound: " + found->mismatch.text();
    v.steps.push_back(fmt::format("counterexample search: trial {} ({}) violates it", found->trial, found->family));
    attach_case(v, run, o, src_run, tgt_run, plan->checks, std::move(*found));
    return;
  }
  v.steps.push_back(fmt::format("counterexample search: {} adversarial trials within the bound{}", trials,
                                 reduced ? " at reduced sizes" : ""));
  v.scope = all_sizes ? Scope{true, fmt::format("all sizes: the fold's recurrence for every extent (structural), the "
                                                "bound formula for every n and b (induction: Z3 over the reals, under "
                                                "the rounding model and the exp assumption of docs/bounds.md); "
                                                "rel_z stated for n = {}, b = {}, rel_z(n, b) of the formula at "
                                                "other sizes",
                                                bt.terms, bt.block)}
                      : Scope{false, concrete_scope(t.src)};
  if (!id.proved) {
    v.bound = bi;
    if (id.term_limit)
      return unknown(UnknownReason::ResourceLimit,
                     "the fold's recurrence could not be established for " + out + " at these sizes (" + id.detail +
                         "); no counterexample in " + std::to_string(trials) + " trials");
    return unknown(UnknownReason::Approximation, "the target's " + out + " is not the fold's recurrence the bound is about (" +
                                                     id.detail + "); no counterexample in " + std::to_string(trials) +
                                                     " trials");
  }
  // (ii) the fold's certificate (shared with its l): induction and MPFR rows, O included.
  ProofCache cache = engine_cache(o);
  const Certificate cert = certificate_for(bt.storage, bt.terms, o.limits, o.use_cache ? &cache : nullptr,
                                           dump_prefix(t, o), bt.block);
  bool induction = false;
  for (const auto& part : cert.parts) {
    bi.parts.push_back(part);
    induction = induction || (part.name == "induction" && part.status == "proved");
  }
  bi.tightness = cert.output_tightness;
  v.bound = bi;
  if (!induction || !cert.mpfr_ok)
    return unknown(UnknownReason::Approximation,
                   fmt::format("the fold's certificate is incomplete (induction {}, MPFR rows {})",
                               induction ? "proved" : "not proved", cert.mpfr_ok ? "confirmed" : "failed"));
  v.kind = VerdictKind::Bounded;
  if (!all_sizes)
    v.scope.text += fmt::format("; the bound formula proved for every n and b by induction (Z3 over the reals, under the "
                              "rounding model and the exp assumption of docs/bounds.md), instantiated at n = {}, b = {}",
                              bt.terms, bt.block);
  v.message = fmt::format(
      "{} is the fold's numerator over its norm (i, {}); bound rel_z = {:.3g} of Σ(|{}| + {:.3g})·|v|: "
      "induction (every n and b) proved, confirmed by MPFR (O tightness {}), differential inside the bound",
      out, all_sizes ? "every extent" : "the routine's sizes", fb.rel_z, p, fb.kappa, fraction(cert.output_tightness));
}

// The per-cell plan diff --rewrite compares O with (the same check the certificate states).
std::optional<DownstreamPlan> plan_fold_output(const Routine& src, const Application& app, const Obligation& ob,
                                               double exp_ulp, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<DownstreamPlan> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  const osm::SumTerms* terms = osm::sum_terms(ob);
  if (!terms || ob.covers.empty() || terms->block < 1 || app.statements.empty())
    return fail(fmt::format("{} records no bound terms with a block size", ob.claim));
  const std::string p = osm::fold_roles(app).p;
  const osm::SumTerms& bt = *terms;
  const FoldOutputBound fb = fold_output_bound(bt.storage, bt.state, bt.terms, bt.block, exp_ulp);
  if (!fb.defined) return fail("no certified bound: " + fb.undefined_reason);
  auto plan = scaled_reduction_plan(src, static_cast<std::size_t>(app.statements[0] - 1), fb.rel_z, fb.abs, why, p,
                                    fb.kappa);
  if (!plan) return plan;
  with_numerator_headroom(*plan, bt.terms, fb.kappa);
  plan->bounds.push_back(DownstreamBound{
      plan->checks[0].node,
      fmt::format("|{0}_tgt - {0}_src| <= rel_z·Σ(|{1}| + κ)·|v| + abs, κ = {2:.3g}, abs = {3:.3g} (docs/bounds.md §7)",
                  plan->checks[0].node, p, fb.kappa, fb.abs),
      fb.rel_z, fmt::format("Σ(|{}| + κ)·|v|", p), 0});
  return plan;
}

}  // namespace

Checker block_fold_output_bound_checker() {
  Checker c;
  c.id = "certified-bound.block-fold-output";
  c.description =
      "the block fold's O within rel_z·Σ(|p| + κ)|v| + abs of the composed (p / l)·v: its recurrence for every "
      "extent (the fold's structural lift, else at the routine's sizes), the fold's induction for every n and b, MPFR rows through the fold";
  c.discharge = certify_fold_output;
  c.plan = plan_fold_output;
  // Where O reaches an output without a certified plan: 64 units of f32 roundoff per key.
  c.stand_in_tolerance = [](const Obligation& ob, double) {
    const osm::SumTerms* terms = osm::sum_terms(ob);
    return 64.0 * static_cast<double>(terms ? terms->terms : 1) * 0x1p-24;
  };
  return c;
}

}  // namespace fp::verify
