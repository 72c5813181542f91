#include "rewrites/toy_double_negation/toy_double_negation.h"

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fp {

namespace {

constexpr const char* kId = "toy-double-negation";
constexpr const char* kShape = "toy-double-negation.strip";
constexpr const char* kGate = "toy_double_negation";
constexpr const char* kClaim = "strip";

bool is_neg(const ExprP& e) {
  return e && e->kind == ExprKind::Unary && e->unop() == UnOp::Neg;
}

// neg(neg(x)), whatever the precisions.
bool double_negation(const ExprP& e) {
  return is_neg(e) && is_neg(e->args[0]);
}

bool one_precision(const ExprP& e) {
  return e->args[0]->prec == e->prec && e->args[0]->args[0]->prec == e->prec;
}

// What one top-level statement holds: the stores it strips, and the double negations it leaves.
struct Found {
  std::vector<std::string> stripped;
  std::vector<std::string> mixed;
};

StmtP strip(const StmtP& s, Found& found) {
  if (s->kind == StmtKind::Set && double_negation(s->value)) {
    if (!one_precision(s->value)) {
      found.mixed.push_back(s->name);
      return s;
    }
    found.stripped.push_back(s->name);
    return set(s->name, s->indices, s->value->args[0]->args[0]);
  }
  if (s->body.empty()) return s;
  auto copy = std::make_shared<Stmt>(*s);
  for (auto& b : copy->body) b = strip(b, found);
  return copy;
}

Application application_of(int pos, int line, const std::string& node, int round) {
  Application a;
  a.member = kId;
  a.shape = kShape;
  a.round = round;
  a.statements = {pos};
  a.lines = {line};
  a.matched = {{"target", node}};
  a.emitted = fmt::format("the store of {} without its double negation", node);
  Obligation ob;
  ob.kind = ObligationKind::Exact;
  ob.claim = kClaim;
  ob.description = "neg(neg(x)) is x, bit for bit";
  ob.covers = {Cover{node, node + "[all cells]"}};
  a.obligations = {ob};
  return a;
}

Decline decline_of(int pos, int line, const std::string& node, int round) {
  return Decline{kId, kShape, round, pos, line, "mixed-precision",
                 fmt::format("the double negation stored into {} is not at one precision: a negation that "
                             "rounds is not undone by the second",
                             node),
                 "store the double negation at one precision (node and operations alike)"};
}

MemberOutput apply(const Routine& r, const MemberContext& ctx) {
  MemberOutput out;
  out.routine = r;
  if (ctx.shape_enabled && !ctx.shape_enabled(kShape)) return out;
  std::vector<StmtP> top = r.body->body;
  bool changed = false;
  for (std::size_t p = 0; p < top.size(); ++p) {
    Found found;
    StmtP s = strip(top[p], found);
    const int pos = static_cast<int>(p) + 1, line = top[p]->loc.line;
    for (const auto& node : found.mixed) out.declines.push_back(decline_of(pos, line, node, ctx.round));
    if (found.stripped.empty()) continue;
    top[p] = s;
    changed = true;
    out.applications.push_back(application_of(pos, line, found.stripped[0], ctx.round));
  }
  if (changed) out.routine.body = seq(std::move(top));
  return out;
}

// The planted bug of its targets: one negation too few (the stripped stores store -x).
std::vector<Mutant> mutants(const Routine& tgt, const Application& app) {
  const std::string node = matched_node(app, "target");
  Routine bad = tgt;
  std::vector<StmtP> top = bad.body->body;
  std::function<StmtP(const StmtP&)> negate = [&](const StmtP& s) -> StmtP {
    if (s->kind == StmtKind::Set && s->name == node) return set(s->name, s->indices, unary(UnOp::Neg, s->value, s->value->prec));
    if (s->body.empty()) return s;
    auto copy = std::make_shared<Stmt>(*s);
    for (auto& b : copy->body) b = negate(b);
    return copy;
  };
  const auto pos = static_cast<std::size_t>(app.statements.at(0) - 1);
  top.at(pos) = negate(top.at(pos));
  bad.body = seq(std::move(top));
  return {Mutant{"one-negation-left", "stores -x", bad}};
}

}  // namespace

Member toy_double_negation_member() {
  Member m;
  m.id = kId;
  m.gate = kGate;
  m.version = "1";
  m.description = "neg(neg(x)) becomes x (the toy member: docs/adding-a-rewrite.md)";
  m.config_keys = {ConfigKeySpec{kGate, ConfigType::Bool, "false", {{"approximate", "true"}}, true,
                                 "strip double negations"}};
  m.shapes = {ShapeInfo{kShape,
                        "exact",
                        "a store of neg(neg(x)) at one precision stores x",
                        {ClaimSpec{kClaim, ObligationKind::Exact, "all-sizes-lift.double-negation",
                                   "neg(neg(x)) is x, bit for bit, for every size"}},
                        mutants}};
  m.apply = apply;
  return m;
}

}  // namespace fp
