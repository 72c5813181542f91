// `real-shadow.fused-backward`: the fused backward's dQ and dK (claims `backward-dq`,
// `backward-dk`). Their certified bound — ds = p·(dp − D) reassociating the composed
// (dP / l + lg)·e, D = Σ dO·O instead of Σ_t p·dP — is not derived yet, so this checker never
// proves: it ends `unknown` (approximation). What it can decide is that a target computes ANOTHER
// function: the two routines' f64 shadows (every node, local and operation at f64, the same
// constants) are the composed and the fused backward over the reals up to f64 rounding, which on
// inputs in [-1, 1) at a routine's sizes stays many orders of magnitude below the 1e-8 relative
// (plus 1e-10 absolute) this checker allows; a covered cell of the shadows beyond that on any of
// its random inputs — NaN where the source has none, or the reverse, included — is `refuted`, with
// the shadows written as the case (its replay: `flashproof verify --src --tgt --claim
// bounded:1e-8`).

#include <fmt/format.h>

#include "core/random_inputs.h"
#include "verify/case_attach.h"
#include "verify/checkers/builtin.h"
#include "verify/compare.h"
#include "verify/search.h"

namespace fp::verify {

namespace {

constexpr double kShadowRel = 1e-8;
constexpr double kShadowAbs = 1e-10;
constexpr int kShadowSeeds = 8;

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

void check_shadows(Verdict& v, const Task& t, const EngineOptions& o) {
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
  std::map<std::string, double> worst;
  for (int k = 0; k < kShadowSeeds; ++k) {
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
      "no certified bound of the fused backward's reassociation yet (ds = p·(dp - D), D = Σ dO·O; "
      "docs/bounds.md): "
      "not proved; the f64 shadows of both routines agree within {:g} relative on {} random inputs, so the "
      "target "
      "computes the composed function up to rounding",
      kShadowRel, kShadowSeeds);
}

}  // namespace

Checker fused_backward_shadow_checker() {
  Checker c;
  c.id = "real-shadow.fused-backward";
  c.description =
      "the fused backward's dQ / dK: never proved (no certified bound yet); refuted when the f64 shadows of "
      "the pair "
      "differ beyond 1e-8 relative (another function), else unknown";
  c.discharge = check_shadows;
  return c;
}

}  // namespace fp::verify
