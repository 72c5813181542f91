// Online softmax, recognition (rewrites/online_softmax/): every lit golden file doubles as a unit
// case — declines leave the routine structurally identical (fp::equal) with the file's reason
// code, applications produce well-formed routines and are idempotent — plus matching properties:
// loop symbols never matter, a side chain does not hide the real one, minted names never collide,
// one obligation per claim, one scan per attention layer.

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "frontend/attention.h"
#include "online_softmax_fixtures.h"
#include "rewrites/online_softmax/claims.h"

namespace fp {
namespace {

using namespace ostest;

std::vector<std::string> lit_files(const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(lit_path("")))
    if (e.path().extension() == ".fp" && e.path().filename().string().rfind(prefix, 0) == 0)
      out.push_back(e.path().filename().string());  // (a .test file there writes its routines itself)
  std::sort(out.begin(), out.end());
  return out;
}

// The reason code a decline file checks for: "... [code]" on its `declined` CHECK line.
std::string expected_code(const std::string& file) {
  std::smatch m;
  std::string text = read_text_file(lit_path(file));
  static const std::regex re(R"(declined online-softmax\.[a-z-]+ at .*\[([a-z-]+)\])");
  return std::regex_search(text, m, re) ? m[1].str() : "";
}

bool has_decline(const RewriteResult& res, const std::string& code) {
  for (const auto& d : res.declines)
    if (d.code == code) return true;
  return false;
}

TEST(OnlineSoftmaxMatch, EveryDeclineLeavesTheRoutineExactlyAsItWas) {
  auto files = lit_files("decline-");
  ASSERT_GE(files.size(), 20u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    Routine r = lit_routine(f);
    RewriteResult res = rewrite(r);
    EXPECT_TRUE(equal(res.routine, r));
    EXPECT_TRUE(res.applications.empty());
    std::string code = expected_code(f);
    ASSERT_FALSE(code.empty());
    ASSERT_EQ(res.declines.size(), 1u);
    EXPECT_EQ(res.declines[0].code, code) << res.declines[0].sentence;
    EXPECT_EQ(res.declines[0].shape, "online-softmax.normalizer-scan");
  }
}

TEST(OnlineSoftmaxMatch, EveryHoistDeclineLeavesTheValuePassAsItWas) {
  auto files = lit_files("hoist-decline-");
  ASSERT_EQ(files.size(), 4u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    Routine r = lit_routine(f);
    RewriteResult res = rewrite(r);
    ASSERT_EQ(res.applications.size(), 1u);
    EXPECT_EQ(res.applications[0].shape, "online-softmax.normalizer-scan");
    EXPECT_TRUE(has_decline(res, expected_code(f)));
    // The value pass (the last statement) is the very same statement.
    EXPECT_EQ(res.routine.body->body.back(), r.body->body.back());
    EXPECT_TRUE(well_formed(res.routine));
  }
}

TEST(OnlineSoftmaxMatch, EveryApplicationIsWellFormedIdempotentAndChangesTheRoutine) {
  auto files = lit_files("apply-");
  for (const auto& f : lit_files("hoist-elementwise")) files.push_back(f);
  ASSERT_GE(files.size(), 10u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    Routine r = lit_routine(f);
    RewriteResult once = rewrite(r);
    EXPECT_FALSE(equal(once.routine, r));
    EXPECT_TRUE(well_formed(once.routine));
    EXPECT_EQ(count_kind(once.routine, StmtKind::Scan), 1);
    EXPECT_TRUE(once.declines.empty()) << once.declines[0].code << ": " << once.declines[0].sentence;
    RewriteResult twice = rewrite(once.routine);
    EXPECT_TRUE(equal(twice.routine, once.routine));
    EXPECT_TRUE(twice.applications.empty());
    EXPECT_EQ(twice.rounds_run, 1);
    // Printing is stable: the same text both times (minting is deterministic).
    EXPECT_EQ(print_routine(rewrite(r).routine), print_routine(once.routine));
  }
}

// Renames every loop symbol (binders and uses) by appending a suffix that differs per statement.
StmtP rename_syms(const StmtP& s, const std::map<std::string, std::string>& env, int& counter);
ExprP rename_expr(const ExprP& e, const std::map<std::string, std::string>& env) {
  Expr x = *e;
  for (auto& i : x.indices)
    for (auto& t : i.terms)
      if (env.count(t.sym)) t.sym = env.at(t.sym);
  for (auto& a : x.args) a = rename_expr(a, env);
  return std::make_shared<const Expr>(std::move(x));
}
StmtP rename_syms(const StmtP& s, const std::map<std::string, std::string>& env, int& counter) {
  Stmt x = *s;
  auto inner = env;
  if (x.kind == StmtKind::For || x.kind == StmtKind::Scan) {
    inner[x.sym] = x.sym + "_q" + std::to_string(counter++);
    x.sym = inner[x.sym];
  }
  for (auto& i : x.indices)
    for (auto& t : i.terms)
      if (inner.count(t.sym)) t.sym = inner.at(t.sym);
  if (x.value) x.value = rename_expr(x.value, inner);
  for (auto& b : x.body) b = rename_syms(b, inner, counter);
  return std::make_shared<const Stmt>(std::move(x));
}

TEST(OnlineSoftmaxMatch, LoopSymbolNamesNeverMatter) {
  for (const auto& f : lit_files("")) {
    if (f.rfind("gate-", 0) == 0 || f.rfind("only-", 0) == 0) continue;
    SCOPED_TRACE(f);
    Routine r = lit_routine(f);
    Routine renamed = r;
    int counter = 0;
    renamed.body = rename_syms(r.body, {}, counter);
    ASSERT_TRUE(well_formed(renamed));
    RewriteResult a = rewrite(r), b = rewrite(renamed);
    ASSERT_EQ(a.applications.size(), b.applications.size());
    for (std::size_t i = 0; i < a.applications.size(); ++i)
      EXPECT_EQ(a.applications[i].shape, b.applications[i].shape);
    ASSERT_EQ(a.declines.size(), b.declines.size());
    for (std::size_t i = 0; i < a.declines.size(); ++i) EXPECT_EQ(a.declines[i].code, b.declines[i].code);
  }
}

TEST(OnlineSoftmaxMatch, EverythingOutsideTheMatchIsKeptAsItWas) {
  Routine r = lit_routine("apply-basic.fp");
  RewriteResult res = rewrite(r);
  EXPECT_EQ(res.routine.nodes, r.nodes);
  EXPECT_EQ(res.routine.attrs, r.attrs);
  const auto& in = r.body->body;
  const auto& out = res.routine.body->body;
  // in: init_m max n e zero_l sum p zero_o value; out: scan n e p zero_o hoisted-value.
  ASSERT_EQ(in.size(), 9u);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[1], in[2]);  // the very same statements, not copies
  EXPECT_EQ(out[2], in[3]);
  EXPECT_EQ(out[3], in[6]);
  EXPECT_EQ(out[4], in[7]);
}

