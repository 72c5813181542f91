// `certified-bound.fused-backward`: the fused backward's dQ and dK (claims `backward-dq`,
// `backward-dk`) against the composed step, per cell, within the bound of docs/bounds.md §8.
// `bounded` needs (i) that the target is the fused form over the source's composed one — for every
// extent by the structural lift of verify/online_softmax/fused_backward_lift.h with the per-cell
// order of step (v) lifted too, then the term identity (verify/online_softmax/fused_backward_identity.h)
// on a small instance the tier emits; else the term identity at the routine's sizes: every cell of
// the gradient, on both sides, the same contraction over the same chain of links of the composed,
// respectively fused, score gradient the bound is about — and (ii) the bound evaluated from the
// source's values holding on every cell over the confirmation inputs (the random inputs of the
// pair it was identified on and adversarial families: peaked and near-zero probabilities, large and
// subnormal output gradients), with the worst observed fraction of it reported. With the lift the
// scope is all sizes and the bound is stated at the routine's n, E and m. A target the identity
// does not cover falls back to the f64 shadows: the pair's f64 shadows (every node, local and
// operation at f64, the same constants) are the composed and the fused backward over the reals up
// to f64 rounding, which on inputs in [-1, 1) at a routine's sizes stays many orders of magnitude
// below the 1e-8 relative (plus 1e-10 absolute) allowed; a cell beyond that (NaN where the source
// has none, or the reverse, included) is `refuted` with the shadows as the case (its replay:
// `flashproof verify --src --tgt --claim bounded:1e-8`), anything else `unknown`.

#include <fmt/format.h>

#include <cmath>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "core/numerics.h"
#include "core/random_inputs.h"
#include "core/support/deadline.h"
#include "rewrites/online_softmax/claims.h"
#include "verify/bounds/rounding_model.h"
#include "verify/case_attach.h"
#include "verify/compare.h"
#include "verify/online_softmax/bounds/backward_bound.h"
#include "verify/online_softmax/checkers/checkers.h"
#include "verify/online_softmax/checkers/fused_backward_order_step.h"
#include "verify/online_softmax/fused_backward_diff_plan.h"
#include "verify/online_softmax/fused_backward_identity.h"
#include "verify/online_softmax/fused_backward_lift.h"
#include "verify/online_softmax/smt/queries.h"
#include "verify/phase_clock.h"
#include "verify/search.h"

