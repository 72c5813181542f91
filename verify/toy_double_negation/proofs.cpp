#include "verify/toy_double_negation/proofs.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "core/ir_visit.h"
#include "verify/checkers/exact_lift.h"
#include "verify/smt/smt.h"
#include "verify/symbolic/term.h"

namespace fp::verify {

namespace {

bool is_neg(const ExprP& e) {
  return e && e->kind == ExprKind::Unary && e->unop() == UnOp::Neg;
}

// `src` is neg.p(neg.p(x)) at one precision p and `tgt` is x.
bool stripped(const ExprP& src, const ExprP& tgt) {
  return is_neg(src) && is_neg(src->args[0]) && src->args[0]->prec == src->prec &&
         src->args[0]->args[0]->prec == src->prec && equal(src->args[0]->args[0], tgt);
}

// `src` with each store's value replaced by the target's where the target strips it; the
// precisions stripped go to `precs`. nullopt when the two trees differ in shape.
std::optional<StmtP> align(const StmtP& src, const StmtP& tgt, std::set<Prec>& precs) {
  if (src->kind != tgt->kind || src->body.size() != tgt->body.size()) return std::nullopt;
  auto copy = std::make_shared<Stmt>(*src);
  if (src->kind == StmtKind::Set && tgt->value && stripped(src->value, tgt->value)) {
    copy->value = tgt->value;
    precs.insert(src->value->prec);
  }
  for (std::size_t i = 0; i < src->body.size(); ++i) {
    auto b = align(src->body[i], tgt->body[i], precs);
    if (!b) return std::nullopt;
    copy->body[i] = *b;
  }
  return copy;
}

// The structure: nullopt when it holds (with the precisions stripped), else why not.
std::string structure(const Task& t, std::set<Prec>& precs) {
  if (t.src.nodes != t.tgt.nodes) return "the two routines declare different nodes";
  const std::vector<StmtP> S = top_level_statements(t.src), T = top_level_statements(t.tgt);
  if (S.size() != T.size()) return "the two routines have different numbers of top-level statements";
  if (t.app.statements.empty()) return "the application names no statement";
  const auto at = static_cast<std::size_t>(t.app.statements[0] - 1);
  for (std::size_t i = 0; i < S.size(); ++i) {
    if (i != at) {
      if (!equal(S[i], T[i])) return fmt::format("top-level statement {} differs outside the application", i + 1);
      continue;
    }
    const auto aligned = align(S[i], T[i], precs);
    if (!aligned || !equal(*aligned, T[i]))
      return fmt::format("statement {} is not the source's with stores of neg(neg(x)) storing x", i + 1);
  }
  if (precs.empty()) return "no store of neg(neg(x)) was stripped";
  return "";
}

ExactLift lift(const Task& t, const EngineOptions& o) {
  ExactLift out;
  std::set<Prec> precs;
  out.why_not = structure(t, precs);
  if (!out.why_not.empty()) return out;
  out.steps.push_back(fmt::format("structure: the target is the source with stores of neg(neg(x)) storing x in "
                                  "statement {}, every other statement identical (on the IR, no extent used)",
                                  t.app.statements[0]));
  for (Prec p : precs) {
    TermStore store;
    const TermP x = store.var("x", 0, p);
    const TermP twice = store.unary(UnOp::Neg, store.unary(UnOp::Neg, x, p), p);
    smt::SmtLimits limits;
    limits.rlimit = o.limits.rlimit;
    const smt::SmtOutcome r = smt::find_difference(store, {{twice, x}}, smt::FpQueryOptions{false}, limits);
    if (r.status != smt::SmtStatus::Unsat) {
      out.why_not = fmt::format("neg.{0}(neg.{0}(x)) = x is {1} (Z3)", prec_name(p), smt::smt_status_name(r.status));
      return out;
    }
    out.steps.push_back(fmt::format("scalar: neg.{0}(neg.{0}(x)) = x for every {0} x (Z3, floating point): unsat "
                                    "in {1:.2f} s",
                                    prec_name(p), r.seconds));
  }
  out.proved = true;
  out.proof = "every stored value is the source's, neg(neg(x)) = x proved for every x of its precision, for all sizes";
  return out;
}

}  // namespace

std::vector<Checker> toy_double_negation_checkers() {
  return {
      exact_lift_checker("all-sizes-lift.double-negation",
                         "stores of neg(neg(x)) storing x keep every cell bit for bit for all sizes, plus the bitwise "
                         "check of a small instance",
                         lift),
  };
}

}  // namespace fp::verify
