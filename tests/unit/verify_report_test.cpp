// Verdicts as values and as reports: JSON round trip (the proof cache stores them), the exit code
// of a set of verdicts, every report format, the proof cache, and progress lines.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "verify/engine.h"
#include "verify/verdict_cache.h"
#include "verify/progress.h"
#include "verify/proof_cache.h"
#include "verify/report.h"

namespace fp::verify {
namespace {

Verdict sample(VerdictKind k, const std::string& id) {
  Verdict v;
  v.id = id;
  v.member = "online-softmax";
  v.rewrite = "online-softmax.normalizer-scan";
  v.claim = "normalizer-sum";
  v.claimed = ObligationKind::Bounded;
  v.covers = {Cover{"row_sum", "row_sum[b] for b in 0..1"}};
  v.file = "attn.fp";
  v.line = 12;
  v.kind = k;
  v.reason = k == VerdictKind::Unknown ? UnknownReason::Timeout : UnknownReason::None;
  v.message = "because";
  v.scope = Scope{false, "sizes up to: x[2, 3]"};
  v.solver = SolverInfo{"z3", "4.8.12.0"};
  v.repro = "flashproof verify attn.fp --obligation " + id;
  if (k == VerdictKind::Bounded) {
    BoundInfo b;
    b.formula = "REL = ...";
    b.value = 6.8e-7;
    b.tightness = 0.17;
    b.downstream = {DownstreamBound{"o", "rho", 1e-6, "sum |w v|", 0.01}};
    b.parts = {CertificatePart{"(a) reals", "unknown", "n=3: 2/4"}};
    v.bound = b;
  }
  if (k == VerdictKind::Refuted)
    v.counterexample =
        Counterexample{"/tmp/x", "flashproof verify --src ...", "o[0]: 1 vs 2", {{64, 2}, {16, 1}}, {"q f32[2] = [1, 2]"}};
  return v;
}

TEST(VerifyReport, VerdictJsonRoundTrip) {
  for (auto k : {VerdictKind::Exact, VerdictKind::Bounded, VerdictKind::Refuted, VerdictKind::Unknown,
                 VerdictKind::Error}) {
    Verdict v = sample(k, "1.x");
    Verdict back = verdict_from_json(nlohmann::json::parse(to_json(v).dump()));
    EXPECT_EQ(to_json(back), to_json(v));
  }
  // A cache entry written before counterexamples recorded their extents still reads back.
  nlohmann::json old = to_json(sample(VerdictKind::Refuted, "1.x"));
  old["counterexample"].erase("extents");
  EXPECT_TRUE(verdict_from_json(old).counterexample->extents.empty());
}

TEST(VerifyReport, ExitCodes) {
  auto V = [](VerdictKind k) { return sample(k, "1"); };
  EXPECT_EQ(exit_code_for({V(VerdictKind::Exact), V(VerdictKind::Bounded)}, FailOn::Unknown), kExitOk);
  EXPECT_EQ(exit_code_for({V(VerdictKind::Exact), V(VerdictKind::Refuted), V(VerdictKind::Unknown)},
                          FailOn::Unknown),
            kExitRefuted);
  EXPECT_EQ(exit_code_for({V(VerdictKind::Unknown)}, FailOn::Unknown), kExitUnknown);
  EXPECT_EQ(exit_code_for({V(VerdictKind::Unknown)}, FailOn::Refuted), kExitOk);
  EXPECT_EQ(exit_code_for({V(VerdictKind::Error), V(VerdictKind::Unknown)}, FailOn::Unknown), kExitMalformed);
  EXPECT_EQ(exit_code_for({}, FailOn::Unknown), kExitOk);
}

TEST(VerifyReport, Formats) {
  std::vector<Verdict> vs = {sample(VerdictKind::Exact, "1.a"), sample(VerdictKind::Bounded, "1.b"),
                             sample(VerdictKind::Refuted, "2.c"), sample(VerdictKind::Unknown, "3.d")};
  ReportContext ctx;
  ctx.inputs = {"attn.fp"};
  ctx.command = "flashproof verify attn.fp";
  auto j = nlohmann::json::parse(report_json(vs, ctx));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["$schema"], kReportSchemaId);
  EXPECT_EQ(j["summary"]["refuted"], 1);
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["verdicts"].size(), 4u);
  EXPECT_EQ(j["verdicts"][1]["bound"]["tightness"], 0.17);

