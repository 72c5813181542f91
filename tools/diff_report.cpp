// `flashproof diff`'s verify adapter (tools/diff_report.h).

#include "tools/diff_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/diagnostic.h"
#include "flashproof/version.h"
#include "core/access_census.h"
#include "verify/bounds/bound_formula.h"
#include "verify/downstream_bounds.h"
#include "verify/junit.h"
#include "verify/sarif.h"

namespace fp::cli {

namespace {

constexpr double kExpUlp = 0.52;  // fp_exp64's assumed error (docs/semantics.md)

// The stand-in tolerance for outputs a bounded claim reaches without a certified bound: the
// normalizer's certified REL carried through P = e / l and Σ P·v, or, where the formula has no
// certified form, 8·(n + 2)·u_state + 4·u_storage.
double stand_in_tolerance(const Obligation& o) {
  const BoundTerms t = o.bound.value_or(BoundTerms{});
  const verify::NormalizerBound nb = verify::normalizer_bound(t.storage, t.state, t.terms, kExpUlp);
  if (!nb.defined)
    return 8.0 * static_cast<double>(t.terms + 2) * verify::unit_roundoff(t.state) +
           4.0 * verify::unit_roundoff(t.storage);
  const double rp = verify::quotient_perturbation(0.0, nb.rel, t.storage);
  return std::max(nb.rel, verify::dot_perturbation(rp, t.terms, t.storage));
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
std::set<std::string> perturbed_by(const verify::DownstreamPlan& p) {
  std::set<std::string> s(p.unbounded.begin(), p.unbounded.end());
  for (const auto& c : p.checks) s.insert(c.node);
  return s;
}

std::string statement_of(const verify::DownstreamPlan& p, const verify::NodeCheck& c) {
  for (const auto& b : p.bounds)
    if (b.node == c.node) return fmt::format("{}; here rho = {:.3g}", b.formula, b.value);
  return fmt::format("|{0}_tgt - {0}_src| <= REL·|{0}_src|, REL = {1:.3g} (certified normalizer bound)", c.node,
                     c.rel);
}

using verify::NodeCheck;
using verify::OutputComparison;

bool stand_in(const OutputComparison& c) {
  return c.check.kind == NodeCheck::Kind::StandIn;
}
bool certified(const OutputComparison& c) {
  return c.check.kind == NodeCheck::Kind::Relative || c.check.kind == NodeCheck::Kind::Scaled;
}

// "agree", "mismatch" (a bitwise or certified comparison fails) or "outside-stand-in".
const char* output_status(const OutputComparison& c) {
  if (c.ok()) return "agree";
  return stand_in(c) ? "outside-stand-in" : "mismatch";
}

// The worst error as a fraction of what the comparison allows; a cell with no finite fraction (a
// NaN or an infinity on one side only) counts as 1, so that the report stays a number.
double worst_fraction(const OutputComparison& c) {
  return c.unbounded ? std::max(c.worst, 1.0) : c.worst;
}

nlohmann::json output_json(const OutputComparison& c, const DiffReport& r) {
  nlohmann::json j = {{"node", c.check.node},
                      {"comparison", verify::comparison_basis_name(c.check.kind)},
                      {"cells", c.cells},
                      {"mismatches", c.mismatches},
                      {"status", output_status(c)}};
  if (c.check.kind != NodeCheck::Kind::Bitwise) {
    j["bound"] = c.check.rel;
    j["worst_fraction_of_bound"] = worst_fraction(c);
  }
  if (certified(c)) j["statement"] = r.statements.at(c.check.node);
  if (c.first)
    j["first_mismatch"] = {
        {"cell", c.first->cell_text()}, {"a", c.first->src}, {"b", c.first->tgt}, {"why", c.first->why}};
  return j;
}

// Did the comparison not happen (an executor unavailable), with no stand-in output to say so?
bool no_comparison(const DiffReport& r) {
  if (r.verdict != "unknown" && r.verdict != "error") return false;
  for (const auto& c : r.outputs)
    if (!c.ok() && stand_in(c)) return false;
  return true;
}

// One test case per output (a stand-in violation is an error, not a failure), and one error case
// for a comparison that was not made.
std::string diff_junit(const DiffReport& r) {
  using verify::JUnitCase;
  verify::JUnitReport j;
  j.name = "flashproof diff";
  j.suite = fmt::format("{} {} vs {}{}", r.file, r.executor_a, r.executor_b, r.rewrite ? " (rewrite)" : "");
  auto add = [&](std::string classname, std::string name, JUnitCase::Outcome outcome, std::string message) {
    JUnitCase& t = j.cases.emplace_back();
    t.classname = std::move(classname);
    t.name = std::move(name);
    t.outcome = outcome;
    t.message = std::move(message);
  };
  if (no_comparison(r)) add("diff", r.file, JUnitCase::Outcome::Error, r.message);
  for (const auto& c : r.outputs) {
    const std::string classname = fmt::format("diff.{}", verify::comparison_basis_name(c.check.kind));
    if (c.ok())
      add(classname, c.check.node, JUnitCase::Outcome::Passed, "");
    else
      add(classname, c.check.node, stand_in(c) ? JUnitCase::Outcome::Error : JUnitCase::Outcome::Failed,
          fmt::format("{} at {}: {} vs {}", c.first->why, c.first->cell_text(), c.first->src, c.first->tgt));
  }
  return verify::junit_xml(j);
}

// One result per failing output (a stand-in violation is a warning), or one warning for a
// comparison that was not made.
std::string diff_sarif(const DiffReport& r) {
  verify::SarifLog log;
  log.rules = {{"diff.executors", "two executors disagree", ""},
               {"diff.rewrite", "a rewrite changes an output beyond its claim", ""},
               {"diff.unknown", "the comparison could not be made", ""}};
  auto add = [&](std::string rule, std::string level, std::string message) {
    verify::SarifResult& x = log.results.emplace_back();
    x.rule_id = std::move(rule);
    x.level = std::move(level);
    x.message = std::move(message);
    x.uri = r.file;
  };
  for (const auto& c : r.outputs) {
    if (c.ok()) continue;
    add(stand_in(c) ? "diff.unknown"
        : r.rewrite ? "diff.rewrite"
                    : "diff.executors",
        stand_in(c) ? "warning" : "error",
        fmt::format("output '{}' differs between {} and {} at {}: {} ({} vs {}); replay: {}", c.check.node,
                    r.executor_a, r.executor_b, c.first->cell_text(), c.first->why, c.first->src,
                    c.first->tgt, r.replay));
  }
  if ((r.verdict == "unknown" || r.verdict == "error") && r.outputs.empty())
    add("diff.unknown", "warning", r.message);
  return verify::sarif_json(log);
}

nlohmann::json report_json(const DiffReport& r) {
  nlohmann::json j = {{"tool", std::string("flashproof ") + FLASHPROOF_VERSION},
                      {"command", r.command},
                      {"kind", "diff"},
                      {"file", r.file},
                      {"executor_a", r.executor_a},
                      {"executor_b", r.executor_b},
                      {"rewrite", r.rewrite},
                      {"inputs", r.inputs},
                      {"verdict", r.verdict},
                      {"message", r.message},
                      {"claims", r.claims},
                      {"notes", r.notes}};
  nlohmann::json outs = nlohmann::json::array();
  for (const auto& c : r.outputs) outs.push_back(output_json(c, r));
  j["outputs"] = outs;
  if (!r.case_dir.empty()) j["case"] = {{"dir", r.case_dir}, {"replay", r.replay}};
  return j;
}

}  // namespace

RewriteDiffPlan plan_rewrite_diff(const Routine& original, const RewriteResult& result) {
  RewriteDiffPlan plan;
  std::set<std::string> covered;
  std::vector<verify::DownstreamPlan> plans;
  for (const Application& app : result.applications)
    for (const Obligation& ob : app.obligations) {
      if (ob.kind != ObligationKind::Bounded) continue;
      for (const Cover& c : ob.covers) covered.insert(c.node);
      plan.stand_in_bound = std::max(plan.stand_in_bound, stand_in_tolerance(ob));
      // The application's statement positions refer to the routine its round received.
      if (!equal(result.round_input(original, app.round, app.member), original)) {
        plan.notes.push_back(fmt::format("{} at statement {}: applied to an already rewritten routine (round {}), "
                                         "no certified plan against the original",
                                         ob.claim, app.statements.empty() ? 0 : app.statements[0], app.round));
        continue;
      }
      std::string why;
      if (auto p = verify::plan_for_obligation(original, app, ob, kExpUlp, &why))
        plans.push_back(std::move(*p));
      else
        plan.notes.push_back(fmt::format("{} on {}: {}", ob.claim, ob.covers.empty() ? "?" : ob.covers[0].node, why));
    }
  // A check holds only while its claim is the one perturbation reaching the node: a node another
  // claim also perturbs (a second layer fed by the first's output) gets the stand-in.
  std::vector<std::set<std::string>> perturbed;
  for (const auto& p : plans) perturbed.push_back(perturbed_by(p));
  std::vector<const verify::DownstreamPlan*> used;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    for (const auto& c : plans[i].checks) {
      bool alone = true;
      for (std::size_t j = 0; j < plans.size(); ++j) alone = alone && (j == i || !perturbed[j].count(c.node));
      if (!alone) {
        if (const Node* n = result.routine.find_node(c.node); n && n->is_output)
          plan.notes.push_back(fmt::format("{}: perturbed by more than one bounded claim", c.node));
        continue;
      }
      plan.certified[c.node] = c;
      plan.statements[c.node] = statement_of(plans[i], c);
    }
    for (const auto& n : plans[i].notes) plan.notes.push_back(n);
    used.push_back(&plans[i]);
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
  plan.source = verify::instrument_source(original, used, {}, true);
  // Outputs the claims reach in the rewritten routine but that have no certified check.
  const std::set<std::string> reached = downstream_of(result.routine, covered);
  for (const Node* n : result.routine.outputs())
    if (reached.count(n->name) && !plan.certified.count(n->name)) plan.stand_in.insert(n->name);
  return plan;
}

std::string render_diff_report(const DiffReport& r, const std::string& format) {
  if (format == "json") return report_json(r).dump(2) + "\n";
  if (format == "jsonl") {
    std::string out;
    for (const auto& c : r.outputs) {
      nlohmann::json j = output_json(c, r);
      j["record"] = "output";
      j["file"] = r.file;
      out += j.dump() + "\n";
    }
    nlohmann::json s = report_json(r);
    s.erase("outputs");
    s["record"] = "summary";
    return out + s.dump() + "\n";
  }
  if (format == "junit") return diff_junit(r);
  if (format == "sarif") return diff_sarif(r);
  // text
  std::string out =
      fmt::format("diff {}: {} vs {}{}, inputs {}\n", r.file, r.executor_a, r.executor_b,
                  r.rewrite ? " (original on the first, rewritten on the second)" : "", r.inputs);
  for (const auto& c : r.claims) out += "  claim " + c + "\n";
  for (const auto& c : r.outputs) {
    out += fmt::format("  {:<16} {:<9} {:>9} cells  {}", c.check.node,
                       verify::comparison_basis_name(c.check.kind), c.cells,
                       c.ok()        ? "agree"
                       : stand_in(c) ? fmt::format("OUTSIDE THE STAND-IN ({} cells)", c.mismatches)
                                     : fmt::format("MISMATCH ({} cells)", c.mismatches));
    if (c.check.kind != NodeCheck::Kind::Bitwise)
      out += fmt::format("  worst {:.3g} of the bound", worst_fraction(c));
    if (certified(c)) out += "\n    bound: " + r.statements.at(c.check.node);
    out += "\n";
    if (c.first)
      out += fmt::format("    first at {}: {} vs {} ({})\n", c.first->cell_text(), c.first->src, c.first->tgt,
                         c.first->why);
  }
  for (const auto& n : r.notes) out += "  note: " + n + "\n";
  out += fmt::format("{}: {}\n", r.verdict, r.message);
  if (!r.case_dir.empty()) out += fmt::format("case written to {}\nreplay: {}\n", r.case_dir, r.replay);
  return out;
}

int diff_exit_code(const DiffReport& r, bool fail_on_unknown) {
  if (r.verdict == "mismatch") return kExitRefuted;
  if (r.verdict == "unknown") return fail_on_unknown ? kExitUnknown : kExitOk;
  if (r.verdict == "error") return kExitInternal;
  return kExitOk;
}

}  // namespace fp::cli
