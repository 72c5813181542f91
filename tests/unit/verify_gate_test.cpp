// The CI gate (verify/gate.h), its baselines (verify/baseline.h) and findings (verify/findings.h):
// which verdicts and findings fail a run under each setting, the exit code, stable ids, a baseline
// that fails only on what is new or worse, a hostile baseline file, and the findings in every
// report format (SARIF per §3.27.10, with SRCROOT-relative locations).

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"
#include "verify/baseline.h"
#include "verify/findings.h"
#include "verify/gate.h"
#include "verify/report.h"
#include "verify/sarif.h"

namespace fp::verify {
namespace {

Verdict verdict(VerdictKind k, const std::string& file = "attn.fp", const std::string& node = "o",
                bool all_sizes = true) {
  Verdict v;
  v.id = "1.fold-output";
  v.rewrite = "online-softmax.block-fold";
  v.claim = "fold-output";
  v.covers = {Cover{node, node + "[i] for i in 0..3"}};
  v.file = file;
  v.line = 40;
  v.kind = k;
  v.reason = k == VerdictKind::Unknown ? UnknownReason::Timeout : UnknownReason::None;
  v.scope = Scope{all_sizes, all_sizes ? "all sizes" : "sizes as given"};
  v.repro = "flashproof verify " + file;
  return v;
}

Finding decline(const std::string& file = "drop.fp", const std::string& anchor = "row_max") {
  Finding f;
  f.kind = FindingKind::Decline;
  f.file = file;
  f.line = 58;
  f.rule = "online-softmax.block-fold";
  f.code = "value-pass-not-direct";
  f.anchor = anchor;
  f.sentence = "dropout between p and the value pass";
  f.hint = "by design";
  f.key = file + "|" + f.rule + "|" + anchor;
  return f;
}

Gate gate_of(Expect e, FailOn f = FailOn::Unknown) {
  Gate g;
  g.expect = e;
  g.fail_on = f;
  return g;
}

TEST(VerifyGate, ExpectDecidesWhetherFindingsFail) {
  const std::vector<Verdict> proved = {verdict(VerdictKind::Bounded)};
  const std::vector<Finding> declined = {decline()};
  EXPECT_EQ(gate_exit_code(proved, declined, gate_of(Expect::Obligations)), kExitOk);
  EXPECT_EQ(gate_exit_code(proved, declined, gate_of(Expect::Anything)), kExitOk);
  EXPECT_EQ(gate_exit_code(proved, declined, gate_of(Expect::Applied)), kExitExpectation);
  // Nothing proved at all is never green by default.
  const std::vector<Finding> nothing = {nothing_applied("attn.fp", "every member's gate is off", "--set")};
  EXPECT_EQ(gate_exit_code({}, nothing, gate_of(Expect::Obligations)), kExitExpectation);
  EXPECT_EQ(gate_exit_code({}, nothing, gate_of(Expect::Anything)), kExitOk);
  // One program with nothing applied among proved ones fails only under --expect applied.
  EXPECT_EQ(gate_exit_code(proved, nothing, gate_of(Expect::Obligations)), kExitOk);
  EXPECT_EQ(gate_exit_code(proved, nothing, gate_of(Expect::Applied)), kExitExpectation);
  // Verdicts come first: a refutation is exit 1 whatever the findings.
  EXPECT_EQ(gate_exit_code({verdict(VerdictKind::Refuted)}, declined, gate_of(Expect::Applied)), kExitRefuted);
  EXPECT_EQ(gate_exit_code({verdict(VerdictKind::Unknown)}, declined, gate_of(Expect::Applied)), kExitUnknown);
  EXPECT_EQ(gate_exit_code({verdict(VerdictKind::Unknown)}, {}, gate_of(Expect::Obligations, FailOn::Refuted)),
            kExitOk);
  EXPECT_NE(gate_line(proved, declined, gate_of(Expect::Applied)).find("1 decline under --expect applied"),
            std::string::npos);
  EXPECT_NE(gate_line({}, nothing, gate_of(Expect::Obligations)).find("--expect anything"), std::string::npos);
}

TEST(VerifyGate, ObligationKeysIgnoreLinesAndApplicationNumbers) {
  Verdict a = verdict(VerdictKind::Exact), b = a;
  b.id = "7.fold-output";
  b.line = 99;
  EXPECT_EQ(obligation_key(a), obligation_key(b));
  b.covers[0].node = "o2";
  EXPECT_NE(obligation_key(a), obligation_key(b));
  Verdict c = a;
  c.file = "other.fp";
  EXPECT_NE(obligation_key(a), obligation_key(c));
}

TEST(VerifyGate, BaselineFailsOnlyOnWhatIsNewOrWorse) {
  const std::vector<Verdict> today = {verdict(VerdictKind::Bounded), verdict(VerdictKind::Refuted, "bad.fp")};
  const std::vector<Finding> declines = {decline()};
  const Baseline b = parse_baseline(baseline_json(baseline_of(today, declines)), "b.json");
  const std::set<std::string> files = {"attn.fp", "bad.fp", "drop.fp"};
  auto compare = [&](const std::vector<Verdict>& vs, const std::vector<Finding>& fs) {
    Gate g;
    g.baseline = compare_with_baseline(b, "b.json", vs, fs, files, true);
    for (const auto& f : g.baseline->lost) {
      std::vector<Finding> all = fs;
      all.push_back(f);
      return gate_exit_code(vs, all, g);
    }
    return gate_exit_code(vs, fs, g);
  };
  EXPECT_EQ(compare(today, declines), kExitOk) << "the known refutation and decline pass";
  // A proved obligation that became unknown, or refuted, is worse.
  EXPECT_EQ(compare({verdict(VerdictKind::Unknown), today[1]}, declines), kExitUnknown);
  EXPECT_EQ(compare({verdict(VerdictKind::Refuted), today[1]}, declines), kExitRefuted);
  // A narrower scope is worse.
  EXPECT_EQ(compare({verdict(VerdictKind::Bounded, "attn.fp", "o", false), today[1]}, declines), kExitExpectation);
  // A new decline, and a new refuted obligation, are new.
  EXPECT_EQ(compare(today, {decline(), decline("drop.fp", "row_sum")}), kExitExpectation);
  EXPECT_EQ(compare({today[0], today[1], verdict(VerdictKind::Refuted, "attn.fp", "o2")}, declines), kExitRefuted);
  // A proved obligation that is gone from a program of this run is lost.
  EXPECT_EQ(compare({today[1]}, declines), kExitExpectation);
  // Fixing the refutation, or a decline going away, is no regression.
  EXPECT_EQ(compare({today[0], verdict(VerdictKind::Exact, "bad.fp")}, {}), kExitOk);
  // A program not in this run is not compared.
  Gate g;
  g.baseline = compare_with_baseline(b, "b.json", {today[1]}, declines, {"bad.fp", "drop.fp"}, true);
  EXPECT_TRUE(g.baseline->regressions.empty());
  EXPECT_EQ(baseline_state(obligation_key(today[1]), g), "unchanged");
}

TEST(VerifyGate, HostileBaselinesAreErrorsNamingTheFile) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "does not parse"},
      {"[]", "not a JSON object"},
      {R"({"schema": "other", "version": 1, "obligations": {}, "findings": {}})", "\"schema\""},
      {R"({"schema": "flashproof-baseline", "version": 9, "obligations": {}, "findings": {}})", "version"},
      {R"({"schema": "flashproof-baseline", "version": 1, "findings": {}})", "no \"obligations\""},
      {R"({"schema": "flashproof-baseline", "version": 1, "obligations": {"k": {"file": "a", "verdict": "proved", "all_sizes": true}}, "findings": {}})",
       "unknown verdict"},
      {R"({"schema": "flashproof-baseline", "version": 1, "obligations": {"k": {"file": 3, "verdict": "exact", "all_sizes": true}}, "findings": {}})",
       "expected type"},
      {R"({"schema": "flashproof-baseline", "version": 1, "obligations": {}, "findings": {"k": {"file": "a", "kind": "x", "code": "c"}}})",
       "unknown kind"},
  };
  for (const auto& [text, what] : cases) {
    try {
      parse_baseline(text, "ci/base.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitMalformed);
      EXPECT_EQ(e.file(), "ci/base.json");
      EXPECT_NE(e.message().find(what), std::string::npos) << e.message();
    }
  }
}