namespace fp::verify {

namespace {

constexpr double kShadowRel = 1e-8;
constexpr double kShadowAbs = 1e-10;
constexpr int kShadowSeeds = 8;
// The confirmation evaluates the cells' terms once per input: about this many term evaluations in
// all. A deep instance (a 24-layer step, whose every gradient's terms reach back through the layers
// before it) then gets fewer inputs — at least 8 — rather than seconds per obligation.
constexpr double kConfirmationEvaluations = 4e6;

Prec widened(Prec p) {
  return is_float(p) ? Prec::F64 : p;
}

ExprP shadow_expr(const ExprP& e) {
  if (!e) return e;
  auto out = std::make_shared<Expr>(*e);
  out->prec = widened(e->prec);
  for (auto& a : out->args) a = shadow_expr(a);
  return out;
}

StmtP shadow_stmt(const StmtP& s) {
  if (!s) return s;
  auto out = std::make_shared<Stmt>(*s);
  out->value = shadow_expr(s->value);
  if (s->kind == StmtKind::DeclareLocal) out->prec = widened(s->prec);
  for (auto& c : out->carried) {
    c.prec = widened(c.prec);
    c.init = shadow_expr(c.init);
  }
  for (auto& b : out->body) b = shadow_stmt(b);
  return out;
}

// Every floating-point node, local, carried value and operation of `r` at f64.
Routine f64_shadow(const Routine& r) {
  Routine out = r;
  for (Node& n : out.nodes) n.prec = widened(n.prec);
  out.body = shadow_stmt(r.body);
  return out;
}

void check_shadows(Verdict& v, const Task& t, const EngineOptions& o, const std::string& not_covered) {
  std::vector<std::string> nodes;
  for (const Cover& c : t.obligation.covers) nodes.push_back(c.node);
  if (nodes.empty() || !pair_mismatch(t.src, t.tgt, nodes).empty()) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message =
        "the pair does not hold the covered gradient on both sides: " + pair_mismatch(t.src, t.tgt, nodes);
    return;
  }
  // The case a refutation writes is the shadows' (their inputs are f64).
  Task shadows = t;
  shadows.src = f64_shadow(t.src);
  shadows.tgt = f64_shadow(t.tgt);
  const Routine src = with_outputs(shadows.src, nodes, false);
  const Routine tgt = with_outputs(shadows.tgt, nodes, false);
  std::vector<NodeCheck> checks;
  for (const std::string& n : nodes) {
    NodeCheck c;
    c.node = n;
    c.kind = NodeCheck::Kind::Relative;
    c.rel = kShadowRel;
    c.abs = kShadowAbs;
    checks.push_back(c);
  }
  PairRunner runner(src, tgt, checks);
  ScopedPhase phase("f64 shadows");
  std::map<std::string, double> worst;
  for (int k = 0; k < kShadowSeeds; ++k) {
    check_deadline("f64 shadows");
    TensorMap in = random_inputs(src, o.limits.seed + static_cast<std::uint64_t>(k));
    if (auto m = runner.run(in, &worst)) {
      v.kind = VerdictKind::Refuted;
      v.message = fmt::format(
          "the fused gradient is not the composed one: their f64 shadows (every node and operation at f64) "
          "differ beyond {:g} relative, far above f64 rounding: {}",
          kShadowRel, m->text());
      v.steps.push_back("f64 shadows of both routines, random inputs in [-1, 1): " + m->text());
      attach_case(v, shadows, o, src, tgt, checks, Found{in, *m, "random (f64 shadows)", k});
      return;
    }
  }
  v.kind = VerdictKind::Unknown;
  v.reason = UnknownReason::Approximation;
  v.scope = Scope{false, concrete_scope(t.src)};
  v.steps.push_back(
      fmt::format("f64 shadows agree within {:g} relative on {} random inputs (worst {:.3g} of it)",
                  kShadowRel, kShadowSeeds, worst.empty() ? 0.0 : worst.begin()->second));
  v.message = fmt::format(
      "the target is not the fused form the certified bound covers ({}); the f64 shadows of both routines agree "
      "within {:g} relative on {} random inputs, so it computes the composed function up to rounding, but no bound "
      "is proved",
      not_covered, kShadowRel, kShadowSeeds);
}

// The confirmation inputs: the routine's own random inputs, every other one reshaped by a family
// (powers of two, so the values stay representable): peaked probabilities (q × 8), near-zero
// probabilities (q × 32), large output gradients (dO × 128), subnormal products (dO × 2^-120 at f32
// and f64, × 2^-14 at f16 and bf16).
struct Family {
  const char* name;
  std::string osm::BackwardRoles::* role;  // the input scaled (nullptr: none)
  double factor;
};
const std::vector<Family>& families() {
  using R = osm::BackwardRoles;
  static const std::vector<Family> f = {{"uniform", nullptr, 1},     {"peaked", &R::q, 8},
                                        {"uniform", nullptr, 1},     {"near-zero-p", &R::q, 32},
                                        {"large-dO", &R::d_out, 128}, {"subnormal-products", &R::d_out, 0}};
  return f;
}

TensorMap confirmation_input(const Task& t, int k, std::uint64_t seed, Prec p) {
  TensorMap in = random_inputs(t.src, seed + static_cast<std::uint64_t>(k));
  const Family& f = families()[static_cast<std::size_t>(k) % families().size()];
  if (!f.role) return in;
  auto it = in.find(osm::backward_roles(t.app).*f.role);
  if (it == in.end()) return in;
  const double factor = f.factor != 0 ? f.factor : std::ldexp(1.0, p == Prec::F16 || p == Prec::BF16 ? -14 : -120);
  for (double& x : it->second.data) x = round_to(p, x * factor);
  return in;
}

// The formula's proofs do not depend on the obligation: run once per process (per limits).
struct Proofs {
  bool proved = false;
  std::string calculus, assembly;
};
std::string summary(const std::vector<smt::InductionStep>& steps, const char* what, int& proved) {
  double seconds = 0;
  std::string failed;
  proved = 0;
  for (const auto& st : steps) {
    proved += st.outcome.status == smt::SmtStatus::Unsat;
    seconds += st.outcome.seconds;
    if (st.outcome.status != smt::SmtStatus::Unsat && failed.empty())
      failed = fmt::format("; {} is {}", st.name, smt::smt_status_name(st.outcome.status));
  }
  return fmt::format("{}/{} {} unsat in {:.2f} s{}", proved, steps.size(), what, seconds, failed);
}
const Proofs& formula_proofs(const Limits& limits) {
  static std::mutex mu;
  static std::map<std::pair<std::uint64_t, double>, Proofs> done;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(limits.rlimit, limits.real_timeout_s);
  auto it = done.find(key);
  if (it != done.end()) return it->second;
  smt::SmtLimits sl;
  sl.rlimit = limits.rlimit;
  sl.timeout_s = std::max(limits.real_timeout_s, 10.0);
  // Three independent groups of queries, each step in a Z3 context of its own: run side by side.
  auto calculus_run = std::async(std::launch::async, [&] { return smt::prove_gamma_calculus(sl); });
  auto perturbation_run = std::async(std::launch::async, [&] { return smt::prove_perturbation_calculus(sl); });
  // The member's own steps, then the engine's rules of summing perturbed products they rest on.
  auto assembly = smt::prove_backward_assembly(sl);
  const auto calculus = calculus_run.get();
  for (auto& st : perturbation_run.get()) assembly.push_back(std::move(st));
  Proofs p;
  int a = 0, b = 0;
  p.calculus = summary(calculus, "rules (Higham's product, monotonicity, one more rounding or quotient, a sum's term, "
                       "the composed gradient's coefficients, the contraction's term; every u <= 2^-8, every size with "
                       "size·u < 1)", a);
  p.assembly = summary(assembly, "steps (the composed and fused score gradients' identities, products and closings, "
                       "the narrowed row dot, one step of a sum of perturbed terms, the scale link, the contraction's "
                       "term)", b);
  p.proved = a == static_cast<int>(calculus.size()) && b == static_cast<int>(assembly.size());
  return done.emplace(key, std::move(p)).first->second;
}

void certify(Verdict& v, const Task& t, const EngineOptions& o) {
  const Obligation& ob = t.obligation;
  if (ob.covers.empty()) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = "the claim covers no gradient node";
    return;
  }
  const osm::BackwardRoles matched = osm::backward_roles(t.app);
  const BackwardRoles roles{ob.covers[0].node, matched.p, matched.d_p, matched.d_out, matched.o};
  const Node* x = t.src.find_node(roles.x);
  std::string mixed;
  for (const std::string& n : {roles.p, roles.dp, roles.dout, roles.o}) {
    const Node* nd = t.src.find_node(n);
    if (!nd || !x || nd->prec != x->prec) mixed = n.empty() ? "(unmatched)" : n;
  }
  if (!mixed.empty()) return check_shadows(v, t, o, "the backward's nodes are not all at one precision: " + mixed);
  // (i) for every extent: the target is the fused form over the source's composed one, structurally
  // (with the per-cell order of (v) for every block count); the term identity then runs on a small
  // instance the tier emits, where the bound is also confirmed. Otherwise both at the routine's sizes.
  const BackwardLift lift = lift_fused_backward(t.src, t.tgt, matched, roles.x);
  for (const auto& s : lift.steps) v.steps.push_back(s);
  const GradientOrderLift order = gradient_order_step(v, t, o, roles.x);
  const bool all_sizes = lift.proved && order.proved;
  Task on = t;
  std::string where = "at the routine's sizes";
  if (all_sizes) {
    const ShrunkPair small = fused_backward_instance(t, roles.x);
    on.src = small.src;
    on.tgt = small.tgt;
    if (!small.extents.empty()) where = fmt::format("at reduced sizes ({})", extents_text(small.extents));
  }
  TermStore store(o.limits.max_terms);
  const BackwardIdentity id = fused_backward_identity(on.src, on.tgt, roles, store);
  v.steps.push_back(id.check.proved ? id.check.detail + " (" + where + ")" : "(i) identity not established: " + id.check.detail);
  if (!id.check.proved) {
    check_shadows(v, on, o, id.check.detail);
    if (v.kind == VerdictKind::Unknown && id.check.term_limit) {
      v.reason = UnknownReason::ResourceLimit;
      v.message = "the fused form could not be established at these sizes (" + id.check.detail +
                  "); the f64 shadows of both routines agree, no bound is proved" +
                  (lift.proved ? "" : "; all-sizes lift not established: " + lift.why_not);
    }
    return;
  }
  // (ii) the bound on the confirmation inputs, about limits.mpfr_rows rows.
  const Prec p = x->prec;
  std::set<const void*> rows;
  std::int64_t keys = 0, width = 0, terms = 0;
  for (const auto& cell : id.cells)
    for (const auto& pr : cell.pairs)
      if (!pr.zero) {
        rows.insert(pr.row.get());
        keys = std::max<std::int64_t>(keys, static_cast<std::int64_t>(pr.row->size()));
        width = std::max<std::int64_t>(width, static_cast<std::int64_t>(pr.dot->size()));
        terms = std::max<std::int64_t>(terms, static_cast<std::int64_t>(cell.pairs.size()));
      }
  if (all_sizes) {
    // The bound is instantiated at the routine's sizes, which the lift read.
    keys = lift.keys;
    width = lift.width;
    terms = lift.pairs;
  }
  if (static_cast<double>(keys + terms + 8) * unit_roundoff(p) >= 1) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = fmt::format("{} keys and {} terms per cell at {}: γ_(n + m + 8) is not defined (its k·u >= 1), so the "
                            "bound says nothing here",
                            keys, terms, prec_name(p));
    return;
  }
  const std::int64_t per_input = std::max<std::int64_t>(1, static_cast<std::int64_t>(rows.size()));
  const std::int64_t by_rows = (o.limits.mpfr_rows + per_input - 1) / per_input;
  const auto by_work = static_cast<std::int64_t>(kConfirmationEvaluations / static_cast<double>(std::max<std::size_t>(store.size(), 1)));
  const int inputs = static_cast<int>(std::clamp<std::int64_t>(std::min(by_rows, by_work), 8, 4000));
  const std::string capped =
      by_work < by_rows && inputs > 8 ? fmt::format(", capped by the {} terms evaluated per input", store.size())
      : by_work < by_rows             ? fmt::format(", the floor of 8 (the terms, {} per input, would allow fewer)", store.size())
                                      : "";
  std::int64_t cells = 0, unbounded = 0;
  double worst = 0;
  std::string worst_at;
  for (int k = 0; k < inputs; ++k) {
    check_deadline("the fused backward's bound confirmation");
    const TensorMap in = confirmation_input(on, k, o.limits.seed, p);
    const auto values = evaluate_backward_cells(id, store, in, p);
    for (std::size_t c = 0; c < values.size(); ++c) {
      const BackwardCellValue& cv = values[c];
      ++cells;
      unbounded += !cv.bounded;
      if (!backward_cell_ok(cv)) {
        // Outside the bound although the identity holds: either the target computes another
        // function (the shadows refute it, with a case) or the bound itself is at fault — never
        // claim anything then.
        const std::string outside = fmt::format(
            "cell {} of {} is outside the derived bound on confirmation input {} ({}, {}): source {:a}, target {:a}, "
            "bound {:g}",
            c, roles.x, k, families()[static_cast<std::size_t>(k) % families().size()].name, where, cv.src, cv.tgt,
            cv.bound);
        v.steps.push_back(outside);
        check_shadows(v, on, o, outside);
        if (v.kind == VerdictKind::Refuted) return;
        v.kind = VerdictKind::Unknown;
        v.reason = UnknownReason::Approximation;
        v.message = outside + "; the f64 shadows agree, so the bound of docs/bounds.md §8 does not hold here: not proved";
        return;
      }
      if (cv.bounded && cv.bound > 0 && std::isfinite(cv.src) && std::isfinite(cv.tgt)) {
        const double r = std::fabs(cv.src - cv.tgt) / cv.bound;
        if (r > worst) {
          worst = r;
          worst_at = fmt::format("cell {} on input {} ({})", c, k,
                                 families()[static_cast<std::size_t>(k) % families().size()].name);
        }
      }
    }
  }
  // (iii) the γ calculus and (iv) the assembly, for every size (Z3 over the reals; once per process).
  const Proofs& proofs = formula_proofs(o.limits);
  if (!proofs.proved) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::ResourceLimit;
    v.message = "the bound's formula was not proved: " + proofs.calculus + "; " + proofs.assembly;
    return;
  }
  const double u = unit_roundoff(p);
  BoundInfo bi;
  bi.formula =
      "|X_tgt - X_src| <= Σ_t |x_t|·T_t + 2m·ω·(1 + γ_{m-1}) per cell, T_t = |c|(Ec_t + Ef_t)(1 + u) + 2u|c|G_t + 2ω "
      "+ γ_m(|c|(2G_t + Ec_t + Ef_t)(1 + u) + 2ω); Ec_t = P*_t(γ_3·A_t + γ_{n+4}·Σ_A) + (1 + γ_2)(ω + U) + ω, "
      "Ef_t = P*_t(γ_3·r_t + κ_D + ε_D) + (1 + γ_2)·ω·r_t + ω, G_t = P*_t(A_t + Σ_A) (docs/bounds.md §8: P* = e / l, "
      "A = |dP|, Σ_A = Σ P*·A, D_x = Σ dO·O, κ_D = |D_x - Σ P*·dP|, ε_D = γ_E·Σ|dO·O| + (1 + γ_{E-1})·E·ω, "
      "r_t = A_t + |D_x| + ε_D)";
  bi.instantiated = fmt::format("n = {} keys per row, E = {} value columns, m = {} terms per cell, {} (u = 2^{}, ω = "
                                "{:g}), evaluated per cell from the source's values",
                                keys, width, terms, prec_name(p), std::ilogb(u), underflow_error(p));
  bi.value = gamma_bound(keys + terms + 7, u);
  bi.relative_to = "Σ_t |x_t|·|c|·P*_t·(|dP_t| + Σ_A + |D_x|) plus κ_D, the forward's own discrepancy";
  bi.n = keys;
  bi.worst_observed = worst;
  bi.tightness = worst;
  bi.parts.push_back(CertificatePart{
      "(i) identity", all_sizes ? "proved for all sizes" : "proved",
      all_sizes ? "for every extent (structural): " + lift.steps.front() + "; the term identity " + where + ": " +
                      id.check.detail
                : id.check.detail + (lift.proved ? "" : "; all-sizes lift not established: " + lift.why_not)});
  bi.parts.push_back(CertificatePart{"(iii) γ calculus", "proved", proofs.calculus});
  bi.parts.push_back(CertificatePart{"(iv) assembly", "proved", proofs.assembly});
  bi.parts.push_back(CertificatePart{"(v) order", order.proved ? "proved for all sizes" : "routine's sizes",
                                     order.proved ? order.statement : "not lifted: " + order.why_not});
  bi.parts.push_back(CertificatePart{
      "(ii) bound", "confirmed",
      fmt::format("{} inputs {} ({} rows each{}; the routine's own random inputs and the families peaked, near-zero-p, "
                  "large-dO, subnormal-products), {} cells, 0 outside the bound ({} outside its hypotheses, equal or "
                  "NaN on both sides); worst {:.3g} of the bound{}",
                  inputs, where, per_input, capped, cells, unbounded, worst, worst_at.empty() ? "" : " at " + worst_at)});
  v.steps.push_back("bound: " + bi.instantiated);
  v.steps.push_back(bi.parts.back().detail);
  v.kind = VerdictKind::Bounded;
  v.reason = UnknownReason::None;
  v.bound = bi;
  if (all_sizes) {
    v.scope = Scope{true, fmt::format("all sizes: the fused form for every extent (structural), the bound's formula for "
                                      "every size (Z3 over the reals); stated for n = {} keys, E = {} value columns, m = "
                                      "{} terms per cell, the formula's value at other sizes",
                                      keys, width, terms)};
    v.message = fmt::format(
        "{} is the composed gradient within the fused backward's bound per cell (docs/bounds.md §8), for every extent: "
        "the target is the fused form over the source's composed one (structural over symbolic extents, the per-cell "
        "order by Z3), the term identity and the bound confirmed {} on {} cells, worst {:.3g} of it",
        roles.x, where, cells, worst);
  } else {
    v.scope = Scope{false, concrete_scope(t.src)};
    v.message = fmt::format(
        "{} is the composed gradient within the fused backward's bound per cell (docs/bounds.md §8), at the routine's "
        "sizes: the target is the fused form by term identity, the bound confirmed on {} cells, worst {:.3g} of it{}",
        roles.x, cells, worst, lift.proved ? "" : "; all-sizes lift not established (" + lift.why_not + ")");
  }
}

}  // namespace

Checker fused_backward_bound_checker() {
  Checker c;
  c.id = "certified-bound.fused-backward";
  c.description =
      "the fused backward's dQ / dK within the bound of docs/bounds.md §8 per cell: term identity with the fused "
      "form, the bound confirmed on adversarial inputs; otherwise refuted when the pair's f64 shadows differ beyond "
      "1e-8 relative (another function), else unknown";
  c.discharge = certify;
  c.joint_plan = plan_fused_backward_gradients;
  return c;
}

}  // namespace fp::verify
