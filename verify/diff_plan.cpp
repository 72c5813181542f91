#include "verify/diff_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/access_census.h"
#include "verify/accumulation_bound.h"
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
// checker that states one, 64 units of f32 roundoff (a loose, never-certified stand-in).
double stand_in_tolerance(const Application& app, const Obligation& ob) {
  if (const Checker* c = bounded_checker(app, ob); c && c->stand_in_tolerance) return c->stand_in_tolerance(ob, kExpUlp);
  return 64.0 * 0x1p-24;
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
    if (b.node == c.node)
      return b.value > 0 ? fmt::format("{}; here rho = {:.3g}", b.formula, b.value) : b.formula;
  return fmt::format("|{0}_tgt - {0}_src| <= REL·|{0}_src|, REL = {1:.3g} (the claim's certified bound)",
                     c.node, c.rel);
}

// What one bounded obligation perturbs: the nodes it names (its covers, and its plan's checked
// and unbounded nodes when it has a plan), and everything downstream of them.
struct Perturbation {
  std::size_t application = 0;
  std::optional<std::size_t> plan;  // index into the plans, when the obligation has one
  bool joint = false;               // the plan is a joint plan (Checker::joint_plan)
  std::set<std::string> direct, reaches;
};

// A plan's check holds only while its claim is the one perturbation reaching the node. Another
// claim of the same application perturbs the nodes it names (one application's plans are stated
// jointly); another application's claim — with a plan or not — perturbs everything downstream of
// those too: a second layer, fed by the first's output through its scores, its exps and its own
// fold, gets the stand-in. A joint plan carried the other applications' perturbations of what it
// reads (or declined): only its own application's other claims count.
bool alone(const std::vector<Perturbation>& all, std::size_t self, const std::string& node) {
  for (std::size_t j = 0; j < all.size(); ++j) {
    if (j == self) continue;
    const bool same_application = all[j].application == all[self].application;
    if (all[self].joint && !same_application) continue;
    if ((same_application ? all[j].direct : all[j].reaches).count(node)) return false;
  }
  return true;
}

// How the applications other than `self`'s perturb `node`: within the check of a plan whose claim
// alone reaches it, by an unknown amount where a claim reaches it without one, or not at all.
Upstream upstream_of(const std::vector<Perturbation>& all, const std::vector<DownstreamPlan>& plans,
                     std::size_t self, const std::string& node) {
  Upstream u;
  for (std::size_t j = 0; j < all.size(); ++j) {
    if (all[j].application == all[self].application || !all[j].reaches.count(node)) continue;
    u.kind = Upstream::Kind::Unknown;
    if (!all[j].plan || !alone(all, j, node)) continue;
    for (const NodeCheck& c : plans[*all[j].plan].checks)
      if (c.node == node) {
        u.kind = Upstream::Kind::Certified;
        u.check = c;
        return u;
      }
  }
  return u;
}

// Whether `app`, recorded against its round's input `in`, can be planned against `original`: the two
// agree on every top-level statement up to the application's last one, and on the declaration of
// every node those statements touch. Then its statement positions are the original's, and every
// value those statements compute is the same in both (a later round rewriting the forward of a
// routine whose backward an earlier round rewrote).
bool same_through(const Routine& in, const Routine& original, const Application& app) {
  if (equal(in, original)) return true;
  if (app.statements.empty()) return false;
  const auto last = static_cast<std::size_t>(*std::max_element(app.statements.begin(), app.statements.end()));
  const AccessCensus a(in), b(original);
  if (a.top_level().size() < last || b.top_level().size() < last) return false;
  std::set<std::string> touched;
  for (std::size_t pos = 0; pos < last; ++pos) {
    if (!equal(*a.top_level()[pos], *b.top_level()[pos])) return false;
    for (const Access* x : a.at(pos)) touched.insert(x->node);
  }
  for (const std::string& n : touched) {
    const Node *x = in.find_node(n), *y = original.find_node(n);
    if (!x || !y || !(*x == *y)) return false;
  }
  return true;
}

}  // namespace

