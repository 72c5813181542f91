// The one JUnit writer and the one SARIF writer (verify/junit.h, verify/sarif.h) that verify's and
// diff's reports use: counts derived from the cases, every attribute and text escaped, optional
// parts (time, type, text, location, invocation) written only when given, each result's ruleIndex.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "verify/junit.h"
#include "verify/sarif.h"

namespace fp::verify {
namespace {

JUnitCase& add_case(JUnitReport& r, const std::string& name, JUnitCase::Outcome outcome,
                    const std::string& message) {
  JUnitCase& c = r.cases.emplace_back();
  c.classname = "c";
  c.name = name;
  c.outcome = outcome;
  c.message = message;
  return c;
}

TEST(ReportWriters, JUnitCountsEscapesAndLaysOutEachOutcome) {
  using Outcome = JUnitCase::Outcome;
  JUnitReport r;
  r.name = "flashproof test";
  r.suite = "a<b>.fp";
  add_case(r, "quiet", Outcome::Passed, "");
  JUnitCase& said = add_case(r, "said", Outcome::Passed, "");
  said.seconds = 0.25;
  said.text = "exact & sound";
  JUnitCase& failed = add_case(r, "failed", Outcome::Failed, "it's \"wrong\"");
  failed.type = "refuted";
  failed.text = "line 1\nline 2";
  add_case(r, "error", Outcome::Error, "no comparison");
  add_case(r, "skipped", Outcome::Skipped, "unknown");
  EXPECT_EQ(
      junit_xml(r),
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"flashproof test\" tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"1\">\n"
      "  <testsuite name=\"a&lt;b&gt;.fp\" tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"1\">\n"
      "    <testcase classname=\"c\" name=\"quiet\"/>\n"
      "    <testcase classname=\"c\" name=\"said\" time=\"0.250\">\n"
      "      <system-out>exact &amp; sound</system-out>\n"
      "    </testcase>\n"
      "    <testcase classname=\"c\" name=\"failed\">\n"
      "      <failure type=\"refuted\" message=\"it&apos;s &quot;wrong&quot;\">line 1\nline 2</failure>\n"
      "    </testcase>\n"
      "    <testcase classname=\"c\" name=\"error\">\n"
      "      <error message=\"no comparison\"/>\n"
      "    </testcase>\n"
      "    <testcase classname=\"c\" name=\"skipped\">\n"
      "      <skipped message=\"unknown\"/>\n"
      "    </testcase>\n"
      "  </testsuite>\n"
      "</testsuites>\n");
  r.seconds = 1.5;
  r.cases.clear();
  EXPECT_NE(junit_xml(r).find("tests=\"0\" failures=\"0\" errors=\"0\" skipped=\"0\" time=\"1.500\">"),
            std::string::npos);
  EXPECT_EQ(xml_escape(std::string("a\x01\tb")), "a&#1;\tb");
}

TEST(ReportWriters, SarifIndexesRulesAndWritesOnlyWhatIsGiven) {
  SarifLog log;
  log.rules = {{"r.one", "the first", ""}, {"r.two", "the second", "what r.two's results mean"}};
  SarifResult& bare = log.results.emplace_back();
  bare.rule_id = "r.two";
  bare.level = "warning";
  bare.message = "no location";
  SarifResult& full = log.results.emplace_back();
  full.rule_id = "r.one";
  full.level = "error";
  full.kind = "fail";
  full.message = "located";
  full.uri = "attn.fp";
  full.line = 7;
  full.properties = {{"verdict", "refuted"}};
  nlohmann::json j = nlohmann::json::parse(sarif_json(log));
  EXPECT_EQ(j["version"], "2.1.0");
  const auto& run = j["runs"][0];
  EXPECT_FALSE(run.contains("invocations"));
  EXPECT_EQ(run["tool"]["driver"]["rules"][0]["name"], "r.one");
  // No help URI (flashproof has no web site): the help is the rule's text, its description when
  // none is given.
  EXPECT_FALSE(run["tool"]["driver"]["rules"][0].contains("helpUri"));
  EXPECT_EQ(run["tool"]["driver"]["rules"][0]["help"]["text"], "the first");
  EXPECT_EQ(run["tool"]["driver"]["rules"][1]["help"]["text"], "what r.two's results mean");
  const auto& r0 = run["results"][0];
  EXPECT_EQ(r0["ruleIndex"], 1);
  EXPECT_FALSE(r0.contains("kind"));
  EXPECT_FALSE(r0.contains("locations"));
  EXPECT_FALSE(r0.contains("properties"));
  const auto& r1 = run["results"][1];
  EXPECT_EQ(r1["ruleIndex"], 0);
  EXPECT_EQ(r1["kind"], "fail");
  EXPECT_EQ(r1["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "attn.fp");
  EXPECT_EQ(r1["locations"][0]["physicalLocation"]["region"]["startLine"], 7);
  EXPECT_EQ(r1["properties"]["verdict"], "refuted");
  log.invocation = SarifInvocation{"flashproof verify attn.fp", 1};
  j = nlohmann::json::parse(sarif_json(log));
  EXPECT_EQ(j["runs"][0]["invocations"][0]["exitCode"], 1);
  EXPECT_EQ(j["runs"][0]["invocations"][0]["commandLine"], "flashproof verify attn.fp");
}

}  // namespace
}  // namespace fp::verify
