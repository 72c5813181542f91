// `flashproof diff`'s verify adapter (tools/diff_report.h).

#include "tools/diff_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/diagnostic.h"
#include "flashproof/version.h"
#include "verify/junit.h"
#include "verify/sarif.h"

namespace fp::cli {

namespace {

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
  log.rules = {{"diff.executors", "two executors disagree",
                "Two executors computed an output differently beyond its tolerance; the message names the cell, the "
                "two values and the command that replays the comparison."},
               {"diff.rewrite", "a rewrite changes an output beyond its claim",
                "The rewritten program's output differs from the original's beyond what the rewrite claims; the "
                "message names the cell and the replay command."},
               {"diff.unknown", "the comparison could not be made",
                "The comparison was not made (a stand-in executor, an unsupported construct); the message says "
                "why. It is no evidence either way."}};
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