  std::istringstream lines(report_jsonl(vs, ctx));
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    auto x = nlohmann::json::parse(line);
    ++n;
    if (n == 5) {
      EXPECT_EQ(x["summary"]["total"], 4);
    }
  }
  EXPECT_EQ(n, 5);

  std::string junit = report_junit(vs, ctx);
  EXPECT_NE(junit.find("tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"0\""), std::string::npos) << junit;
  ctx.gate.fail_on = FailOn::Refuted;
  junit = report_junit(vs, ctx);
  EXPECT_NE(junit.find("failures=\"1\" errors=\"0\" skipped=\"1\""), std::string::npos) << junit;

  auto sarif = nlohmann::json::parse(report_sarif(vs, ctx));
  EXPECT_EQ(sarif["version"], "2.1.0");
  auto& results = sarif["runs"][0]["results"];
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) EXPECT_EQ(r["ruleId"], "online-softmax.normalizer-scan");
  EXPECT_EQ(results[2]["level"], "error");
  EXPECT_EQ(results[3]["level"], "warning");
  // SARIF 2.1.0 §3.27.10: a proved obligation is kind "pass" at level "none" (no code-scanning
  // alert); a refutation and an unknown are kind "fail" at a level that is not "none".
  for (const auto& r : results) {
    const std::string kind = r.value("kind", "fail"), level = r["level"];
    EXPECT_EQ(level == "none", kind != "fail") << r.dump();
  }
  EXPECT_EQ(results[0]["kind"], "pass");
  EXPECT_EQ(results[0]["level"], "none");
  EXPECT_EQ(results[3]["kind"], "fail");
  EXPECT_EQ(results[0]["locations"][0]["physicalLocation"]["region"]["startLine"], 12);

  std::string text = report_text(vs, ctx);
  EXPECT_NE(text.find("unknown (timeout)"), std::string::npos);
  EXPECT_NE(text.find("bounded (rel 6.8e-07)"), std::string::npos);
  EXPECT_NE(text.find("replay: flashproof verify --src"), std::string::npos);
  EXPECT_NE(text.find("summary: 4 obligations: 1 exact, 1 bounded, 1 refuted, 1 unknown, 0 error"),
            std::string::npos);
}

TEST(VerifyReport, ProofCacheAnswersAnUnchangedRerun) {
  const char* src =
      "routine s { node a : f32[3] materialized input node o : f32[1] materialized output "
      "o[0] = max.f32(max.f32(a[0], a[1]), a[2]) }";
  const char* tgt =
      "routine t { node a : f32[3] materialized input node o : f32[1] materialized output "
      "o[0] = max.f32(a[0], max.f32(a[1], a[2])) }";
  Task t = pair_task(parse_routine(src, "s.fp"), parse_routine(tgt, "t.fp"), "exact", "t.fp", "repro");
  EngineOptions o;
  o.cache_dir = (std::filesystem::temp_directory_path() / "flashproof-verify-cache-test").string();
  std::filesystem::remove_all(o.cache_dir);
  std::vector<Verdict> first = verify_tasks({t}, o);
  std::vector<Verdict> second = verify_tasks({t}, o);
  ASSERT_EQ(first[0].kind, VerdictKind::Exact);
  EXPECT_FALSE(first[0].cached);
  EXPECT_TRUE(second[0].cached);
  EXPECT_EQ(second[0].kind, VerdictKind::Exact);
  EXPECT_EQ(second[0].message, first[0].message);
  // Another limit is another key.
  Limits l2 = o.limits;
  l2.rlimit += 1;
  EXPECT_NE(cache_key(t, o.limits), cache_key(t, l2));
  // Another target is another key.
  Task t2 = t;
  t2.tgt = parse_routine(src, "s.fp");
  EXPECT_NE(cache_key(t, o.limits), cache_key(t2, o.limits));
  // The claim is parsed strictly.
  EXPECT_THROW(parse_claim("bounded:"), UserError);
  EXPECT_THROW(parse_claim("bounded:0"), UserError);
  EXPECT_THROW(parse_claim("approximately"), UserError);
  EXPECT_EQ(*parse_claim("bounded:1e-6"), 1e-6);
}

TEST(VerifyReport, ProgressPlainLines) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress p(2, false, f, 0.05);
    Task t;
    t.id = "1.value-pass";
    p.started(t);
    std::this_thread::sleep_for(std::chrono::milliseconds(130));
    p.finished(t, sample(VerdictKind::Exact, "1.value-pass"));
    p.stop();
  }
  std::rewind(f);
  char buf[4096] = {0};
  std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string out(buf, n);
  EXPECT_NE(out.find("verify: 0/2 done (exact 0, bounded 0, refuted 0, unknown 0, error 0); longest running: "
                     "1.value-pass"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace fp::verify
