// `flashproof diff`'s verify adapter (tools/diff_report.h).

#include "tools/diff_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/diagnostic.h"
#include "flashproof/version.h"
#include "verify/bounds/bound_formula.h"

namespace fp::cli {

namespace {

constexpr double kExpUlp = 0.52;  // fp_exp64's assumed error (docs/semantics.md)

double unit_roundoff(Prec p) {
  switch (p) {
    case Prec::F64:
      return 0x1p-53;
    case Prec::F32:
      return 0x1p-24;
    case Prec::F16:
      return 0x1p-11;
    case Prec::BF16:
      return 0x1p-8;
    case Prec::I32:
      return 0;
  }
  return 0;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += (static_cast<unsigned char>(c) < 32 && c != '\n' && c != '\t') ? '?' : c;
    }
  }
  return out;
}

nlohmann::json output_json(const OutputComparison& c) {
  nlohmann::json j = {{"node", c.node},
                      {"comparison", c.bitwise ? "bitwise" : "bounded"},
                      {"cells", c.cells},
                      {"mismatches", c.mismatches},
                      {"status", c.ok ? "agree" : "mismatch"}};
  if (!c.bitwise) {
    j["bound"] = c.bound;
    j["worst"] = c.worst;
    j["worst_fraction_of_bound"] = c.bound > 0 ? c.worst / c.bound : 0;
  }
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
                      {"bound_source", r.bound_source}};
  nlohmann::json outs = nlohmann::json::array();
  for (const auto& c : r.outputs) outs.push_back(output_json(c));
  j["outputs"] = outs;
  if (!r.case_dir.empty()) j["case"] = {{"dir", r.case_dir}, {"replay", r.replay}};
  return j;
}

}  // namespace

double bounded_claim_tolerance(const Obligation& o) {
  const BoundTerms t = o.bound.value_or(BoundTerms{});
  const verify::NormalizerBound nb = verify::normalizer_bound(t.storage, t.state, t.terms, kExpUlp);
  if (!nb.defined)  // no certified form (e.g. (n-1)·u_storage >= 1): the stand-in
    return 8.0 * static_cast<double>(t.terms + 2) * unit_roundoff(t.state) + 4.0 * unit_roundoff(t.storage);
  // The normalizer's certified REL, carried through the probabilities P = e / l and the value
  // contraction Σ P·v (verify/bounds/bound_formula.h).
  const double rp = verify::quotient_perturbation(0.0, nb.rel, t.storage);
  const double ro = verify::dot_perturbation(rp, t.terms, t.storage);
  return std::max(nb.rel, ro);
}

std::string bounded_claim_tolerance_source() {
  return "verify's certified normalizer REL (normalizer_bound, exp within 0.52 ulp) carried through P = e/l "
         "(quotient_perturbation) and Σ P·v (dot_perturbation), applied relative to max(|ref|, rms(ref)) per "
         "tensor (the certified form is relative to Σ|P·v| per cell; tools/diff_report.cpp)";
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
    int failures = 0;
    for (const auto& c : r.outputs) failures += !c.ok;
    const bool unknown = r.verdict == "unknown" || r.verdict == "error";
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format("<testsuites name=\"flashproof diff\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
                       std::max<std::size_t>(r.outputs.size(), 1), failures, unknown ? 1 : 0);
    out += fmt::format("  <testsuite name=\"{} {} vs {}{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
                       xml_escape(r.file), xml_escape(r.executor_a), xml_escape(r.executor_b),
                       r.rewrite ? " (rewrite)" : "", std::max<std::size_t>(r.outputs.size(), 1), failures,
                       unknown ? 1 : 0);
    if (unknown) {
      out += fmt::format("    <testcase name=\"{}\" classname=\"diff\"><error message=\"{}\"/></testcase>\n",
                         xml_escape(r.file), xml_escape(r.message));
    }
    for (const auto& c : r.outputs) {
      out += fmt::format("    <testcase name=\"{}\" classname=\"diff.{}\">", xml_escape(c.node),
                         c.bitwise ? "bitwise" : "bounded");
      if (!c.ok)
        out += fmt::format("<failure message=\"{} at {}: {} vs {}\"/>", xml_escape(c.first->why),
                           xml_escape(c.first->cell), c.first->a, c.first->b);
      out += "</testcase>\n";
    }
    out += "  </testsuite>\n</testsuites>\n";
    return out;
  }
  if (format == "sarif") {
    nlohmann::json results = nlohmann::json::array();
    for (const auto& c : r.outputs) {
      if (c.ok) continue;
      results.push_back(
          {{"ruleId", r.rewrite ? "diff.rewrite" : "diff.executors"},
           {"level", "error"},
           {"message",
            {{"text", fmt::format("output '{}' differs between {} and {} at {}: {} ({} vs {}); replay: {}",
                                  c.node, r.executor_a, r.executor_b, c.first->cell, c.first->why, c.first->a,
                                  c.first->b, r.replay)}}},
           {"locations", {{{"physicalLocation", {{"artifactLocation", {{"uri", r.file}}}}}}}}});
    }
    if (r.verdict == "unknown" || r.verdict == "error")
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
    out += fmt::format("  {:<16} {:<8} {:>9} cells  {}", c.node, c.bitwise ? "bitwise" : "bounded", c.cells,
                       c.ok ? "agree" : fmt::format("MISMATCH ({} cells)", c.mismatches));
    if (!c.bitwise) out += fmt::format("  worst {:.3g} of bound {:.3g}", c.worst, c.bound);
    out += "\n";
    if (c.first)
      out += fmt::format("    first at {}: {} vs {} ({})\n", c.first->cell, c.first->a, c.first->b,
                         c.first->why);
  }
  if (!r.bound_source.empty()) out += "  bounds: " + r.bound_source + "\n";
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
