// The fused backward's term identity (verify/online_softmax/fused_backward_identity.h): proved on the tier's own
// emission for dQ and dK (no mask, causal with fully masked rows, a finite fill, the blocked form),
// every cell within the bound it evaluates; and every planted mutant of the fused backward that
// changes dQ or dK either breaks the identity or leaves the bound.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/checker.h"
#include "core/random_inputs.h"
#include "frontend/attention.h"
#include "online_softmax_fixtures.h"
#include "rewrites/application.h"
#include "rewrites/config.h"
#include "rewrites/online_softmax/fused_backward.h"
#include "rewrites/online_softmax/mutants.h"
#include "rewrites/tier.h"
#include "verify/online_softmax/fused_backward_identity.h"

namespace fp {
namespace {

using verify::BackwardIdentity;
using verify::BackwardRoles;

struct BackwardPair {
  Routine src, tgt;
  Application app;
};

BackwardPair pair_of(const AttentionSpec& s) {
  BackwardPair out;
  out.src = build_attention(s);
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_backward", "true");
  TierOptions only;
  only.only = {osm::kFusedBackwardId};
  RewriteResult r = run_tier(out.src, c, only);
  EXPECT_EQ(r.applications.size(), 1u);
  out.tgt = r.routine;
  if (!r.applications.empty()) out.app = r.applications[0];
  return out;
}

BackwardRoles roles(const Application& app, const std::string& x) {
  return BackwardRoles{matched_node(app, x), matched_node(app, "p"), matched_node(app, "dP"), matched_node(app, "dO"),
                       matched_node(app, "o")};
}

AttentionSpec spec(const std::string& mask, std::int64_t sq, std::int64_t sk, const std::string& fill = "-inf") {
  return ostest::one_head_training_step(Prec::F32, mask, sq, sk, 3, 4, fill);
}

// Every cell within its bound on `seeds` random inputs; returns the worst |Δ| / bound.
double worst_ratio(const BackwardIdentity& id, const verify::TermStore& store, const Routine& src, Prec p, int seeds) {
  double worst = 0;
  for (int k = 0; k < seeds; ++k) {
    TensorMap in = random_inputs(src, 40 + static_cast<std::uint64_t>(k));
    if (k % 2 == 1)
      for (double& x : in.at("q").data) x *= 8;  // peaked probabilities (exact: a power of two)
    for (const auto& c : verify::evaluate_backward_cells(id, store, in, p)) {
      EXPECT_TRUE(verify::backward_cell_ok(c)) << fmt::format("src {:a} tgt {:a} bound {:g}", c.src, c.tgt, c.bound);
      if (c.bounded && c.bound > 0 && c.src == c.src) worst = std::max(worst, std::fabs(c.src - c.tgt) / c.bound);
    }
  }
  return worst;
}

TEST(BackwardIdentity, ProvedOnTheEmissionAndEveryCellWithinTheBound) {
  for (const auto& [name, s] : std::vector<std::pair<std::string, AttentionSpec>>{
           {"none 5x7", spec("none", 5, 7)},
           {"causal 6x4 (fully masked rows)", spec("causal", 6, 4)},
           {"causal 5x5 fill -1e4", spec("causal", 5, 5, "-1e4")},
           {"none 70x9 (blocked)", spec("none", 70, 9)}}) {
    SCOPED_TRACE(name);
    const BackwardPair bp = pair_of(s);
    for (const char* x : {"dQ", "dK"}) {
      SCOPED_TRACE(x);
      verify::TermStore store;
      const BackwardIdentity id = verify::fused_backward_identity(bp.src, bp.tgt, roles(bp.app, x), store);
      ASSERT_TRUE(id.check.proved) << id.check.detail;
      EXPECT_FALSE(id.cells.empty());
      const double w = worst_ratio(id, store, bp.src, Prec::F32, 6);
      EXPECT_LT(w, 1.0);
    }
  }
}

// At f16 and bf16 the fused form carries D and ds at f32 and rounds each once to the storage
// precision; at f64 it runs at f64 throughout: the identity covers every form.
TEST(BackwardIdentity, ProvedAtEveryPrecision) {
  for (Prec p : {Prec::F16, Prec::BF16, Prec::F64}) {
    SCOPED_TRACE(prec_name(p));
    const BackwardPair bp = pair_of(ostest::one_head_training_step(p, "causal", 5, 6, 3, 4));
    for (const char* x : {"dQ", "dK"}) {
      SCOPED_TRACE(x);
      verify::TermStore store;
      const BackwardIdentity id = verify::fused_backward_identity(bp.src, bp.tgt, roles(bp.app, x), store);
      ASSERT_TRUE(id.check.proved) << id.check.detail;
      EXPECT_LT(worst_ratio(id, store, bp.src, p, 6), 1.0);
    }
  }
}

TEST(BackwardIdentity, MutantsOfDqOrDkBreakTheIdentityOrLeaveTheBound) {
  // sq = sk: some mutants read one side's rows with the other's index (well formed only then).
  const BackwardPair bp = pair_of(spec("causal", 5, 5));
  const std::vector<Mutant> mutants = osm::fused_backward_mutants(bp.tgt, bp.app);
  ASSERT_GE(mutants.size(), 10u);
  int touched = 0;
  for (const Mutant& m : mutants) {
    SCOPED_TRACE(m.id + ": " + m.description);
    ASSERT_TRUE(check_routine(m.tgt).empty());
    for (const char* x : {"dQ", "dK"}) {
      verify::TermStore store;
      const BackwardIdentity ok = verify::fused_backward_identity(bp.src, bp.tgt, roles(bp.app, x), store);
      const BackwardIdentity id = verify::fused_backward_identity(bp.src, m.tgt, roles(bp.app, x), store);
      ASSERT_TRUE(ok.check.proved);
      // Unchanged terms (a mutant of another gradient): nothing to catch here.
      bool same = id.check.proved;
      for (std::size_t c = 0; same && c < id.cells.size(); ++c) same = id.cells[c].tgt == ok.cells[c].tgt;
      if (same) continue;
      ++touched;
      if (!id.check.proved) continue;  // caught: the target is not the form the bound is about
      bool caught = false;
      for (int k = 0; k < 8 && !caught; ++k)
        for (const auto& c : verify::evaluate_backward_cells(id, store, random_inputs(bp.src, 90 + k), Prec::F32))
          caught = caught || !verify::backward_cell_ok(c);
      EXPECT_TRUE(caught) << x << ": identity holds and every cell is within the bound";
    }
  }
  EXPECT_GT(touched, 0);
}

// A cell's error is compared rounded against the claim: 2^53 - (-1) is 2^53 + 1 exactly, which the
// double subtraction rounds down to the bound 2^53 (ties to even); the cell is outside.
TEST(BackwardIdentity, ACellJustOutsideItsBoundIsOutsideAfterRounding) {
  EXPECT_FALSE(verify::backward_cell_ok(verify::BackwardCellValue{0x1p53, -1.0, 0x1p53, true}));
  EXPECT_TRUE(verify::backward_cell_ok(verify::BackwardCellValue{0x1p53, 0.0, 0x1p53 + 2, true}));
}

}  // namespace
}  // namespace fp
