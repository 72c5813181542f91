// The rewrite tier's driver (rewrites/tier.h) and configuration (rewrites/config.h): gates,
// --only/--disable, the fixpoint and its round cap, decline bookkeeping, config keys, profiles and
// environment variables.

#include <gtest/gtest.h>

#include "core/diagnostic.h"
#include "online_softmax_fixtures.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"

namespace fp {
namespace {

using ostest::gate_on;
using ostest::lit_routine;

// A toy member that appends a comment every time it runs: never converges.
Member grower() {
  Member m;
  m.id = "toy-grower";
  m.gate = "online_softmax";
  m.description = "appends a comment";
  m.apply = [](const Routine& r, const MemberContext&) {
    MemberOutput out;
    out.routine = r;
    std::vector<StmtP> body = r.body->body;
    body.push_back(comment("grown"));
    out.routine.body = seq(std::move(body));
    return out;
  };
  return m;
}

// A toy member that adds one comment, then recognizes its own output and stops.
Member once() {
  Member m = grower();
  m.id = "toy-once";
  m.apply = [](const Routine& r, const MemberContext& ctx) {
    MemberOutput out;
    out.routine = r;
    for (const auto& s : r.body->body)
      if (s->kind == StmtKind::Comment) {
        out.declines.push_back(
            Decline{"toy-once", "toy-once", ctx.round, 1, 0, "already-done", "already commented", ""});
        return out;
      }
    std::vector<StmtP> body = r.body->body;
    body.push_back(comment("once"));
    out.routine.body = seq(std::move(body));
    Application a;
    a.member = a.shape = "toy-once";
    a.round = ctx.round;
    out.applications.push_back(a);
    return out;
  };
  return m;
}

TEST(RewriteTier, EveryMemberHasAVersionForTheProofCache) {
  for (const Member& m : tier_members()) EXPECT_FALSE(m.version.empty()) << m.id;
}

TEST(RewriteTier, GateOffIsTheIdentityAndSaysWhy) {
  Routine r = lit_routine("apply-basic.fp");
  RewriteResult res = run_tier(r, Config{}, {});
  EXPECT_TRUE(equal(res.routine, r));
  EXPECT_EQ(res.routine.body, r.body);  // the very same statements
  EXPECT_TRUE(res.applications.empty());
  ASSERT_EQ(res.notes.size(), 1u);
  EXPECT_EQ(res.notes[0], "online-softmax: gate online_softmax is off");
  EXPECT_EQ(res.rounds_run, 0);
}

// `rewrite --only ID` with ID's gate off applied nothing and said nothing outside --explain.
TEST(RewriteTier, OnlyNamingAGatedOffRewriteSaysWhichKeyToSet) {
  TierOptions only_scan;
  only_scan.only = {"online-softmax.normalizer-scan"};
  const std::vector<std::string> w = gated_off_selections(Config{}, only_scan);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("gate online_softmax of online-softmax is off"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("--set online_softmax=true"), std::string::npos) << w[0];
  EXPECT_TRUE(gated_off_selections(make_config("default", {"online_softmax=true"}, {}), only_scan).empty());
  EXPECT_TRUE(gated_off_selections(Config{}, TierOptions{}).empty());
  TierOptions unknown;
  unknown.only = {"no-such-rewrite"};
  EXPECT_THROW(gated_off_selections(Config{}, unknown), UserError);
}

TEST(RewriteTier, ReproducibleProfileKeepsTheComposedForm) {
  Routine r = lit_routine("apply-basic.fp");
  EXPECT_TRUE(equal(run_tier(r, make_config("reproducible", {}, {}), {}).routine, r));
  EXPECT_FALSE(equal(run_tier(r, make_config("approximate", {}, {}), {}).routine, r));
}

TEST(RewriteTier, ConvergesAndRecordsEveryRound) {
  Routine r = lit_routine("apply-basic.fp");
  RewriteResult res = run_tier(r, gate_on(), {});
  EXPECT_EQ(res.rounds_run, 2);
  ASSERT_EQ(res.rounds.size(), 2u);
  EXPECT_TRUE(res.rounds[0].changed);
  EXPECT_FALSE(res.rounds[1].changed);
  EXPECT_TRUE(equal(res.rounds[0].routine, res.routine));
  EXPECT_EQ(res.applications.size(), 2u);
}

TEST(RewriteTier, NonConvergenceIsAnErrorNamingTheMember) {
  Routine r = lit_routine("apply-basic.fp");
  try {
    run_tier(r, gate_on(), {}, {once(), grower()});
    FAIL() << "expected TierDidNotConverge";
  } catch (const TierDidNotConverge& e) {
    EXPECT_EQ(e.member(), "toy-grower");
    EXPECT_NE(std::string(e.what()).find("toy-grower"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("8 rounds"), std::string::npos);
  }
}

TEST(RewriteTier, ToyMemberAppliesOnceAndItsDeclineIsListedOnce) {
  Routine r = lit_routine("apply-basic.fp");
  RewriteResult res = run_tier(r, gate_on(), {}, {once()});
  EXPECT_EQ(res.rounds_run, 2);
  EXPECT_EQ(res.applications.size(), 1u);
  ASSERT_EQ(res.declines.size(), 1u);  // declined in round 2 only
  EXPECT_EQ(res.declines[0].round, 2);
  // The same decline in every later round is deduplicated.
  RewriteResult again = run_tier(res.routine, gate_on(), {}, {once(), once()});
  EXPECT_EQ(again.declines.size(), 1u);
}

TEST(RewriteTier, OnlyAndDisableSelectShapes) {
  Routine r = lit_routine("apply-basic.fp");
  auto shapes = [](const RewriteResult& res) {
    std::vector<std::string> s;
    for (const auto& a : res.applications) s.push_back(a.shape);
    return s;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(shapes(run_tier(r, gate_on(), {})),
            (V{"online-softmax.normalizer-scan", "online-softmax.value-pass-hoist"}));
  EXPECT_EQ(shapes(run_tier(r, gate_on(), TierOptions{{"online-softmax.normalizer-scan"}, {}, false})),
            (V{"online-softmax.normalizer-scan"}));
  EXPECT_EQ(shapes(run_tier(r, gate_on(), TierOptions{{}, {"online-softmax.normalizer-scan"}, false})),
            (V{"online-softmax.value-pass-hoist"}));
  EXPECT_TRUE(shapes(run_tier(r, gate_on(), TierOptions{{}, {"online-softmax"}, false})).empty());
  EXPECT_TRUE(
      shapes(run_tier(r, gate_on(), TierOptions{{"online-softmax"}, {"online-softmax"}, false})).empty());
}

TEST(RewriteTier, UnknownRewriteIdIsAUsageErrorNamingIt) {
  Routine r = lit_routine("apply-basic.fp");
  for (const auto& opts :
       {TierOptions{{"online-softmax.nope"}, {}, false}, TierOptions{{}, {"nope"}, false}}) {
    try {
      run_tier(r, gate_on(), opts);
      FAIL() << "expected a usage error";
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
    }
  }
}

TEST(RewriteTier, ListRewritesNamesMembersGatesAndShapes) {
  std::string text = list_rewrites_text(tier_members());
  EXPECT_NE(text.find("online-softmax  gate: online_softmax"), std::string::npos);
  EXPECT_NE(text.find("online-softmax.normalizer-scan"), std::string::npos);
  EXPECT_NE(text.find("online-softmax.value-pass-hoist  claims: exact"), std::string::npos);
}

TEST(RewriteConfig, KeysDefaultsAndProfiles) {
  Config d = make_config("", {}, {});
  EXPECT_FALSE(d.flag("online_softmax"));
  EXPECT_FALSE(d.flag("online_softmax_backward"));
  EXPECT_EQ(d.integer_or_auto("online_softmax_block"), std::optional<std::int64_t>(0));
  EXPECT_EQ(d.max_inline_reduction(), 16);
  Config a = make_config("approximate", {}, {});
  EXPECT_TRUE(a.flag("online_softmax"));
  EXPECT_TRUE(a.flag("online_softmax_backward"));
  EXPECT_EQ(a.integer_or_auto("online_softmax_block"), std::nullopt);  // auto
  Config r = make_config("reproducible", {}, {});
  EXPECT_FALSE(r.flag("online_softmax"));
  EXPECT_TRUE(
      make_config("", {"online_softmax=true", "virtualize_max_inline_reduction=64"}, {}).flag("online_softmax"));
  EXPECT_TRUE(make_config("", {}, {{"FLASHPROOF_ONLINE_SOFTMAX", "1"}}).flag("online_softmax"));
  EXPECT_EQ(make_config("", {}, {{"FLASHPROOF_PROFILE", "approximate"}}).profile, "approximate");
  // The command line overrides the environment.
  EXPECT_FALSE(
      make_config("", {"online_softmax=false"}, {{"FLASHPROOF_ONLINE_SOFTMAX", "1"}}).flag("online_softmax"));
}

TEST(RewriteConfig, UnknownKeyOrBadValueIsAUsageErrorNamingTheKey) {
  struct Case {
    std::string profile;
    std::vector<std::string> settings;
    std::map<std::string, std::string> env;
    std::string named;
  };
  const Case cases[] = {
      {"", {"online_softmx=true"}, {}, "online_softmx"},
      {"", {"online_softmax=maybe"}, {}, "online_softmax"},
      {"", {"online_softmax_block=-3"}, {}, "online_softmax_block"},
      {"", {"virtualize_max_inline_reduction=lots"}, {}, "virtualize_max_inline_reduction"},
      {"", {}, {{"FLASHPROOF_ONLINE_SOFTMAX", "sure"}}, "online_softmax"},
      {"reproducible", {"online_softmax=true"}, {}, "online_softmax"},
      {"fastest", {}, {}, "fastest"},
  };
  for (const auto& c : cases) {
    try {
      make_config(c.profile, c.settings, c.env);
      ADD_FAILURE() << "expected a usage error naming " << c.named;
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
      EXPECT_NE(std::string(e.what()).find(c.named), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fp