RewriteDiffPlan plan_rewrite_diff(const Routine& original, const RewriteResult& result) {
  RewriteDiffPlan plan;
  std::set<std::string> covered;
  std::vector<DownstreamPlan> plans;
  std::vector<Perturbation> perturbations;
  std::vector<std::pair<std::size_t, const Obligation*>> joint;  // perturbation -> its obligation
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
      if (!same_through(result.round_input(original, app.round, app.member), original, app)) {
        plan.notes.push_back(
            fmt::format("{} at statement {}: applied to a routine an earlier round rewrote before "
                        "it (round {}), no certified plan against the original",
                        ob.claim, app.statements.empty() ? 0 : app.statements[0], app.round));
        continue;
      }
      // A joint plan is derived once every other claim's perturbation is known (below).
      if (const Checker* c = bounded_checker(app, ob); c && c->joint_plan) {
        pert.joint = true;
        joint.emplace_back(perturbations.size() - 1, &ob);
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
  auto reach = [&](Perturbation& p) {
    p.reaches = downstream_of(original, p.direct);
    p.reaches.merge(downstream_of(result.routine, p.direct));
  };
  for (Perturbation& p : perturbations) reach(p);
  for (const auto& [k, ob] : joint) {
    const Application& app = result.applications[perturbations[k].application];
    const UpstreamOf upstream = [&, k = k](const std::string& node) {
      return upstream_of(perturbations, plans, k, node);
    };
    std::string why;
    if (auto p = bounded_checker(app, *ob)->joint_plan(original, app, *ob, upstream, kExpUlp, &why)) {
      perturbations[k].direct.merge(perturbed_by(*p));
      perturbations[k].plan = plans.size();
      plans.push_back(std::move(*p));
      reach(perturbations[k]);
    } else {
      plan.notes.push_back(
          fmt::format("{} on {}: {}", ob->claim, ob->covers.empty() ? "?" : ob->covers[0].node, why));
    }
  }
  std::vector<const DownstreamPlan*> used;
  std::vector<std::string> watched;
  std::set<std::string> contested;                              // checks that do not hold alone
  std::vector<std::pair<std::string, std::string>> plan_notes;  // (node, why it has no bound)
  for (std::size_t k = 0; k < perturbations.size(); ++k) {
    if (!perturbations[k].plan) continue;
    const DownstreamPlan& pl = plans[*perturbations[k].plan];
    for (const auto& c : pl.checks) {
      if (!alone(perturbations, k, c.node)) {
        contested.insert(c.node);
        continue;
      }
      plan.certified[c.node] = c;
      plan.statements[c.node] = statement_of(pl, c);
    }
    for (std::size_t i = 0; i < pl.notes.size(); ++i)
      plan_notes.emplace_back(i < pl.note_nodes.size() ? pl.note_nodes[i] : "", pl.notes[i]);
    watched.insert(watched.end(), pl.watched.begin(), pl.watched.end());
    if (pl.complete) plan.completions.push_back(pl.complete);
    used.push_back(&pl);
  }
  // Outputs the claims reach in the rewritten routine that only accumulate products of factors with
  // certified checks (a projection's gradients from dQ, dK and dV) get a bound carried from those
  // checks, internal nodes' included; the others get the stand-in.
  PerturbedNodes perturbed;
  perturbed.checks = plan.certified;
  for (const Perturbation& p : perturbations) perturbed.reached.insert(p.reaches.begin(), p.reaches.end());
  const std::set<std::string> reached = downstream_of(result.routine, covered);
  for (const Node* n : result.routine.outputs()) {
    if (!reached.count(n->name) || plan.certified.count(n->name)) continue;
    std::string why;
    if (auto acc = accumulation_plan(original, result.routine, n->name, perturbed, &why)) {
      plan.certified[n->name] = acc->checks[0];
      plan.statements[n->name] = acc->bounds[0].formula;
      watched.insert(watched.end(), acc->watched.begin(), acc->watched.end());
      plan.completions.push_back(acc->complete);
    } else {
      plan.stand_in.insert(n->name);
    }
  }
  // A plan's note on a node matters where that node is an output of the rewrite without a certified
  // check (the original's intermediates a rewrite removed, or outputs another plan certifies, not).
  auto uncertified_output = [&](const std::string& node) {
    const Node* n = result.routine.find_node(node);
    return n && n->is_output && !plan.certified.count(node);
  };
  for (const auto& [node, why] : plan_notes)
    if (node.empty() || uncertified_output(node)) plan.notes.push_back(why);
  for (const std::string& node : contested)
    if (uncertified_output(node))
      plan.notes.push_back(fmt::format("{}: perturbed by more than one bounded claim", node));
  // One note per reason (two plans of one application may give the same).
  std::vector<std::string> unique_notes;
  for (std::string& n : plan.notes)
    if (std::find(unique_notes.begin(), unique_notes.end(), n) == unique_notes.end())
      unique_notes.push_back(std::move(n));
  plan.notes = std::move(unique_notes);
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
  // The original runs with its own outputs, the plans' Σ|w·v| nodes and what their completions read.
  plan.source = instrument_source(original, used, watched, true);
  return plan;
}

void RewriteDiffPlan::complete(TensorMap& source_outputs, const RunRoutine& run) {
  for (const auto& c : completions)
    for (const Uncertified& u : c(source_outputs, run)) {
      if (!certified.erase(u.node)) continue;
      statements.erase(u.node);
      stand_in.insert(u.node);
      notes.push_back(fmt::format("{}: {}", u.node, u.why));
    }
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
