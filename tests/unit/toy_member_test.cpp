// A rewrite is two folders and two registration lines: the toy member (rewrites/toy_double_negation/
// and verify/toy_double_negation/, the walkthrough of docs/adding-a-rewrite.md), registered here for
// each test's scope with the two lines a product member has in rewrites/members.cpp and
// verify/proofs.cpp, gets everything the product's members get — its config keys (profiles,
// environment, --set, describe_config, list-rewrites), --explain with its declines, verify
// verdicts through its own checker, its mutants refuted, and a diff plan — with no edit to the
// tier, the config, verify's engine, diff or the command line.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "rewrites/members.h"
#include "rewrites/tier.h"
#include "rewrites/toy_double_negation/toy_double_negation.h"
#include "verify/checkers.h"
#include "verify/diff_plan.h"
#include "verify/engine.h"
#include "verify/toy_double_negation/proofs.h"

namespace fp {
namespace {

constexpr const char* kToy = "toy-double-negation";
constexpr const char* kToyShape = "toy-double-negation.strip";
constexpr const char* kToyKey = "toy_double_negation";

// The member and its proofs, registered for the scope: the two registration lines.
struct ToyRegistered {
  ScopedMemberRegistration member{toy_double_negation_member()};
  verify::ScopedCheckerRegistration proofs{verify::toy_double_negation_checkers()};
};

Routine toy_routine(const char* prec = "f32") {
  const std::string p = prec;
  return parse_routine(
      "routine toy {\n"
      "  node a : " + p + "[4] materialized input\n"
      "  node o : " + p + "[4] materialized output\n"
      "  for i in 0..3 {\n"
      "    o[i] = neg." + p + "(neg." + p + "(a[i]))\n"
      "  }\n"
      "}\n",
      "toy.fp");
}

Config toy_on() {
  return make_config("", {"toy_double_negation=true"}, {});
}

verify::EngineOptions no_cache() {
  verify::EngineOptions o;
  o.use_cache = false;
  o.cex_dir = ::testing::TempDir() + "toy-cex";
  return o;
}

TEST(ToyMember, DeclaresItsConfigKeysWithNoEditToTheConfig) {
  ToyRegistered reg;
  const auto keys = config_keys();
  EXPECT_NE(std::find(keys.begin(), keys.end(), kToyKey), keys.end());
  EXPECT_FALSE(make_config("", {}, {}).flag(kToyKey));
  EXPECT_TRUE(toy_on().flag(kToyKey));
  EXPECT_TRUE(make_config("approximate", {}, {}).flag(kToyKey));
  EXPECT_TRUE(make_config("", {}, {{"FLASHPROOF_TOY_DOUBLE_NEGATION", "1"}}).flag(kToyKey));
  EXPECT_THROW(make_config("reproducible", {"toy_double_negation=true"}, {}), UserError);
  EXPECT_NE(describe_config(Config{}).find("toy_double_negation=false"), std::string::npos);
  const std::string listed = list_rewrites_text(tier_members());
  EXPECT_NE(listed.find("toy-double-negation  gate: toy_double_negation"), std::string::npos) << listed;
  EXPECT_NE(listed.find("claim strip: exact, checked by all-sizes-lift.double-negation"), std::string::npos)
      << listed;
}

TEST(ToyMember, IsGatedAndExplainedByTheTier) {
  ToyRegistered reg;
  const Routine r = toy_routine();
  const RewriteResult off = run_tier(r, Config{});
  EXPECT_TRUE(off.applications.empty());
  EXPECT_NE(explain_text(off).find("toy-double-negation: gate toy_double_negation is off"), std::string::npos);
  const RewriteResult on = run_tier(r, toy_on());
  ASSERT_EQ(on.applications.size(), 1u);
  EXPECT_NE(explain_text(on).find(kToyShape), std::string::npos) << explain_text(on);
  // Idempotent: a second run changes nothing.
  EXPECT_TRUE(run_tier(on.routine, toy_on()).applications.empty());
}

TEST(ToyMember, DeclinesAMixedPrecisionDoubleNegationWithItsCode) {
  ToyRegistered reg;
  const Routine r = parse_routine(
      "routine toy {\n"
      "  node a : f32[4] materialized input\n"
      "  node o : f32[4] materialized output\n"
      "  for i in 0..3 {\n"
      "    o[i] = neg.f32(neg.f16(a[i]))\n"
      "  }\n"
      "}\n",
      "mixed.fp");
  const RewriteResult res = run_tier(r, toy_on());
  EXPECT_TRUE(res.applications.empty());
  ASSERT_EQ(res.declines.size(), 1u);
  EXPECT_EQ(res.declines[0].code, "mixed-precision");
  EXPECT_NE(explain_text(res).find("declined toy-double-negation.strip at statement 1 (line 4) [mixed-precision]"),
            std::string::npos)
      << explain_text(res);
}

TEST(ToyMember, ItsOwnCheckerProvesTheClaimForAllSizes) {
  ToyRegistered reg;
  for (const char* prec : {"f32", "f16", "bf16", "f64"}) {
    const verify::TierTasks tt = verify::tier_tasks(toy_routine(prec), toy_on(), {}, "toy.fp", "repro");
    ASSERT_EQ(tt.tasks.size(), 1u);
    const std::vector<verify::Verdict> vs = verify::verify_tasks(tt.tasks, no_cache());
    EXPECT_EQ(vs[0].kind, verify::VerdictKind::Exact) << prec << ": " << vs[0].message;
    EXPECT_EQ(vs[0].member, kToy);
    EXPECT_TRUE(vs[0].scope.all_sizes) << prec << ": " << vs[0].scope.text;
    std::string steps;
    for (const auto& s : vs[0].steps) steps += s + "\n";
    EXPECT_NE(steps.find("structure: the target is the source"), std::string::npos) << steps;
    EXPECT_NE(steps.find(std::string("scalar: neg.") + prec), std::string::npos) << steps;
  }
}

TEST(ToyMember, ItsMutantIsRefuted) {
  ToyRegistered reg;
  const verify::TierTasks tt = verify::tier_tasks(toy_routine(), toy_on(), {}, "toy.fp", "repro");
  ASSERT_EQ(tt.tasks.size(), 1u);
  verify::Task bad = tt.tasks[0];
  const ShapeInfo* shape = find_shape(kToyShape);
  ASSERT_NE(shape, nullptr);
  const std::vector<Mutant> ms = shape->mutants(bad.tgt, bad.app);
  ASSERT_EQ(ms.size(), 1u);
  bad.tgt = ms[0].tgt;
  const verify::Verdict v = verify::discharge(bad, no_cache());
  EXPECT_EQ(v.kind, verify::VerdictKind::Refuted) << v.message;
  // The structure fails first (the lift does not hold), so the bitwise check refutes it.
  std::string steps;
  for (const auto& s : v.steps) steps += s + "\n";
  EXPECT_EQ(steps.find("structure:"), std::string::npos) << steps;
}

TEST(ToyMember, UnknownCheckerIsUnknownNeverProved) {
  Member m = toy_double_negation_member();
  m.shapes[0].claims[0].checker = "no-such-checker";
  ScopedMemberRegistration reg(std::move(m));
  const verify::TierTasks tt = verify::tier_tasks(toy_routine(), toy_on(), {}, "toy.fp", "repro");
  const verify::Verdict v = verify::discharge(tt.tasks[0], no_cache());
  EXPECT_EQ(v.kind, verify::VerdictKind::Unknown);
  EXPECT_EQ(v.reason, verify::UnknownReason::Unsupported);
  EXPECT_NE(v.message.find("no checker 'no-such-checker'"), std::string::npos) << v.message;
}

TEST(ToyMember, DiffPlanComparesItsExactOutputBitwise) {
  ToyRegistered reg;
  const Routine r = toy_routine();
  const RewriteResult on = run_tier(r, toy_on());
  const verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r, on);
  EXPECT_TRUE(plan.certified.empty());
  EXPECT_TRUE(plan.stand_in.empty());  // no bounded claim reaches o: it is compared bitwise
  EXPECT_TRUE(plan.notes.empty());
}

TEST(ToyMember, RegistrationEndsWithItsScope) {
  {
    ToyRegistered reg;
    EXPECT_NE(find_member(kToy), nullptr);
    EXPECT_NE(verify::find_checker("all-sizes-lift.double-negation"), nullptr);
  }
  EXPECT_EQ(find_member(kToy), nullptr);
  EXPECT_EQ(verify::find_checker("all-sizes-lift.double-negation"), nullptr);
  const auto keys = config_keys();
  EXPECT_EQ(std::find(keys.begin(), keys.end(), kToyKey), keys.end());
}

// docs/adding-a-rewrite.md walks through this member: every file it names exists, and the two
// registration lines it shows are the product's (rewrites/members.cpp, verify/proofs.cpp) spelled
// for the toy.
TEST(ToyMember, TheWalkthroughNamesWhatExists) {
  namespace fs = std::filesystem;
  const fs::path root = FLASHPROOF_SOURCE_DIR;
  std::ifstream in(root / "docs/adding-a-rewrite.md");
  ASSERT_TRUE(in) << "docs/adding-a-rewrite.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::regex path("`((rewrites|verify|tests)/[a-z_/]+\\.(h|cpp|cmake))`");
  int named = 0;
  for (std::sregex_iterator it(doc.begin(), doc.end(), path), end; it != end; ++it, ++named)
    EXPECT_TRUE(fs::exists(root / (*it)[1].str())) << (*it)[1].str() << " is named but does not exist";
  EXPECT_GE(named, 6);
  for (const char* line : {"toy_double_negation_member(),", "toy_double_negation_checkers(),",
                           "online_softmax_member(),", "online_softmax_checkers(),"})
    EXPECT_NE(doc.find(line), std::string::npos) << line;
  for (const auto& [file, line] : {std::pair{"rewrites/members.cpp", "online_softmax_member(),"},
                                   std::pair{"verify/proofs.cpp", "online_softmax_checkers(),"}}) {
    std::ifstream reg(root / file);
    std::stringstream s;
    s << reg.rdbuf();
    EXPECT_NE(s.str().find(line), std::string::npos) << file << " no longer registers with " << line;
  }
}

}  // namespace
}  // namespace fp