TEST(VerifyGate, DeclinesAreFindingsAnchoredOnTheirNode) {
  Routine r = parse_routine(
      "routine s {\n"
      "  node x : f32[2, 4] materialized input\n"
      "  node m : f32[2] materialized\n"
      "  node e : f32[2, 4] materialized output\n"
      "  for i in 0..1 {\n    m[i] = -inf:f32\n  }\n"
      "  for i in 0..1 {\n    for j in 0..3 {\n      m[i] = max.f32(m[i], x[i, j])\n    }\n  }\n"
      "  for i in 0..1 {\n    for j in 0..3 {\n      e[i, j] = exp.f32(sub.f32(x[i, j], m[i]))\n    }\n  }\n"
      "}\n",
      "s.fp");
  Config c;
  c.set("online_softmax", "true");
  RewriteResult res = run_tier(r, c);
  std::vector<Finding> fs = decline_findings(res, r, "s.fp");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "no-sum-chain");
  EXPECT_EQ(fs[0].anchor, "m");
  EXPECT_EQ(fs[0].key, "s.fp|online-softmax.normalizer-scan|m");
  EXPECT_NE(fs[0].sentence.find("inside a larger expression"), std::string::npos) << fs[0].sentence;
  EXPECT_FALSE(fs[0].hint.empty());
}

