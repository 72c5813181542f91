#include "verify/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/diagnostic.h"
#include "flashproof/version.h"
#include "verify/baseline.h"
#include "verify/bounds/rounding_model.h"
#include "verify/junit.h"
#include "verify/sarif.h"

namespace fp::verify {

using nlohmann::json;

namespace {

std::string covers_text(const Verdict& v) {
  std::string s;
  for (const auto& c : v.covers) s += (s.empty() ? "" : ",") + c.node;
  return s.empty() ? "-" : s;
}

// The SARIF rule of a verdict: its rewrite (shape) id.
std::string rule_of(const Verdict& v) {
  return v.rewrite.empty() ? "translation-validation" : v.rewrite;
}

std::string short_scope(const Verdict& v) {
  if (!v.proved()) return "-";
  return v.scope.all_sizes ? "all sizes" : "sizes as given";
}


std::string limits_text(const Limits& l) {
  const std::string reals = l.real_n > 0 ? fmt::format("reals n <= {} ({} s per query)", l.real_n, l.real_timeout_s)
                                         : fmt::format("reals only without the induction ({} s per query)",
                                                       l.real_timeout_s);
  return fmt::format(
      "rlimit {}, timeout {} s, max terms {}, search {} trials, {}, MPFR {} rows at {} bits, seed {}, budget {} s "
      "per obligation",
      l.rlimit, l.timeout_s, l.max_terms, l.search_trials, reals, l.mpfr_rows, l.mpfr_bits, l.seed, l.budget_s);
}

json summary_json(const Summary& s, const std::vector<Finding>& findings) {
  const FindingCounts f = count_findings(findings);
  return {{"total", s.total},     {"exact", s.exact},           {"bounded", s.bounded},
          {"refuted", s.refuted}, {"unknown", s.unknown},       {"error", s.error},
          {"cached", s.cached},   {"declines", f.declines},     {"nothing_applied", f.nothing_applied},
          {"lost", f.lost}};
}

std::string summary_line(const Summary& s, double seconds) {
  return fmt::format(
      "summary: {} obligation{}: {} exact, {} bounded, {} refuted, {} unknown, {} error ({} cached) in "
      "{:.2f} s",
      s.total, s.total == 1 ? "" : "s", s.exact, s.bounded, s.refuted, s.unknown, s.error, s.cached, seconds);
}

}  // namespace

Summary summarize(const std::vector<Verdict>& verdicts) {
  Summary s;
  for (const auto& v : verdicts) {
    ++s.total;
    s.cached += v.cached;
    switch (v.kind) {
      case VerdictKind::Exact:
        ++s.exact;
        break;
      case VerdictKind::Bounded:
        ++s.bounded;
        break;
      case VerdictKind::Refuted:
        ++s.refuted;
        break;
      case VerdictKind::Unknown:
        ++s.unknown;
        break;
      case VerdictKind::Error:
        ++s.error;
        break;
    }
  }
  return s;
}

int exit_code_for(const std::vector<Verdict>& verdicts, FailOn fail_on) {
  Summary s = summarize(verdicts);
  if (s.refuted) return kExitRefuted;
  if (s.error) return kExitMalformed;
  if (s.unknown && fail_on == FailOn::Unknown) return kExitUnknown;
  return kExitOk;
}

namespace {

std::string verdict_cell(const Verdict& v) {
  std::string verdict = verdict_kind_name(v.kind);
  if (v.kind == VerdictKind::Unknown) verdict += fmt::format(" ({})", unknown_reason_name(v.reason));
  if (v.kind == VerdictKind::Bounded && v.bound) verdict += fmt::format(" (rel {:.3g})", v.bound->value);
  return verdict;
}

std::string verdict_location(const Verdict& v) { return location_text(v.file, v.line); }

// Rows of equal-width columns, two spaces apart.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> w;
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) line += i + 1 < r.size() ? fmt::format("{:<{}}  ", r[i], w[i]) : r[i];
    out += line + "\n";
  }
  return out;
}

// The full block of one verdict (--details).
std::string verdict_details(const Verdict& v) {
  std::string out = fmt::format("\n{} {}: {}\n  {}\n", v.id, v.claim, verdict_headline(v), v.message);
  if (v.proved()) out += "  scope: " + v.scope.text + "\n";
  if (v.bound) {
    const BoundInfo& b = *v.bound;
    out += fmt::format("  bound: {}\n  instantiated: {}\n", b.formula, b.instantiated);
    out += fmt::format("  worst observed: {:.3g} of the bound (differential); tightness on MPFR rows: {:.3g}\n",
                       b.worst_observed, b.tightness);
    for (const auto& d : b.downstream)
      out += fmt::format("  downstream {}: rho = {:.3g} relative to {}; worst observed {:.3g} of it\n", d.node,
                         d.value, d.relative_to, d.worst_observed);
    for (const auto& p : b.parts) out += fmt::format("  {} [{}]: {}\n", p.name, p.status, p.detail);
  }
  return out;
}

