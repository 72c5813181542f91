#include "verify/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/diagnostic.h"
#include "flashproof/version.h"
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

json summary_json(const Summary& s) {
  return {{"total", s.total},     {"exact", s.exact}, {"bounded", s.bounded}, {"refuted", s.refuted},
          {"unknown", s.unknown}, {"error", s.error}, {"cached", s.cached}};
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

std::string report_text(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  std::string out =
      fmt::format("flashproof verify: {}{}\n", ctx.input, ctx.config.empty() ? "" : " (" + ctx.config + ")");
  if (!verdicts.empty()) {
    out += fmt::format("solver: z3 {}; limits: {}\n", verdicts[0].solver.version,
                       limits_text(verdicts[0].limits));
    out += "exp assumption: " + exp_assumption_text(verdicts[0].limits.exp_ulp) + "\n";
  }
  for (const auto& n : ctx.notes) out += "note: " + n + "\n";
  if (!verdicts.empty()) {
    std::vector<std::array<std::string, 7>> rows = {
        {"id", "rewrite", "claim", "covers", "verdict", "scope", "time"}};
    for (const auto& v : verdicts) {
      std::string verdict = verdict_kind_name(v.kind);
      if (v.kind == VerdictKind::Unknown) verdict += fmt::format(" ({})", unknown_reason_name(v.reason));
      if (v.kind == VerdictKind::Bounded && v.bound) verdict += fmt::format(" (rel {:.3g})", v.bound->value);
      rows.push_back({v.id, v.rewrite.empty() ? "-" : v.rewrite, v.claim, covers_text(v), verdict,
                      short_scope(v), v.cached ? "cached" : fmt::format("{:.2f}s", v.seconds)});
    }
    std::array<std::size_t, 7> w{};
    for (const auto& r : rows)
      for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    out += "\n";
    for (const auto& r : rows) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i)
        line += i + 1 < r.size() ? fmt::format("{:<{}}  ", r[i], w[i]) : r[i];
      out += line + "\n";
    }
  }
  for (const auto& v : verdicts) {
    out += fmt::format("\n{} {}: {}\n  {}\n", v.id, v.claim, verdict_headline(v), v.message);
    if (v.proved()) out += "  scope: " + v.scope.text + "\n";
    if (v.bound) {
      const BoundInfo& b = *v.bound;
      out += fmt::format("  bound: {}\n  instantiated: {}\n", b.formula, b.instantiated);
      out += fmt::format(
          "  worst observed: {:.3g} of the bound (differential); tightness on MPFR rows: {:.3g}\n",
          b.worst_observed, b.tightness);
      for (const auto& d : b.downstream)
        out += fmt::format("  downstream {}: rho = {:.3g} relative to {}; worst observed {:.3g} of it\n",
                           d.node, d.value, d.relative_to, d.worst_observed);
      for (const auto& p : b.parts) out += fmt::format("  {} [{}]: {}\n", p.name, p.status, p.detail);
    }
    if (v.counterexample)
      out += fmt::format("  counterexample: {}\n  replay: {}\n", v.counterexample->dir,
                         v.counterexample->replay);
    if (!v.proved()) out += "  repro: " + v.repro + "\n";
  }
  out += "\n" + summary_line(summarize(verdicts), ctx.seconds) + "\n";
  return out;
}

std::string report_json(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  json vs = json::array();
  for (const auto& v : verdicts) vs.push_back(to_json(v));
  json j{{"$schema", kReportSchemaId},
         {"schema_version", kReportSchemaVersion},
         {"tool", {{"name", "flashproof"}, {"version", FLASHPROOF_VERSION}}},
         {"command", ctx.command},
         {"input", ctx.input},
         {"config", ctx.config},
         {"fail_on", ctx.fail_on == FailOn::Unknown ? "unknown" : "refuted"},
         {"exit_code", exit_code_for(verdicts, ctx.fail_on)},
         {"seconds", ctx.seconds},
         {"notes", ctx.notes},
         {"summary", summary_json(summarize(verdicts))},
         {"verdicts", vs}};
  return j.dump(2) + "\n";
}

std::string report_jsonl(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  std::string out;
  for (const auto& v : verdicts) out += to_json(v).dump() + "\n";
  json s{{"summary", summary_json(summarize(verdicts))},
         {"schema_version", kReportSchemaVersion},
         {"exit_code", exit_code_for(verdicts, ctx.fail_on)},
         {"seconds", ctx.seconds}};
  return out + s.dump() + "\n";
}

std::string report_junit(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  using Outcome = JUnitCase::Outcome;
  JUnitReport r;
  r.name = "flashproof verify";
  r.suite = ctx.input;
  r.seconds = ctx.seconds;
  for (const auto& v : verdicts) {
    JUnitCase c;
    c.classname = v.rewrite.empty() ? "pair" : v.rewrite;
    c.name = v.id + " " + covers_text(v);
    c.seconds = v.seconds;
    if (v.proved()) {
      c.text = verdict_headline(v);
    } else {
      // Unknown fails only under --fail-on=unknown.
      c.outcome = v.kind == VerdictKind::Error                                       ? Outcome::Error
                  : v.kind == VerdictKind::Refuted || ctx.fail_on == FailOn::Unknown ? Outcome::Failed
                                                                                     : Outcome::Skipped;
      c.type = verdict_kind_name(v.kind);
      c.message = verdict_headline(v);
      c.text = v.message + (v.counterexample ? "\nreplay: " + v.counterexample->replay : "") +
               "\nrepro: " + v.repro;
    }
    r.cases.push_back(std::move(c));
  }
  return junit_xml(r);
}

std::string report_sarif(const std::vector<Verdict>& verdicts, const ReportContext& ctx) {
  SarifLog log;
  log.invocation = SarifInvocation{ctx.command, exit_code_for(verdicts, ctx.fail_on)};
  std::set<std::string> rules;
  for (const auto& v : verdicts) rules.insert(rule_of(v));
  for (const auto& id : rules)
    log.rules.push_back({id, "verification obligations of " + id, "https://flashproof.dev/docs/verify"});
  for (const auto& v : verdicts) {
    SarifResult r;
    r.rule_id = rule_of(v);
    // SARIF 2.1.0 §3.27.10: a kind other than "fail" takes level "none" (a proved obligation is no
    // alert); an unknown is a failure to prove, a warning unless the run fails on it.
    r.level = "none";
    r.kind = "pass";
    if (v.kind == VerdictKind::Refuted || v.kind == VerdictKind::Error) {
      r.level = "error";
      r.kind = "fail";
    } else if (v.kind == VerdictKind::Unknown) {
      r.level = ctx.fail_on == FailOn::Unknown ? "error" : "warning";
      r.kind = "fail";
    }
    r.message = fmt::format("{} {}: {} — {}", v.id, v.claim, verdict_headline(v), v.message);
    r.uri = v.file;
    r.line = v.line;
    r.properties = {{"verdict", verdict_kind_name(v.kind)},
                    {"obligation", v.id},
                    {"claim", v.claim},
                    {"scope", v.scope.text},
                    {"repro", v.repro}};
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
