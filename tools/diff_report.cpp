// `flashproof diff`'s verify adapter (tools/diff_report.h).

#include "tools/diff_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/diagnostic.h"
#include "flashproof/version.h"
#include "verify/report.h"

namespace fp::cli {

namespace {

// "agree", "mismatch" (a bitwise or certified comparison fails) or "outside-stand-in".
const char* output_status(const OutputComparison& c) {
  if (c.ok) return "agree";
  return c.basis == ComparisonBasis::StandIn ? "outside-stand-in" : "mismatch";
}

// The worst error as a fraction of what the comparison allows.
double worst_fraction(const OutputComparison& c) {
  if (c.basis == ComparisonBasis::Certified) return c.worst;
  return c.bound > 0 ? c.worst / c.bound : 0;
}

nlohmann::json output_json(const OutputComparison& c) {
  nlohmann::json j = {{"node", c.node},
                      {"comparison", comparison_basis_name(c.basis)},
                      {"cells", c.cells},
                      {"mismatches", c.mismatches},
                      {"status", output_status(c)}};
  if (c.basis != ComparisonBasis::Bitwise) {
    j["bound"] = c.bound;
    j["worst_fraction_of_bound"] = worst_fraction(c);
  }
  if (c.basis == ComparisonBasis::Certified) j["statement"] = c.statement;
  if (c.first)
    j["first_mismatch"] = {
        {"cell", c.first->cell}, {"a", c.first->a}, {"b", c.first->b}, {"why", c.first->why}};
  return j;
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
  for (const auto& c : r.outputs) outs.push_back(output_json(c));
  j["outputs"] = outs;
  if (!r.case_dir.empty()) j["case"] = {{"dir", r.case_dir}, {"replay", r.replay}};
  return j;
}

}  // namespace

OutputComparison compare_certified(const std::string& node, const Tensor& a, const Tensor& b,
                                   const verify::NodeCheck& check, const Tensor* scale,
                                   const std::string& statement) {
  OutputComparison c;
  c.node = node;
  c.basis = ComparisonBasis::Certified;
  c.statement = statement;
  c.bound = check.rel;
  c.cells = a.size();
  if (a.dims != b.dims || a.prec != b.prec || (scale && scale->data.size() != a.data.size())) {
    c.ok = false;
    c.mismatches = c.cells;
    c.first = CellMismatch{0, "[]", 0, 0, "the two outputs have different types"};
    return c;
  }
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const double r = verify::cell_ratio(check, a.data[i], b.data[i], scale ? scale->data[i] : 0);
    c.worst = std::max(c.worst, std::isinf(r) ? 1.0 : r);
    if (r <= 1) continue;
    ++c.mismatches;
    c.ok = false;
    if (c.first) continue;
    c.first = CellMismatch{static_cast<std::int64_t>(i), cell_text(a.dims, static_cast<std::int64_t>(i)),
                           a.data[i], b.data[i],
                           std::isinf(r) ? std::string("NaN or infinity on one side only")
                                         : fmt::format("error {:.3g}x the certified bound", r)};
  }
  return c;
}