// What a verdict that is not proved needs on screen: why, the counterexample (its inputs inline)
// and the commands that replay and reproduce it.
std::string unproved_block(const Verdict& v) {
  std::string out = fmt::format("\n{} {} ({}): {}\n  {}\n", verdict_location(v), v.id, v.rewrite.empty() ? "pair" : v.rewrite,
                                verdict_headline(v), v.message);
  if (v.counterexample) {
    const Counterexample& c = *v.counterexample;
    if (!c.summary.empty()) out += "  differs: " + c.summary + "\n";
    for (const auto& line : c.inputs) out += "    " + line + "\n";
    out += fmt::format("  counterexample: {}\n  replay: {}\n", c.dir, c.replay);
  }
  out += "  repro: " + v.repro + "\n";
  return out;
}

std::string finding_block(const Finding& f, bool fails) {
  std::string what = f.kind == FindingKind::Decline        ? "declined " + f.rule
                     : f.kind == FindingKind::NothingApplied ? std::string("nothing applied")
                                                           : std::string("lost proof");
  std::string out = fmt::format("{}  {} [{}]{}: {}\n", finding_location(f), what, f.code, fails ? " (fails the gate)" : "",
                                f.sentence);
  if (!f.hint.empty()) out += "  hint: " + f.hint + "\n";
  return out;
}

std::string findings_summary(const std::vector<Finding>& findings) {
  const FindingCounts c = count_findings(findings);
  const int declines = c.declines, nothing = c.nothing_applied, lost = c.lost;
  std::string out = fmt::format("{} decline{}, {} program{} with nothing applied", declines, declines == 1 ? "" : "s",
                                nothing, nothing == 1 ? "" : "s");
  if (lost) out += fmt::format(", {} lost proof{}", lost, lost == 1 ? "" : "s");
  return out;
}

json finding_json(const Finding& f, std::size_t obligations, const Gate& gate) {
  json j{{"kind", finding_kind_name(f.kind)},
         {"rule", f.rule},
         {"code", f.code},
         {"location", {{"file", f.file}, {"line", f.line}}},
         {"anchor", f.anchor},
         {"sentence", f.sentence},
         {"hint", f.hint},
         {"key", f.key},
         {"fails", finding_fails(f, obligations, gate)}};
  return j;
}

json baseline_json_of(const Gate& gate) {
  if (!gate.baseline) return nullptr;
  json regressions = json::array();
  for (const auto& r : gate.baseline->regressions) {
    const char* kind = r.kind == RegressionKind::Verdict    ? "verdict"
                       : r.kind == RegressionKind::Narrower ? "narrower"
                       : r.kind == RegressionKind::Finding  ? "finding"
                                                            : "lost";
    regressions.push_back({{"kind", kind}, {"key", r.key}, {"sentence", r.sentence}});
  }
  return {{"path", gate.baseline->path}, {"known", gate.baseline->known.size()}, {"regressions", regressions}};
}

std::string joined_inputs(const ReportContext& ctx) {
  std::string s;
  for (const auto& i : ctx.inputs) s += (s.empty() ? "" : ", ") + i;
  return s;
}

}  // namespace

std::string report_text(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  std::string out = fmt::format("flashproof verify: {}{}\n", joined_inputs(ctx),
                                ctx.config.empty() ? "" : " (" + ctx.config + ")");
  if (ctx.details && !verdicts.empty()) {
    out += fmt::format("solver: z3 {}; limits: {}\n", verdicts[0].solver.version, limits_text(verdicts[0].limits));
    out += "exp assumption: " + exp_assumption_text(verdicts[0].limits.exp_ulp) + "\n";
  }
  for (const auto& n : ctx.notes) out += "note: " + n + "\n";
  if (!verdicts.empty()) {
    std::vector<std::vector<std::string>> rows = {{"where", "obligation", "rewrite", "covers", "verdict", "scope", "time"}};
    for (const auto& v : verdicts)
      rows.push_back({verdict_location(v), v.id, v.rewrite.empty() ? "-" : v.rewrite, covers_text(v), verdict_cell(v),
                      short_scope(v), v.cached ? "cached" : fmt::format("{:.2f}s", v.seconds)});
    out += "\n" + table(rows);
  }
  if (!ctx.findings.empty()) {
    out += "\n";
    for (const auto& f : ctx.findings) out += finding_block(f, finding_fails(f, verdicts.size(), ctx.gate));
  }
  for (const auto& v : verdicts) {
    if (ctx.details)
      out += verdict_details(v) + (v.proved() ? "" : unproved_block(v));
    else if (!v.proved())
      out += unproved_block(v);
  }
  if (ctx.gate.baseline && !ctx.gate.baseline->regressions.empty()) {
    out += fmt::format("\nregressions against the baseline {}:\n", ctx.gate.baseline->path);
    for (const auto& r : ctx.gate.baseline->regressions) out += "  " + r.sentence + "\n";
  }
  out += "\n" + summary_line(summarize(verdicts), ctx.seconds) + "; " + findings_summary(ctx.findings);
  if (ctx.inputs.size() > 1) out += fmt::format("; {} inputs", ctx.inputs.size());
  out += "\n" + gate_line(verdicts, ctx.findings, ctx.gate) + "\n";
  if (!ctx.details && !verdicts.empty()) out += "(--details: the solver, the limits and each verdict's certificate)\n";
  return out;
}

