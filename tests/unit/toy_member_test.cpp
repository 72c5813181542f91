// A rewrite is one folder and one registration line: a toy member declared and registered in this
// file only gets everything the product's members get — its config keys (profiles, environment,
// --set, describe_config, list-rewrites), --explain, verify verdicts through the checker it names,
// its mutants refuted, and a diff plan — with no edit to the tier, the config, verify's engine,
// diff or the command line.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "rewrites/members.h"
#include "rewrites/tier.h"
#include "verify/diff_plan.h"
#include "verify/engine.h"

namespace fp {
namespace {

constexpr const char* kToy = "toy-double-negation";
constexpr const char* kToyShape = "toy-double-negation.strip";
constexpr const char* kToyKey = "toy_double_negation";

bool double_negation(const ExprP& e) {
  return e && e->kind == ExprKind::Unary && e->unop() == UnOp::Neg && e->args[0]->kind == ExprKind::Unary &&
         e->args[0]->unop() == UnOp::Neg && e->args[0]->prec == e->prec && e->args[0]->args[0]->prec == e->prec;
}

// Every cell store of `s` whose value is neg(neg(x)) (one precision throughout) stores x instead;
// `nodes` collects the stored nodes.
StmtP strip(const StmtP& s, std::vector<std::string>& nodes, const std::function<ExprP(const ExprP&)>& by) {
  if (s->kind == StmtKind::Set && double_negation(s->value)) {
    nodes.push_back(s->name);
    return set(s->name, s->indices, by(s->value->args[0]->args[0]));
  }
  if (s->body.empty()) return s;
  auto copy = std::make_shared<Stmt>(*s);
  for (auto& b : copy->body) b = strip(b, nodes, by);
  return copy;
}

Routine strip_all(const Routine& r, std::vector<Application>* apps,
                  const std::function<ExprP(const ExprP&)>& by) {
  Routine out = r;
  std::vector<StmtP> top = r.body->body;
  for (std::size_t p = 0; p < top.size(); ++p) {
    std::vector<std::string> nodes;
    StmtP s = strip(top[p], nodes, by);
    if (nodes.empty()) continue;
    top[p] = s;
    if (!apps) continue;
    Application a;
    a.member = kToy;
    a.shape = kToyShape;
    a.statements = {static_cast<int>(p) + 1};
    a.lines = {top[p]->loc.line};
    a.matched = {{"target", nodes[0]}};
    a.emitted = "the store without its double negation";
    Obligation ob;
    ob.kind = ObligationKind::Exact;
    ob.claim = "strip";
    ob.description = "neg(neg(x)) is x, bit for bit";
    ob.covers = {Cover{nodes[0], nodes[0] + "[all cells]"}};
    a.obligations = {ob};
    apps->push_back(std::move(a));
  }
  out.body = seq(std::move(top));
  return out;
}

Member toy_member() {
  Member m;
  m.id = kToy;
  m.gate = kToyKey;
  m.version = "1";
  m.description = "neg(neg(x)) becomes x";
  m.config_keys = {ConfigKeySpec{kToyKey, ConfigType::Bool, "false", {{"approximate", "true"}}, true,
                                 "strip double negations"}};
  m.shapes = {ShapeInfo{kToyShape,
                        "exact",
                        "a store of neg(neg(x)) stores x",
                        {ClaimSpec{"strip", ObligationKind::Exact, "bitwise", "neg(neg(x)) is x, bit for bit"}},
                        [](const Routine& tgt, const Application&) {
                          // The planted bug: one negation too few.
                          std::vector<Mutant> ms;
                          Routine bad = tgt;
                          std::vector<StmtP> top = bad.body->body;
                          for (auto& s : top)
                            if (s->kind == StmtKind::For && s->body[0]->kind == StmtKind::Set)
                              s = for_loop(s->sym, s->from, s->to,
                                           {set(s->body[0]->name, s->body[0]->indices,
                                                unary(UnOp::Neg, s->body[0]->value, s->body[0]->value->prec))});
                          bad.body = seq(std::move(top));
                          ms.push_back(Mutant{"one-negation-left", "stores -x", bad});
                          return ms;
                        }}};
  m.apply = [](const Routine& r, const MemberContext& ctx) {
    MemberOutput out;
    if (ctx.shape_enabled && !ctx.shape_enabled(kToyShape)) {
      out.routine = r;
      return out;
    }
    out.routine = strip_all(r, &out.applications, [](const ExprP& x) { return x; });
    for (auto& a : out.applications) a.round = ctx.round;
    return out;
  };
  return m;
}

Routine toy_routine() {
  return parse_routine(
      "routine toy {\n"
      "  node a : f32[4] materialized input\n"
      "  node o : f32[4] materialized output\n"
      "  for i in 0..3 {\n"
      "    o[i] = neg.f32(neg.f32(a[i]))\n"
      "  }\n"
      "}\n",
      "toy.fp");
}

TEST(ToyMember, DeclaresItsConfigKeysWithNoEditToTheConfig) {
  ScopedMemberRegistration reg(toy_member());
  const auto keys = config_keys();
  EXPECT_NE(std::find(keys.begin(), keys.end(), kToyKey), keys.end());
  EXPECT_FALSE(make_config("", {}, {}).flag(kToyKey));
  EXPECT_TRUE(make_config("", {"toy_double_negation=true"}, {}).flag(kToyKey));
  EXPECT_TRUE(make_config("approximate", {}, {}).flag(kToyKey));
  EXPECT_TRUE(make_config("", {}, {{"FLASHPROOF_TOY_DOUBLE_NEGATION", "1"}}).flag(kToyKey));
  EXPECT_THROW(make_config("reproducible", {"toy_double_negation=true"}, {}), UserError);
  EXPECT_NE(describe_config(Config{}).find("toy_double_negation=false"), std::string::npos);
  const std::string listed = list_rewrites_text(tier_members());
  EXPECT_NE(listed.find("toy-double-negation  gate: toy_double_negation"), std::string::npos) << listed;
  EXPECT_NE(listed.find("claim strip: exact, checked by bitwise"), std::string::npos) << listed;
}

TEST(ToyMember, IsGatedAndExplainedByTheTier) {
  ScopedMemberRegistration reg(toy_member());
  const Routine r = toy_routine();
  const RewriteResult off = run_tier(r, Config{});
  EXPECT_TRUE(off.applications.empty());
  EXPECT_NE(explain_text(off).find("toy-double-negation: gate toy_double_negation is off"), std::string::npos);
  const RewriteResult on = run_tier(r, make_config("", {"toy_double_negation=true"}, {}));
  ASSERT_EQ(on.applications.size(), 1u);
  EXPECT_NE(explain_text(on).find(kToyShape), std::string::npos) << explain_text(on);
}

TEST(ToyMember, VerifyDischargesItsClaimWithTheCheckerItNames) {
  ScopedMemberRegistration reg(toy_member());
  const verify::TierTasks tt =
      verify::tier_tasks(toy_routine(), make_config("", {"toy_double_negation=true"}, {}), {}, "toy.fp", "repro");
  ASSERT_EQ(tt.tasks.size(), 1u);
  verify::EngineOptions o;
  o.use_cache = false;
  const std::vector<verify::Verdict> vs = verify::verify_tasks(tt.tasks, o);
  EXPECT_EQ(vs[0].kind, verify::VerdictKind::Exact) << vs[0].message;
  EXPECT_EQ(vs[0].member, kToy);

  // Its mutant is refuted.
  verify::Task bad = tt.tasks[0];
  const ShapeInfo* shape = find_shape(kToyShape);
  ASSERT_NE(shape, nullptr);
  const std::vector<Mutant> ms = shape->mutants(bad.tgt, bad.app);
  ASSERT_EQ(ms.size(), 1u);
  bad.tgt = ms[0].tgt;
  o.cex_dir = ::testing::TempDir() + "toy-cex";
  EXPECT_EQ(verify::discharge(bad, o).kind, verify::VerdictKind::Refuted);
}

TEST(ToyMember, UnknownCheckerIsUnknownNeverProved) {
  Member m = toy_member();
  m.shapes[0].claims[0].checker = "no-such-checker";
  ScopedMemberRegistration reg(std::move(m));
  const verify::TierTasks tt =
      verify::tier_tasks(toy_routine(), make_config("", {"toy_double_negation=true"}, {}), {}, "toy.fp", "repro");
  verify::EngineOptions o;
  o.use_cache = false;
  const verify::Verdict v = verify::discharge(tt.tasks[0], o);
  EXPECT_EQ(v.kind, verify::VerdictKind::Unknown);
  EXPECT_EQ(v.reason, verify::UnknownReason::Unsupported);
  EXPECT_NE(v.message.find("no checker 'no-such-checker'"), std::string::npos) << v.message;
}

TEST(ToyMember, DiffPlanComparesItsExactOutputBitwise) {
  ScopedMemberRegistration reg(toy_member());
  const Routine r = toy_routine();
  const RewriteResult on = run_tier(r, make_config("", {"toy_double_negation=true"}, {}));
  const verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(r, on);
  EXPECT_TRUE(plan.certified.empty());
  EXPECT_TRUE(plan.stand_in.empty());  // no bounded claim reaches o: it is compared bitwise
  EXPECT_TRUE(plan.notes.empty());
}

// The generic layers name no member: what the grep checks, kept as a test.
TEST(GenericLayers, NameNoMemberShapeOrClaim) {
  namespace fs = std::filesystem;
  const fs::path root = FLASHPROOF_SOURCE_DIR;
  std::vector<fs::path> files = {root / "rewrites/tier.cpp", root / "rewrites/config.cpp", root / "verify/engine.cpp",
                                 root / "verify/dispatch.cpp", root / "verify/task.cpp",
                                 root / "verify/verdict_cache.cpp", root / "verify/diff_plan.cpp"};
  for (const auto& e : fs::directory_iterator(root / "tools")) files.push_back(e.path());
  const std::regex member_name("online.softmax|normalizer", std::regex::icase);
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      EXPECT_FALSE(std::regex_search(line, member_name)) << f.string() << ":" << n << ": " << line;
  }
}

TEST(ToyMember, RegistrationEndsWithItsScope) {
  {
    ScopedMemberRegistration reg(toy_member());
    EXPECT_NE(find_member(kToy), nullptr);
  }
  EXPECT_EQ(find_member(kToy), nullptr);
  const auto keys = config_keys();
  EXPECT_EQ(std::find(keys.begin(), keys.end(), kToyKey), keys.end());
}

}  // namespace
}  // namespace fp