TEST(OnlineSoftmaxMatch, SideChainDoesNotHideTheRealOne) {
  RewriteResult res = rewrite(lit_routine("apply-side-chain.fp"));
  ASSERT_EQ(res.applications.size(), 2u);
  const auto& m = res.applications[0].matched;
  EXPECT_EQ(m[2], (std::pair<std::string, std::string>{"n", "n"}));
  EXPECT_EQ(m[3], (std::pair<std::string, std::string>{"e", "e"}));
  EXPECT_EQ(m[4], (std::pair<std::string, std::string>{"l", "l"}));
}

TEST(OnlineSoftmaxMatch, MintedNamesNeverCollide) {
  // Nodes already named like the locals the rewrite would mint.
  std::string text = read_text_file(lit_path("apply-basic.fp"));
  text = std::regex_replace(text, std::regex(R"(\bv\b)"), "os_m_prev_m");
  text = std::regex_replace(
      text, std::regex("routine softmax \\{"),
      "routine softmax {\n  node os_x_x : f32[1] materialized output\n  node os_p_p : f32[1] "
      "materialized output\n  node os_l_next_l : f32[1] materialized output");
  Routine r = parse_checked(text);
  RewriteResult res = rewrite(r);
  ASSERT_EQ(res.applications.size(), 2u);
  EXPECT_TRUE(well_formed(res.routine));
  std::string out = print_routine(res.routine);
  EXPECT_NE(out.find("local os_x_x_2 : f32"), std::string::npos);
  EXPECT_NE(out.find("carry(os_m_prev_m_2 -> os_m_next_m"), std::string::npos);
  EXPECT_NE(out.find("os_l_prev_l -> os_l_next_l_2"), std::string::npos);
  EXPECT_NE(out.find("local os_p_p_2 : f32"), std::string::npos);
}