std::string report_json(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  json vs = json::array();
  for (const auto& v : verdicts) {
    json j = to_json(v);
    j["key"] = obligation_key(v);
    j["fails"] = verdict_fails(v, ctx.gate);
    vs.push_back(std::move(j));
  }
  json fs = json::array();
  for (const auto& f : ctx.findings) fs.push_back(finding_json(f, verdicts.size(), ctx.gate));
  json j{{"$schema", kReportSchemaId},
         {"schema_version", kReportSchemaVersion},
         {"tool", {{"name", "flashproof"}, {"version", FLASHPROOF_VERSION}}},
         {"command", ctx.command},
         {"input", joined_inputs(ctx)},
         {"inputs", ctx.inputs},
         {"config", ctx.config},
         {"fail_on", ctx.gate.fail_on == FailOn::Unknown ? "unknown" : "refuted"},
         {"expect", expect_name(ctx.gate.expect)},
         {"exit_code", gate_exit_code(verdicts, ctx.findings, ctx.gate)},
         {"gate", gate_line(verdicts, ctx.findings, ctx.gate)},
         {"seconds", ctx.seconds},
         {"notes", ctx.notes},
         {"summary", summary_json(summarize(verdicts), ctx.findings)},
         {"verdicts", vs},
         {"findings", fs},
         {"baseline", baseline_json_of(ctx.gate)}};
  return j.dump(2) + "\n";
}

std::string report_jsonl(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  std::string out;
  for (const auto& v : verdicts) out += to_json(v).dump() + "\n";
  for (const auto& f : ctx.findings) out += json{{"finding", finding_json(f, verdicts.size(), ctx.gate)}}.dump() + "\n";
  json s{{"summary", summary_json(summarize(verdicts), ctx.findings)},
         {"schema_version", kReportSchemaVersion},
         {"exit_code", gate_exit_code(verdicts, ctx.findings, ctx.gate)},
         {"gate", gate_line(verdicts, ctx.findings, ctx.gate)},
         {"seconds", ctx.seconds}};
  return out + s.dump() + "\n";
}

std::string report_junit(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  using Outcome = JUnitCase::Outcome;
  JUnitReport r;
  r.name = "flashproof verify";
  r.suite = joined_inputs(ctx);
  r.seconds = ctx.seconds;
  for (const auto& v : verdicts) {
    JUnitCase c;
    c.classname = v.rewrite.empty() ? "pair" : v.rewrite;
    c.name = fmt::format("{} {} {}", v.file, v.id, covers_text(v));
    c.seconds = v.seconds;
    if (v.proved() && !verdict_fails(v, ctx.gate)) {
      c.text = verdict_headline(v);
    } else {
      const bool fails = verdict_fails(v, ctx.gate);
      c.outcome = !fails ? Outcome::Skipped : v.kind == VerdictKind::Error ? Outcome::Error : Outcome::Failed;
      c.type = verdict_kind_name(v.kind);
      c.message = verdict_headline(v) + (fails ? "" : ctx.gate.baseline ? " (in the baseline)" : " (the gate accepts it)");
      c.text = v.message + (v.counterexample ? "\nreplay: " + v.counterexample->replay : "") + "\nrepro: " + v.repro;
    }
    r.cases.push_back(std::move(c));
  }
  for (const auto& f : ctx.findings) {
    JUnitCase c;
    c.classname = f.rule;
    c.name = fmt::format("{} {} [{}]", finding_location(f), finding_kind_name(f.kind), f.code);
    const bool fails = finding_fails(f, verdicts.size(), ctx.gate);
    c.outcome = fails ? Outcome::Failed : Outcome::Skipped;
    c.type = finding_kind_name(f.kind);
    c.message = f.sentence;
    c.text = f.hint.empty() ? f.sentence : f.sentence + "\nhint: " + f.hint;
    r.cases.push_back(std::move(c));
  }
  return junit_xml(r);
}