TEST(VerifyGate, FindingsInEveryFormat) {
  ReportContext ctx;
  ctx.inputs = {"attn.fp", "drop.fp"};
  ctx.findings = {decline()};
  ctx.source_root = "/repo";
  const std::vector<Verdict> vs = {verdict(VerdictKind::Exact, "/repo/attn.fp")};
  const std::string text = report_text(vs, ctx);
  EXPECT_NE(text.find("drop.fp:58  declined online-softmax.block-fold [value-pass-not-direct]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("hint: by design"), std::string::npos);
  EXPECT_NE(text.find("gate: passes"), std::string::npos);
  EXPECT_EQ(text.find("solver:"), std::string::npos) << "the solver line is behind --details";
  ctx.details = true;
  EXPECT_NE(report_text(vs, ctx).find("exact"), std::string::npos);
  ctx.details = false;

  auto j = nlohmann::json::parse(report_json(vs, ctx));
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["code"], "value-pass-not-direct");
  EXPECT_EQ(j["findings"][0]["fails"], false);
  EXPECT_EQ(j["summary"]["declines"], 1);
  EXPECT_EQ(j["expect"], "obligations");
  EXPECT_EQ(j["inputs"].size(), 2u);

  const std::string junit = report_junit(vs, ctx);
  EXPECT_NE(junit.find("tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\""), std::string::npos) << junit;
  ctx.gate.expect = Expect::Applied;
  EXPECT_NE(report_junit(vs, ctx).find("failures=\"1\""), std::string::npos);

  auto sarif = nlohmann::json::parse(report_sarif(vs, ctx));
  const auto& run = sarif["runs"][0];
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///repo/");
  EXPECT_FALSE(run["tool"]["driver"].contains("informationUri"));
  for (const auto& rule : run["tool"]["driver"]["rules"]) {
    EXPECT_FALSE(rule["help"]["text"].get<std::string>().empty());
    EXPECT_FALSE(rule.contains("helpUri"));
  }
  const auto& results = run["results"];
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "attn.fp");
  EXPECT_EQ(results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"], "SRCROOT");
  EXPECT_EQ(results[1]["kind"], "fail");
  EXPECT_EQ(results[1]["level"], "error") << "a decline fails the gate under --expect applied";
}

TEST(VerifyGate, SarifLocationsOutsideTheRootAreAbsoluteFileUris) {
  EXPECT_EQ(sarif_artifact_location("/elsewhere/a b.fp", "/repo"), (nlohmann::json{{"uri", "file:///elsewhere/a%20b.fp"}}));
  EXPECT_EQ(sarif_artifact_location("/repo/m/x.fp", "/repo/"),
            (nlohmann::json{{"uri", "m/x.fp"}, {"uriBaseId", "SRCROOT"}}));
  EXPECT_EQ(sarif_artifact_location("/repo/../up.fp", "/repo"), (nlohmann::json{{"uri", "file:///up.fp"}}));
}

}  // namespace
}  // namespace fp::verify
