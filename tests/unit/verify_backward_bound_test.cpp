// The fused backward's per-cell bound (verify/online_softmax/bounds/backward_bound.h, docs/bounds.md §8) against
// the interpreter: the composed training step and its rewrite with only the fused backward (the
// pair verify checks the application on), every cell of dQ and dK within the bound evaluated from
// the source's values, over adversarial input families — cancelling score gradients (equal value
// rows), peaked and near-zero probabilities, large dO, magnitudes over six decades, subnormal
// products, fully masked rows (NaN positions compared). A planted mutant of the fused form leaves
// the bound, so the check can fail. FLASHPROOF_BACKWARD_BOUND_ROWS=N checks about N query rows per
// configuration (default 1280; the closing runs used 10⁴).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

#include "core/interpreter.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "frontend/attention.h"
#include "online_softmax_fixtures.h"
#include "rewrites/config.h"
#include "rewrites/online_softmax/fused_backward.h"
#include "rewrites/tier.h"
#include "verify/bounds/mpfr_up.h"
#include "verify/bounds/rounding_model.h"
#include "verify/online_softmax/bounds/backward_bound.h"
#include "verify/online_softmax/fused_backward_identity.h"

namespace fp {
namespace {

using verify::BackwardPairBounds;
using verify::BackwardRow;

struct Family {
  std::string name;
  std::function<void(TensorMap&, SplitMix64&, Prec)> shape;
};

double& at(Tensor& t, std::int64_t i) {
  return t.data[static_cast<std::size_t>(i)];
}

void scale_all(Tensor& t, double c, Prec p) {
  for (double& x : t.data) x = round_to(p, x * c);
}

std::vector<Family> families() {
  return {
      {"uniform", [](TensorMap&, SplitMix64&, Prec) {}},
      {"peaked", [](TensorMap& in, SplitMix64&, Prec p) { scale_all(in.at("q"), 8, p); }},
      {"near-zero-p", [](TensorMap& in, SplitMix64&, Prec p) { scale_all(in.at("q"), 40, p); }},
      {"large-dO", [](TensorMap& in, SplitMix64&, Prec p) { scale_all(in.at("dout"), 100, p); }},
      {"cancelling",
       [](TensorMap& in, SplitMix64&, Prec) {
         // Every value row equal: dP_t is the same for every key, so every score gradient cancels.
         Tensor& v = in.at("v");
         const std::int64_t e = v.dims.back(), rows = v.size() / e;
         for (std::int64_t r = 1; r < rows; ++r)
           for (std::int64_t c = 0; c < e; ++c) at(v, r * e + c) = at(v, c);
       }},
      {"six-decades",
       [](TensorMap& in, SplitMix64& g, Prec p) {
         for (double& x : in.at("v").data) x = round_to(p, x * std::pow(10.0, 6 * g.unit() - 3));
       }},
      {"subnormal-products",
       [](TensorMap& in, SplitMix64&, Prec p) { scale_all(in.at("dout"), min_normal(p) * 4, p); }},
      {"small-integers", [](TensorMap& in, SplitMix64& g, Prec) {
         for (const char* n : {"q", "k", "v", "dout"})
           for (double& x : in.at(n).data) x = static_cast<double>(g.range(-2, 2));
       }},
  };
}

struct BoundSetup {
  std::string name;
  AttentionSpec spec;
};

// The pair the backward application is checked on (the tier applies it to the composed step,
// before any forward shape): the composed step, and the same step with only the fused backward.
std::pair<Routine, Routine> backward_pair(const BoundSetup& s) {
  const Routine src = build_attention(s.spec);
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_backward", "true");
  TierOptions only;
  only.only = {osm::kFusedBackwardId};
  RewriteResult r = run_tier(src, c, only);
  EXPECT_EQ(r.applications.size(), 1u) << s.name;
  return {src, r.routine};
}

// A whole rewrite (§8.1): the composed step, and the tier's full rewrite of it — the fold forward
// in blocks of `block` (the two-pass forward when empty) and the fused backward.
std::pair<Routine, Routine> whole_pair(const BoundSetup& s, const std::string& block) {
  const Routine src = build_attention(s.spec);
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_backward", "true");
  if (!block.empty()) c.set("online_softmax_block", block);
  RewriteResult r = run_tier(src, c);
  bool fused = false;
  for (const Application& a : r.applications) fused = fused || a.shape == osm::kFusedBackwardId;
  EXPECT_TRUE(fused && r.applications.size() >= 2) << s.name;
  return {src, r.routine};
}

Routine with_outputs(Routine r, const std::vector<std::string>& names) {
  for (Node& n : r.nodes)
    for (const auto& name : names)
      if (n.name == name) n.is_output = true;
  return r;
}

// APerturbedForwardIsCarriedThroughTheBound: check_input takes l_err and o_err as 0.
bool ignore_forward_perturbation = false;

struct Tally {
  int rows = 0, nan_rows = 0, masked_rows = 0, cells = 0, violations = 0;
  double worst = 0;
  std::string worst_where, first_violation;
};

// Every dQ and dK cell of one input: within the bound, or NaN on both sides where the source's
// row is outside the bound's hypotheses.
// With `whole`, the target is a whole rewrite (a rewritten forward as well): its l and O differ from
// the source's, and each row's l_err and o_err are the observed |l_tgt - l| and Σ|dO|·|O_tgt - O|
// (§8.1; diff uses the forward's certified bounds, which are larger), and dV is checked against its
// bound too (bitwise otherwise).
void check_input(const Routine& src, const Routine& tgt, const TensorMap& in, const AttentionSpec& s,
                 const std::string& where, Tally& tally, bool whole = false) {
  const TensorMap a = interpret(with_outputs(src, {"exps", "row_sum", "grad_probs", "o", "grad_scores"}), in);
  const TensorMap b = interpret(whole ? with_outputs(tgt, {"row_sum", "o"}) : tgt, in);
  const Prec p = s.precision;
  const std::int64_t sq = s.sq, sk = s.sk, d = s.d, E = s.e;
  const double c = round_to(p, *s.scale);
  std::vector<BackwardPairBounds> rows(static_cast<std::size_t>(sq));
  std::vector<BackwardRow> rows_in;
  std::vector<bool> bounded_row;  // inside the hypotheses (before a masked row's zero terms)
  for (std::int64_t i = 0; i < sq; ++i) {
    BackwardRow row;
    for (std::int64_t t = 0; t < sk; ++t) {
      row.e.push_back(a.at("exps").data[static_cast<std::size_t>(i * sk + t)]);
      row.dp.push_back(a.at("grad_probs").data[static_cast<std::size_t>(i * sk + t)]);
    }
    row.l = a.at("row_sum").data[static_cast<std::size_t>(i)];
    for (std::int64_t e = 0; e < E; ++e) {
      const auto at = static_cast<std::size_t>(i * E + e);
      row.o.push_back(a.at("o").data[at]);
      row.dout.push_back(in.at("dout").data[at]);
      if (whole) row.o_err += std::fabs(row.dout.back()) * std::fabs(b.at("o").data[at] - row.o.back());
    }
    if (whole) {
      row.l_err = std::fabs(b.at("row_sum").data[static_cast<std::size_t>(i)] - row.l);
      // Observed in doubles: one ulp up each covers their rounding (tiny against the bound).
      row.l_err = std::nextafter(row.l_err, INFINITY);
      row.o_err = std::nextafter(row.o_err * (1 + 0x1p-50), INFINITY);
      if (ignore_forward_perturbation) row.l_err = row.o_err = 0;
    }
    rows_in.push_back(row);
    BackwardPairBounds& pb = rows[static_cast<std::size_t>(i)];
    pb = verify::backward_pair_bounds(row, p);
    bounded_row.push_back(pb.finite);
    ++tally.rows;
    if (!pb.finite) {
      // Outside the bound's hypotheses (a fully masked row under a -inf fill: l is NaN). If every
      // score gradient of the row is exactly 0 in the source (the mask's where), the row adds
      // nothing to the contractions: its terms are 0, so the target must add exactly nothing too.
      bool zero = true;
      for (std::int64_t t = 0; t < sk; ++t) zero = zero && a.at("grad_scores").data[static_cast<std::size_t>(i * sk + t)] == 0;
      if (zero) {
        pb.finite = true;
        pb.composed.assign(static_cast<std::size_t>(sk), 0.0);
        pb.fused = pb.magnitude = pb.composed;
        ++tally.masked_rows;
      } else {
        ++tally.nan_rows;
      }
    }
  }
  auto check_cell = [&](const char* node, std::int64_t idx, double bound, bool finite, const std::string& cell) {
    const double x = a.at(node).data[static_cast<std::size_t>(idx)];
    const double y = b.at(node).data[static_cast<std::size_t>(idx)];
    ++tally.cells;
    const bool ok = verify::backward_cell_ok(verify::BackwardCellValue{x, y, bound, finite});
    const double ratio = finite && !std::isnan(x) && !std::isnan(y) && x != y ? std::fabs(x - y) / bound : 0;
    if (ratio > tally.worst) {
      tally.worst = ratio;
      tally.worst_where = where + " " + cell;
    }
    if (!ok) {
      if (tally.violations++ == 0)
        tally.first_violation = fmt::format("{} {}: source {:a}, target {:a}, bound {:g}", where, cell, x, y, bound);
    }
  };
  // dQ[i, dd] = Σ_t gs[i, t]·k[t, dd] over the keys.
  for (std::int64_t i = 0; i < sq; ++i) {
    const BackwardPairBounds& pb = rows[static_cast<std::size_t>(i)];
    std::vector<double> terms;
    if (pb.finite)
      for (std::int64_t t = 0; t < sk; ++t) terms.push_back(verify::backward_pair_term(pb, static_cast<std::size_t>(t), c, sk, p));
    for (std::int64_t dd = 0; dd < d; ++dd) {
      double bound = 0;
      if (pb.finite) {
        std::vector<double> col;
        for (std::int64_t t = 0; t < sk; ++t) col.push_back(in.at("k").data[static_cast<std::size_t>(t * d + dd)]);
        bound = verify::backward_contraction_bound(terms, col, p);
      }
      check_cell("grad_q", i * d + dd, bound, pb.finite, fmt::format("dQ[{}, {}]", i, dd));
    }
  }
  // dK[t, dd] = Σ_i q[i, dd]·gs[i, t] over the query rows, each with its own pair bounds.
  for (std::int64_t t = 0; t < sk; ++t) {
    std::vector<double> terms;
    bool finite = true;
    for (std::int64_t i = 0; i < sq; ++i) {
      const BackwardPairBounds& pb = rows[static_cast<std::size_t>(i)];
      finite = finite && pb.finite;
      terms.push_back(pb.finite ? verify::backward_pair_term(pb, static_cast<std::size_t>(t), c, sq, p) : 0);
    }
    for (std::int64_t dd = 0; dd < d; ++dd) {
      double bound = 0;
      if (finite) {
        std::vector<double> col;
        for (std::int64_t i = 0; i < sq; ++i) col.push_back(in.at("q").data[static_cast<std::size_t>(i * d + dd)]);
        bound = verify::backward_contraction_bound(terms, col, p);
      }
      check_cell("grad_k", t * d + dd, bound, finite, fmt::format("dK[{}, {}]", t, dd));
    }
  }
  // dV[t, e] = Σ_i p[i, t]·dO[i, e]: bitwise unless the forward is rewritten too.
  for (std::int64_t t = 0; t < sk; ++t) {
    bool finite = true;
    std::vector<double> coef;
    for (std::int64_t i = 0; i < sq && whole; ++i) {
      const BackwardPairBounds& pb = rows[static_cast<std::size_t>(i)];
      finite = finite && bounded_row[static_cast<std::size_t>(i)];
      if (!finite) break;
      coef.push_back(verify::backward_dv_coefficients(pb, rows_in[static_cast<std::size_t>(i)], sq,
                                                      p)[static_cast<std::size_t>(t)]);
    }
    for (std::int64_t e = 0; e < E; ++e) {
      double bound = 0;
      if (whole && finite) {
        bound = verify::backward_dv_tail(sq, p);
        for (std::int64_t i = 0; i < sq; ++i)
          bound += std::fabs(in.at("dout").data[static_cast<std::size_t>(i * E + e)]) *
                   coef[static_cast<std::size_t>(i)];
        bound *= 1 + 0x1p-40;  // the doubles' own rounding of this sum of nonnegative terms
      }
      check_cell("grad_v", t * E + e, bound, whole && finite, fmt::format("dV[{}, {}]", t, e));
    }
  }
}

int rows_wanted() {
  if (const char* env = std::getenv("FLASHPROOF_BACKWARD_BOUND_ROWS")) return std::max(1, std::atoi(env));
  return 1280;
}

Tally run_setup(const BoundSetup& s, const std::pair<Routine, Routine>& pair, int rows, bool whole = false) {
  Tally tally;
  const auto fams = families();
  const int inputs = std::max<int>(static_cast<int>(fams.size()), rows / static_cast<int>(s.spec.sq));
  for (int k = 0; k < inputs; ++k) {
    const Family& f = fams[static_cast<std::size_t>(k) % fams.size()];
    TensorMap in = random_inputs(pair.first, 1000 + static_cast<std::uint64_t>(k));
    SplitMix64 g(77 + static_cast<std::uint64_t>(k));
    f.shape(in, g, s.spec.precision);
    check_input(pair.first, pair.second, in, s.spec, fmt::format("{} input {} ({})", s.name, k, f.name),
                tally, whole);
  }
  return tally;
}

// Every cell of `pair` on about `rows` query rows of the families: no violation; prints the tally.
Tally expect_within_the_bound(const BoundSetup& s, const std::pair<Routine, Routine>& pair, int rows,
                              bool whole) {
  SCOPED_TRACE(s.name);
  const Tally t = run_setup(s, pair, rows, whole);
  EXPECT_EQ(t.violations, 0) << t.first_violation;
  std::printf(
      "[ bound    ] %s%s: %d rows (%d fully masked, %d others outside the hypotheses: NaN compared), %d "
      "cells, "
      "%d violations, tightness %.3g at %s\n",
      whole ? "whole rewrite, " : "", s.name.c_str(), t.rows, t.masked_rows, t.nan_rows, t.cells,
      t.violations, t.worst, t.worst_where.c_str());
  return t;
}

AttentionSpec train_spec(Prec p, const std::string& mask, std::int64_t sq, std::int64_t sk) {
  return ostest::one_head_training_step(p, mask, sq, sk, 8, 12);
}

TEST(BackwardBound, EveryGradientCellIsWithinTheBound) {
  const std::vector<BoundSetup> setups = {
      {"f32 none 16x24", train_spec(Prec::F32, "none", 16, 24)},
      {"f32 causal 16x12 (fully masked rows)", train_spec(Prec::F32, "causal", 16, 12)},
      {"f32 causal 16x24", train_spec(Prec::F32, "causal", 16, 24)},
      {"f16 none 16x10", train_spec(Prec::F16, "none", 16, 10)},
      {"f64 none 16x20", train_spec(Prec::F64, "none", 16, 20)},
      {"bf16 padding:3 16x10", train_spec(Prec::BF16, "padding:3", 16, 10)},
  };
  const int rows = rows_wanted();
  for (const BoundSetup& s : setups) {
    const Tally t = expect_within_the_bound(s, backward_pair(s), rows, false);
    EXPECT_GE(t.rows, rows);
  }
}

// §8.1: after the whole rewrite (the two-pass or the fold forward, then the fused backward) every
// dQ, dK and dV cell is within the bound with the forward's l and O perturbation carried through.
TEST(BackwardBound, EveryGradientCellOfAWholeRewriteIsWithinTheBound) {
  const std::vector<std::pair<BoundSetup, std::string>> setups = {
      {{"f32 none 16x24, fold B=4", train_spec(Prec::F32, "none", 16, 24)}, "4"},
      {{"f32 causal 16x12, two-pass (fully masked rows)", train_spec(Prec::F32, "causal", 16, 12)}, ""},
      {{"f32 causal 16x24, fold B=5", train_spec(Prec::F32, "causal", 16, 24)}, "5"},
      {{"f16 none 16x10, fold B=3", train_spec(Prec::F16, "none", 16, 10)}, "3"},
      {{"f64 none 16x20, two-pass", train_spec(Prec::F64, "none", 16, 20)}, ""},
      {{"bf16 padding:3 16x10, fold B=4", train_spec(Prec::BF16, "padding:3", 16, 10)}, "4"},
  };
  const int rows = std::max(64, rows_wanted() / 2);
  for (const auto& [s, block] : setups) expect_within_the_bound(s, whole_pair(s, block), rows, true);
}

// A forward far less accurate than the fold (l and O scaled by 1 + 2^-12 before the backward reads
// them) is carried through: every cell stays within the bound with the observed l_err and o_err,
// and leaves it when they are taken as 0 (so §8.1's terms are what hold it).
TEST(BackwardBound, APerturbedForwardIsCarriedThroughTheBound) {
  const BoundSetup s{"f32 none 8x12, fold B=4", train_spec(Prec::F32, "none", 8, 12)};
  auto pair = whole_pair(s, "4");
  pair.second = ostest::scaled_before_backward(pair.second, {"row_sum", "o"}, 1 + 0x1p-12);
  const Tally carried = run_setup(s, pair, 64, true);
  EXPECT_EQ(carried.violations, 0) << carried.first_violation;
  ignore_forward_perturbation = true;
  const Tally ignored = run_setup(s, pair, 64, true);
  ignore_forward_perturbation = false;
  EXPECT_GT(ignored.violations, 0);
}

// The same check fails for a fused form that computes something else: D scaled by 1 + 2^-10, after
// the pair and after the whole rewrite.
TEST(BackwardBound, APlantedMutantLeavesTheBound) {
  for (const bool whole : {false, true}) {
    const BoundSetup s{"f32 none 8x12", train_spec(Prec::F32, "none", 8, 12)};
    auto pair = whole ? whole_pair(s, "4") : backward_pair(s);
    // Scale the row dot D by 1 + 2^-10 in the target: a perturbation far above rounding.
    bool planted = false;
    std::function<StmtP(const StmtP&)> plant = [&](const StmtP& st) -> StmtP {
      if (!st) return st;
      auto out = std::make_shared<Stmt>(*st);
      if (out->kind == StmtKind::Set && out->name.find("rowdot") != std::string::npos && !planted) {
        out->value = binary(BinOp::Mul, out->value, constant(1 + std::ldexp(1.0, -10), out->value->prec),
                            out->value->prec);
        planted = true;
      }
      for (auto& b : out->body) b = plant(b);
      return out;
    };
    pair.second.body = plant(pair.second.body);
    ASSERT_TRUE(planted);
    Tally t = run_setup(s, pair, 64, whole);
    EXPECT_GT(t.violations, 0) << (whole ? "whole rewrite" : "pair");
  }
}

// The bound's double evaluation rounds every operation upward: dV's tail, evaluated exactly in
// MPFR from the same γ, is never above the double result. (Rounded to nearest, the products of
// (1 + γ_m) round down about half the time.)
TEST(BackwardBound, TheDoubleEvaluationRoundsUpward) {
  int compared = 0;
  for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16})
    for (std::int64_t terms = 1; terms <= 300; ++terms) {
      const double got = verify::backward_dv_tail(terms, p);
      const double u = verify::unit_roundoff(p), w = verify::underflow_error(p), gm = verify::gamma_bound(terms, u);
      using verify::Up;
      auto up = [](double x) { return Up(static_cast<long double>(x)); };
      // terms·2(2 + u)ω(1 + γ_m) + 2(1 + u)ω at 256 bits (exact for these few operations).
      const Up exact = up(static_cast<double>(terms)) * up(2) * (up(2) + up(u)) * up(w) * (up(1) + up(gm)) +
                       up(2) * (up(1) + up(u)) * up(w);
      EXPECT_LE(mpfr_cmp_d(exact.raw(), got), 0) << prec_name(p) << " m = " << terms;
      ++compared;
    }
  EXPECT_EQ(compared, 1200);
}

}  // namespace
}  // namespace fp