namespace {

// A rule's help text (SARIF rule.help): what its results mean and what to do about them.
std::string rule_help(const std::string& id) {
  if (id == kNothingAppliedRule)
    return "The rewrite tier applied nothing to the program, so nothing about it was proved. Enable a member "
           "(--set KEY=true or --profile approximate; flashproof list-rewrites lists them), or write the program "
           "in the form a shape matches (flashproof rewrite FILE --explain says why each candidate declined).";
  if (id == kBaselineRule)
    return "An obligation the baseline proved is gone: its rewrite no longer applies to the program. See the "
           "program's declines, or record the change with verify --write-baseline.";
  if (id == "translation-validation")
    return "A hand-written source/target pair checked against its claim (exact: bitwise; bounded: within a "
           "registered rewrite's certified bound or a stated relative bound). A proved pair is a pass; a "
           "refuted one comes with a counterexample case and the command that replays it.";
  return fmt::format(
      "Obligations of the rewrite {} and its declines. A proved obligation (exact: bitwise for every input; "
      "bounded: within a certified rounding bound) is a pass. Refuted comes with a minimized counterexample "
      "case and its replay command; unknown says why (timeout, resource limit, unsupported construct) and is "
      "never a proof. A decline names the code, the sentence and a hint on how to write the program so that "
      "the shape matches (each member's documentation lists its codes; flashproof rewrite FILE --explain shows the search).",
      id);
}

}  // namespace

std::string report_sarif(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  SarifLog log;
  log.source_root = ctx.source_root;
  log.invocation = SarifInvocation{ctx.command, gate_exit_code(verdicts, ctx.findings, ctx.gate)};
  std::set<std::string> rules;
  for (const auto& v : verdicts) rules.insert(rule_of(v));
  for (const auto& f : ctx.findings) rules.insert(f.rule);
  for (const auto& id : rules) {
    const std::string description = id == kNothingAppliedRule ? "programs the rewrite tier left as they were"
                                    : id == kBaselineRule      ? "proofs a baseline had that this run lost"
                                                               : "verification obligations and declines of " + id;
    log.rules.push_back({id, description, rule_help(id)});
  }
  for (const auto& v : verdicts) {
    SarifResult r;
    r.rule_id = rule_of(v);
    // SARIF 2.1.0 §3.27.10: a kind other than "fail" takes level "none" (a proved obligation is no
    // alert); an unknown is a failure to prove, a warning unless the gate fails on it.
    r.level = "none";
    r.kind = "pass";
    if (v.kind == VerdictKind::Refuted || v.kind == VerdictKind::Error) {
      r.level = "error";
      r.kind = "fail";
    } else if (v.kind == VerdictKind::Unknown || verdict_fails(v, ctx.gate)) {
      r.level = verdict_fails(v, ctx.gate) ? "error" : "warning";
      r.kind = "fail";
    }
    r.message = fmt::format("{} {}: {} — {}", v.id, v.claim, verdict_headline(v), v.message);
    r.uri = v.file;
    r.line = v.line;
    r.baseline_state = baseline_state(obligation_key(v), ctx.gate);
    r.properties = {{"verdict", verdict_kind_name(v.kind)},
                    {"obligation", v.id},
                    {"key", obligation_key(v)},
                    {"claim", v.claim},
                    {"scope", v.scope.text},
                    {"repro", v.repro}};
    log.results.push_back(std::move(r));
  }
  for (const auto& f : ctx.findings) {
    SarifResult r;
    r.rule_id = f.rule;
    r.kind = "fail";
    r.level = finding_fails(f, verdicts.size(), ctx.gate) ? "error"
              : f.kind == FindingKind::Decline          ? "note"
                                                        : "warning";
    r.message = fmt::format("{} [{}]: {}{}", finding_kind_name(f.kind), f.code, f.sentence,
                            f.hint.empty() ? "" : " Hint: " + f.hint);
    r.uri = f.file;
    r.line = f.line;
    r.baseline_state = f.kind == FindingKind::Lost ? "absent" : baseline_state(f.key, ctx.gate);
    r.properties = {{"finding", finding_kind_name(f.kind)}, {"code", f.code}, {"key", f.key}, {"anchor", f.anchor}};
    log.results.push_back(std::move(r));
  }
  return sarif_json(log);
}

std::string render_report(const std::string& format, const std::vector<Verdict>& verdicts,
                          const ReportContext& ctx) {
  if (format == "json") return report_json(verdicts, ctx);
  if (format == "jsonl") return report_jsonl(verdicts, ctx);
  if (format == "junit") return report_junit(verdicts, ctx);
  if (format == "sarif") return report_sarif(verdicts, ctx);
  return report_text(verdicts, ctx);
}

}  // namespace fp::verify