TEST(OnlineSoftmaxMatch, OneObligationPerClaim) {
  RewriteResult res = rewrite(lit_routine("apply-f16-chain.fp"));
  ASSERT_EQ(res.applications.size(), 2u);
  const Application& scan = res.applications[0];
  ASSERT_EQ(scan.obligations.size(), 2u);
  EXPECT_EQ(scan.obligations[0].kind, ObligationKind::Exact);
  EXPECT_EQ(scan.obligations[0].claim, "normalizer-max");
  EXPECT_EQ(scan.obligations[0].covers[0].node, "m");
  EXPECT_EQ(scan.obligations[1].kind, ObligationKind::Bounded);
  EXPECT_EQ(scan.obligations[1].claim, "normalizer-sum");
  EXPECT_EQ(scan.obligations[1].covers[0].node, "l");
  EXPECT_EQ(scan.obligations[1].covers[0].cells, "l[i] for i in 0..1");
  const osm::SumTerms* terms = osm::sum_terms(scan.obligations[1]);
  ASSERT_NE(terms, nullptr);
  EXPECT_EQ(terms->terms, 4);
  EXPECT_EQ(terms->storage, Prec::F16);
  EXPECT_EQ(terms->state, Prec::F32);
  EXPECT_EQ(terms->block, 0);
  const Application& hoist = res.applications[1];
  EXPECT_EQ(hoist.shape, "online-softmax.value-pass-hoist");
  ASSERT_EQ(hoist.obligations.size(), 1u);
  EXPECT_EQ(hoist.obligations[0].kind, ObligationKind::Exact);
  EXPECT_EQ(hoist.obligations[0].covers[0].node, "o");
  EXPECT_EQ(hoist.obligations[0].bound, nullptr);
}

AttentionSpec small_spec() {
  AttentionSpec s;
  s.batch = 1;
  s.heads = 2;
  s.sq = 3;
  s.sk = 4;
  s.d = 2;
  s.e = 2;
  return s;
}

TEST(OnlineSoftmaxMatch, OneScanPerAttentionLayerAndIdempotent) {
  for (bool train : {false, true})
    for (int layers : {1, 3}) {
      AttentionSpec s = small_spec();
      s.train = train;
      s.layers = layers;
      s.mask = "causal";
      SCOPED_TRACE(::testing::Message() << "train=" << train << " layers=" << layers);
      Routine r = build_attention(s);
      RewriteResult once = rewrite(r);
      EXPECT_FALSE(equal(once.routine, r));
      EXPECT_TRUE(well_formed(once.routine));
      EXPECT_EQ(count_kind(once.routine, StmtKind::Scan), layers);
      int hoists = 0;
      for (const auto& a : once.applications) hoists += a.shape == "online-softmax.value-pass-hoist";
      EXPECT_GE(hoists, layers);  // the value pass; in training also grad_v's reduction
      EXPECT_TRUE(equal(rewrite(once.routine).routine, once.routine));
      EXPECT_TRUE(equal(run_tier(r, Config{}, {}).routine, r));
    }
}

TEST(OnlineSoftmaxMatch, TrainingStepForwardRewritesWithBackwardGateOff) {
  AttentionSpec s = small_spec();
  s.train = true;
  Config c = gate_on();
  c.set("online_softmax_backward", "false");
  RewriteResult res = run_tier(build_attention(s), c, {});
  ASSERT_FALSE(res.applications.empty());
  EXPECT_EQ(res.applications[0].shape, "online-softmax.normalizer-scan");
  EXPECT_TRUE(well_formed(res.routine));
}

}  // namespace
}  // namespace fp