std::string render_diff_report(const DiffReport& r, const std::string& format) {
  if (format == "json") return report_json(r).dump(2) + "\n";
  if (format == "jsonl") {
    std::string out;
    for (const auto& c : r.outputs) {
      nlohmann::json j = output_json(c);
      j["record"] = "output";
      j["file"] = r.file;
      out += j.dump() + "\n";
    }
    nlohmann::json s = report_json(r);
    s.erase("outputs");
    s["record"] = "summary";
    return out + s.dump() + "\n";
  }
  if (format == "junit") {
    int failures = 0, stand_in = 0;
    for (const auto& c : r.outputs) {
      failures += !c.ok && c.basis != ComparisonBasis::StandIn;
      stand_in += !c.ok && c.basis == ComparisonBasis::StandIn;
    }
    const bool unknown = (r.verdict == "unknown" || r.verdict == "error") && stand_in == 0;
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format("<testsuites name=\"flashproof diff\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
                       std::max<std::size_t>(r.outputs.size(), 1), failures, (unknown ? 1 : 0) + stand_in);
    out += fmt::format("  <testsuite name=\"{} {} vs {}{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
                       verify::xml_escape(r.file), verify::xml_escape(r.executor_a), verify::xml_escape(r.executor_b),
                       r.rewrite ? " (rewrite)" : "", std::max<std::size_t>(r.outputs.size(), 1), failures,
                       (unknown ? 1 : 0) + stand_in);
    if (unknown) {
      out += fmt::format("    <testcase name=\"{}\" classname=\"diff\"><error message=\"{}\"/></testcase>\n",
                         verify::xml_escape(r.file), verify::xml_escape(r.message));
    }
    for (const auto& c : r.outputs) {
      out += fmt::format("    <testcase name=\"{}\" classname=\"diff.{}\">", verify::xml_escape(c.node),
                         comparison_basis_name(c.basis));
      if (!c.ok)
        out += fmt::format("<{} message=\"{} at {}: {} vs {}\"/>",
                           c.basis == ComparisonBasis::StandIn ? "error" : "failure", verify::xml_escape(c.first->why),
                           verify::xml_escape(c.first->cell), c.first->a, c.first->b);
      out += "</testcase>\n";
    }
    out += "  </testsuite>\n</testsuites>\n";
    return out;
  }
  if (format == "sarif") {
    nlohmann::json results = nlohmann::json::array();
    for (const auto& c : r.outputs) {
      if (c.ok) continue;
      const bool stand_in = c.basis == ComparisonBasis::StandIn;
      results.push_back(
          {{"ruleId", stand_in ? "diff.unknown" : r.rewrite ? "diff.rewrite" : "diff.executors"},
           {"level", stand_in ? "warning" : "error"},
           {"message",
            {{"text", fmt::format("output '{}' differs between {} and {} at {}: {} ({} vs {}); replay: {}",
                                  c.node, r.executor_a, r.executor_b, c.first->cell, c.first->why, c.first->a,
                                  c.first->b, r.replay)}}},
           {"locations", {{{"physicalLocation", {{"artifactLocation", {{"uri", r.file}}}}}}}}});
    }
    if ((r.verdict == "unknown" || r.verdict == "error") && r.outputs.empty())
      results.push_back({{"ruleId", "diff.unknown"},
                         {"level", "warning"},
                         {"message", {{"text", r.message}}},
                         {"locations", {{{"physicalLocation", {{"artifactLocation", {{"uri", r.file}}}}}}}}});
    nlohmann::json sarif = {
        {"version", "2.1.0"},
        {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
        {"runs",
         {{{"tool",
            {{"driver",
              {{"name", "flashproof"},
               {"version", FLASHPROOF_VERSION},
               {"rules",
                {{{"id", "diff.executors"}, {"shortDescription", {{"text", "two executors disagree"}}}},
                 {{"id", "diff.rewrite"},
                  {"shortDescription", {{"text", "a rewrite changes an output beyond its claim"}}}},
                 {{"id", "diff.unknown"},
                  {"shortDescription", {{"text", "the comparison could not be made"}}}}}}}}}},
           {"results", results}}}}};
    return sarif.dump(2) + "\n";
  }
  // text
  std::string out =
      fmt::format("diff {}: {} vs {}{}, inputs {}\n", r.file, r.executor_a, r.executor_b,
                  r.rewrite ? " (original on the first, rewritten on the second)" : "", r.inputs);
  for (const auto& c : r.claims) out += "  claim " + c + "\n";
  for (const auto& c : r.outputs) {
    out += fmt::format("  {:<16} {:<9} {:>9} cells  {}", c.node, comparison_basis_name(c.basis), c.cells,
                       c.ok ? "agree"
                       : c.basis == ComparisonBasis::StandIn
                           ? fmt::format("OUTSIDE THE STAND-IN ({} cells)", c.mismatches)
                           : fmt::format("MISMATCH ({} cells)", c.mismatches));
    if (c.basis != ComparisonBasis::Bitwise)
      out += fmt::format("  worst {:.3g} of the bound", worst_fraction(c));
    if (c.basis == ComparisonBasis::Certified) out += "\n    bound: " + c.statement;
    out += "\n";
    if (c.first)
      out += fmt::format("    first at {}: {} vs {} ({})\n", c.first->cell, c.first->a, c.first->b,
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
