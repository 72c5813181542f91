#include "verify/diff_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/access_census.h"
#include "verify/checkers.h"
#include "verify/downstream_bounds.h"

namespace fp::verify {

namespace {

// fp_exp64's assumed error (docs/semantics.md): the bounds a diff compares with use verify's
// default assumption.
constexpr double kExpUlp = Limits{}.exp_ulp;

// The checker that certifies `ob` of `app`, or nullptr.
const Checker* bounded_checker(const Application& app, const Obligation& ob) {
  const ClaimSpec* claim = find_claim(app.shape, ob.claim);
  return claim ? find_checker(claim->checker) : nullptr;
}

std::optional<DownstreamPlan> certified_plan(const Routine& src, const Application& app, const Obligation& ob,
                                             std::string* why) {
  const Checker* c = bounded_checker(app, ob);
  if (!c || !c->plan) {
    *why = fmt::format("no checker of the claim {} of {} derives a certified plan", ob.claim, app.shape);
    return std::nullopt;
  }
  return c->plan(src, app, ob, kExpUlp, why);
}

// The stand-in relative tolerance of outputs `ob` reaches without a certified bound; without a
// checker that states one, 64 units of f32 roundoff per term (a loose, never-certified stand-in).
double stand_in_tolerance(const Application& app, const Obligation& ob) {
  if (const Checker* c = bounded_checker(app, ob); c && c->stand_in_tolerance) return c->stand_in_tolerance(ob, kExpUlp);
  const std::int64_t terms = ob.bound ? ob.bound->terms : 1;
  return 64.0 * static_cast<double>(terms) * 0x1p-24;
}

// Nodes whose values depend on any of `from` (coarse: every node a top-level statement writes
// depends on every node it reads).
std::set<std::string> downstream_of(const Routine& r, const std::set<std::string>& from) {
  AccessCensus census(r);
  std::set<std::string> reached = from;
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t p = 0; p < census.top_level().size(); ++p) {
      bool reads = false;
      for (const Access* a : census.at(p))
        if (!a->is_write() && reached.count(a->node)) reads = true;
      if (!reads) continue;
      for (const Access* a : census.at(p))
        if (a->is_write() && reached.insert(a->node).second) changed = true;
    }
  }
  return reached;
}

// Every node a plan says its claim perturbs (bounded or not).
std::set<std::string> perturbed_by(const DownstreamPlan& p) {
  std::set<std::string> s(p.unbounded.begin(), p.unbounded.end());
  for (const auto& c : p.checks) s.insert(c.node);
  return s;
}

std::string statement_of(const DownstreamPlan& p, const NodeCheck& c) {
  for (const auto& b : p.bounds)
    if (b.node == c.node) return fmt::format("{}; here rho = {:.3g}", b.formula, b.value);
  return fmt::format("|{0}_tgt - {0}_src| <= REL·|{0}_src|, REL = {1:.3g} (the claim's certified bound)", c.node,
                     c.rel);
}

// What one bounded obligation perturbs: the nodes it names (its covers, and its plan's checked
// and unbounded nodes when it has a plan), and everything downstream of them.
struct Perturbation {
  std::size_t application = 0;
  std::optional<std::size_t> plan;  // index into the plans, when the obligation has one
  std::set<std::string> direct, reaches;
};

// A plan's check holds only while its claim is the one perturbation reaching the node. Another
// claim of the same application perturbs the nodes it names (one application's plans are stated
// jointly); another application's claim — with a plan or not — perturbs everything downstream of
// those too: a second layer, fed by the first's output through its scores, its exps and its own
// fold, gets the stand-in.
bool alone(const std::vector<Perturbation>& all, std::size_t self, const std::string& node) {
  for (std::size_t j = 0; j < all.size(); ++j) {
    if (j == self) continue;
    const bool same_application = all[j].application == all[self].application;
    if ((same_application ? all[j].direct : all[j].reaches).count(node)) return false;
  }
  return true;
}

}  // namespace

RewriteDiffPlan plan_rewrite_diff(const Routine& original, const RewriteResult& result) {
  RewriteDiffPlan plan;
  std::set<std::string> covered;
  std::vector<DownstreamPlan> plans;
  std::vector<Perturbation> perturbations;
  for (std::size_t a = 0; a < result.applications.size(); ++a)
    for (const Obligation& ob : result.applications[a].obligations) {
      const Application& app = result.applications[a];
      if (ob.kind != ObligationKind::Bounded) continue;
      Perturbation& pert = perturbations.emplace_back();
      pert.application = a;
      for (const Cover& c : ob.covers) {
        covered.insert(c.node);
        pert.direct.insert(c.node);
      }
      plan.stand_in_bound = std::max(plan.stand_in_bound, stand_in_tolerance(app, ob));
      // The application's statement positions refer to the routine its round received.
      if (!equal(result.round_input(original, app.round, app.member), original)) {
        plan.notes.push_back(fmt::format("{} at statement {}: applied to an already rewritten routine (round {}), "
                                         "no certified plan against the original",
                                         ob.claim, app.statements.empty() ? 0 : app.statements[0], app.round));
        continue;
      }
      std::string why;
      if (auto p = certified_plan(original, app, ob, &why)) {
        pert.direct.merge(perturbed_by(*p));
        pert.plan = plans.size();
        plans.push_back(std::move(*p));
      } else {
        plan.notes.push_back(fmt::format("{} on {}: {}", ob.claim, ob.covers.empty() ? "?" : ob.covers[0].node, why));
      }
    }
  for (Perturbation& p : perturbations) {
    p.reaches = downstream_of(original, p.direct);
    p.reaches.merge(downstream_of(result.routine, p.direct));
  }
  std::vector<const DownstreamPlan*> used;
  for (std::size_t k = 0; k < perturbations.size(); ++k) {
    if (!perturbations[k].plan) continue;
    const DownstreamPlan& pl = plans[*perturbations[k].plan];
    for (const auto& c : pl.checks) {
      if (!alone(perturbations, k, c.node)) {
        if (const Node* n = result.routine.find_node(c.node); n && n->is_output)
          plan.notes.push_back(fmt::format("{}: perturbed by more than one bounded claim", c.node));
        continue;
      }
      plan.certified[c.node] = c;
      plan.statements[c.node] = statement_of(pl, c);
    }
    for (const auto& n : pl.notes) plan.notes.push_back(n);
    used.push_back(&pl);
  }
  // Only the routine's own outputs are compared: drop checks of internal nodes.
  for (auto it = plan.certified.begin(); it != plan.certified.end();) {
    const Node* n = result.routine.find_node(it->first);
    if (!n || !n->is_output) {
      plan.statements.erase(it->first);
      it = plan.certified.erase(it);
    } else {
      ++it;
    }
  }
  // The original runs with its own outputs and the plans' Σ|w·v| nodes.
  plan.source = instrument_source(original, used, {}, true);
  // Outputs the claims reach in the rewritten routine but that have no certified check.
  const std::set<std::string> reached = downstream_of(result.routine, covered);
  for (const Node* n : result.routine.outputs())
    if (reached.count(n->name) && !plan.certified.count(n->name)) plan.stand_in.insert(n->name);
  return plan;
}

NodeCheck RewriteDiffPlan::check_for(const std::string& node) const {
  if (auto it = certified.find(node); it != certified.end()) return it->second;
  NodeCheck check;
  check.node = node;
  if (stand_in.count(node)) {
    check.kind = NodeCheck::Kind::StandIn;
    check.rel = stand_in_bound;
  }
  return check;
}

}  // namespace fp::verify
