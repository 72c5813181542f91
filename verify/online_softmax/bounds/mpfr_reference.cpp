#include "verify/online_softmax/bounds/mpfr_reference.h"

#include <fmt/format.h>
#include <mpfr.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "core/support/deadline.h"
#include "rewrites/online_softmax/claims.h"
#include "rewrites/online_softmax/online_softmax.h"
#include "verify/bounds/mpfr_up.h"
#include "verify/error_bound.h"
#include "verify/online_softmax/bounds/normalizer_bound.h"

namespace fp::verify {

namespace {

const char* const kFamilies[] = {"uniform",       "wide-range",  "ties",           "-inf-prefix",
                                 "near-overflow", "near-lowest", "increasing",     "increasing-step-1",
                                 "tiny",          "decreasing",  "small-integers", "nan-or-inf",
                                 "all--inf"};
constexpr int kFamilyCount = sizeof(kFamilies) / sizeof(kFamilies[0]);
// Relative frequency of each family.
constexpr int kWeights[kFamilyCount] = {6, 4, 3, 3, 2, 2, 4, 4, 2, 2, 2, 1, 1};

struct Row {
  int family = 0;
  std::vector<double> x;
};

std::vector<double> make_row(int family, std::int64_t n, Prec p, SplitMix64& rng) {
  const double mx = max_finite(p), tiny = min_positive(p);
  auto uni = [&](double lo, double hi) { return lo + (hi - lo) * rng.unit(); };
  std::vector<double> x(static_cast<std::size_t>(n));
  const std::string f = kFamilies[family];
  if (f == "uniform") {
    double s = std::vector<double>{1, 4, 20, 0.01}[static_cast<std::size_t>(rng.range(0, 3))];
    for (auto& v : x) v = uni(-s, s);
  } else if (f == "wide-range") {
    double top = std::log10(mx) - 0.5;
    for (auto& v : x) v = (rng.unit() < 0.5 ? -1 : 1) * std::pow(10.0, uni(-3, std::min(top, 6.0)));
  } else if (f == "ties") {
    double c = uni(-10, 10);
    for (auto& v : x) v = rng.unit() < 0.6 ? c : uni(c - 5, c);
  } else if (f == "-inf-prefix") {
    std::int64_t k = rng.range(1, std::max<std::int64_t>(1, n - 1));
    for (std::int64_t i = 0; i < n; ++i)
      x[static_cast<std::size_t>(i)] = i < k && k < n ? -INFINITY : uni(-3, 3);
  } else if (f == "near-overflow") {
    for (auto& v : x) {
      double r = rng.unit();
      v = r < 0.3 ? mx : r < 0.5 ? -mx : (rng.unit() < 0.5 ? -1 : 1) * mx * (1 - std::ldexp(rng.unit(), -4));
    }
  } else if (f == "near-lowest") {
    for (auto& v : x) {
      double r = rng.unit();
      v = r < 0.4 ? -mx : r < 0.55 ? -INFINITY : -mx * (1 - std::ldexp(rng.unit(), -6));
    }
  } else if (f == "increasing") {
    double v0 = uni(-20, 0);
    for (auto& v : x) v = (v0 += uni(0.01, 3));
  } else if (f == "increasing-step-1") {
    double v0 = uni(-5, 5), step = uni(0.9, 1.1);
    for (auto& v : x) v = (v0 += step);
  } else if (f == "tiny") {
    for (auto& v : x) v = (rng.unit() < 0.5 ? -1 : 1) * tiny * static_cast<double>(rng.range(0, 64));
  } else if (f == "decreasing") {
    double v0 = uni(0, 20);
    for (auto& v : x) v = (v0 -= uni(0.01, 3));
  } else if (f == "small-integers") {
    for (auto& v : x) v = static_cast<double>(rng.range(-3, 3));
  } else if (f == "nan-or-inf") {
    for (auto& v : x) v = uni(-3, 3);
    x[static_cast<std::size_t>(rng.range(0, n - 1))] = rng.unit() < 0.5 ? NAN : INFINITY;
  } else {  // all -inf
    for (auto& v : x) v = -INFINITY;
  }
  for (auto& v : x) v = round_to(p, v);
  return x;
}

int pick_family(SplitMix64& rng) {
  int total = 0;
  for (int w : kWeights) total += w;
  std::int64_t r = rng.range(0, total - 1);
  for (int i = 0; i < kFamilyCount; ++i) {
    if (r < kWeights[i]) return i;
    r -= kWeights[i];
  }
  return 0;
}

std::string row_text(const Row& r) {
  std::string s = fmt::format("{} n={} [", kFamilies[r.family], r.x.size());
  for (std::size_t i = 0; i < r.x.size() && i < 6; ++i) s += fmt::format("{}{:.9g}", i ? ", " : "", r.x[i]);
  return s + (r.x.size() > 6 ? ", …]" : "]");
}

}  // namespace

Routine normalizer_rows_routine(Prec p, std::int64_t rows, std::int64_t n) {
  Routine r;
  r.name = "normalizer_rows";
  auto node = [&](std::string name, std::vector<std::int64_t> dims, bool in, bool out) {
    r.nodes.push_back(make_node(std::move(name), std::move(dims), p, in, out));
  };
  node("x", {rows, n}, true, false);
  node("m", {rows}, false, true);
  node("sh", {rows, n}, false, false);
  node("e", {rows, n}, false, false);
  node("l", {rows}, false, true);
  auto I = [](const char* s) { return Index::iter(s); };
  auto rows_loop = [&](std::vector<StmtP> body) { return for_loop("i", 0, rows - 1, std::move(body)); };
  auto both = [&](StmtP s) { return rows_loop({for_loop("j", 0, n - 1, {std::move(s)})}); };
  auto X = get("x", {I("i"), I("j")}, p);
  std::vector<StmtP> body = {
      rows_loop({set("m", {I("i")}, constant(-INFINITY, p))}),
      both(set("m", {I("i")}, binary(BinOp::Max, get("m", {I("i")}, p), X, p))),
      both(set("sh", {I("i"), I("j")}, binary(BinOp::Sub, X, get("m", {I("i")}, p), p))),
      both(set("e", {I("i"), I("j")}, unary(UnOp::Exp, get("sh", {I("i"), I("j")}, p), p))),
      zero("l"),
      both(set("l", {I("i")}, binary(BinOp::Add, get("l", {I("i")}, p), get("e", {I("i"), I("j")}, p), p))),
  };
  r.body = seq(std::move(body));
  return r;
}

Routine fold_rows_routine(Prec p, std::int64_t rows, std::int64_t n) {
  Routine r;
  r.name = "fold_rows";
  auto node = [&](std::string name, std::vector<std::int64_t> dims, bool in, bool out) {
    r.nodes.push_back(make_node(std::move(name), std::move(dims), p, in, out));
  };
  node("one", {rows, 1}, true, false);
  node("x", {rows, n, 1}, true, false);
  node("v", {n, 1}, true, false);
  node("s", {rows, n}, false, false);
  node("m", {rows}, false, true);
  node("sh", {rows, n}, false, false);
  node("e", {rows, n}, false, false);
  node("l", {rows}, false, true);
  node("p", {rows, n}, false, true);
  node("o", {rows, 1}, false, true);
  auto I = [](const char* s) { return Index::iter(s); };
  auto rows_loop = [&](std::vector<StmtP> body) { return for_loop("i", 0, rows - 1, std::move(body)); };
  auto both = [&](StmtP s) { return rows_loop({for_loop("j", 0, n - 1, {std::move(s)})}); };
  auto S = get("s", {I("i"), I("j")}, p);
  std::vector<StmtP> body = {
      zero("s"),
      both(for_loop("d", 0, 0,
                    {set("s", {I("i"), I("j")},
                         binary(BinOp::Add, S,
                                binary(BinOp::Mul, get("one", {I("i"), I("d")}, p),
                                       get("x", {I("i"), I("j"), I("d")}, p), p),
                                p))})),
      rows_loop({set("m", {I("i")}, constant(-INFINITY, p))}),
      both(set("m", {I("i")}, binary(BinOp::Max, get("m", {I("i")}, p), S, p))),
      both(set("sh", {I("i"), I("j")}, binary(BinOp::Sub, S, get("m", {I("i")}, p), p))),
      both(set("e", {I("i"), I("j")}, unary(UnOp::Exp, get("sh", {I("i"), I("j")}, p), p))),
      zero("l"),
      both(set("l", {I("i")}, binary(BinOp::Add, get("l", {I("i")}, p), get("e", {I("i"), I("j")}, p), p))),
      both(set("p", {I("i"), I("j")}, binary(BinOp::Div, get("e", {I("i"), I("j")}, p), get("l", {I("i")}, p), p))),
      zero("o"),
      rows_loop({for_loop("c", 0, 0,
                          {for_loop("j", 0, n - 1,
                                    {set("o", {I("i"), I("c")},
                                         binary(BinOp::Add, get("o", {I("i"), I("c")}, p),
                                                binary(BinOp::Mul, get("p", {I("i"), I("j")}, p),
                                                       get("v", {I("j"), I("c")}, p), p),
                                                p))})})}),
  };
  r.body = seq(std::move(body));
  return r;
}

namespace {
constexpr std::int64_t kFocusWork = 384'000;

// The fold's output O against the composed one on each finite row (fold_rows_routine: one value
// column v): |O_fold - O_src| <= rel_z·Σ(|P̂| + κ)|v| + abs, the magnitude summed in 256-bit MPFR
// rounded down, the error rounded up; NaN positions identical.
void check_output_rows(MpfrReport& rep, const std::vector<Row>& rows, const std::vector<double>& v,
                       const TensorMap& src, const TensorMap& tgt, const FoldOutputBound& ob, std::int64_t n) {
  Mpfr mag(256), t(256), err(256), allowed(256);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double os = src.at("o").data[i], ot = tgt.at("o").data[i];
    const double ls = src.at("l").data[i];
    if (std::isnan(ls)) {
      if (std::isnan(os) != std::isnan(ot)) {
        ++rep.output_violations;
        if (rep.first_output_violation.empty())
          rep.first_output_violation = fmt::format("O NaN in one side only (src {}, tgt {}) on {}", os, ot, row_text(rows[i]));
      }
      continue;
    }
    ++rep.output_rows;
    if (std::isinf(os) && os == ot) continue;  // the same overflow on both sides
    mpfr_set_zero(mag.v, 1);
    for (std::int64_t j = 0; j < n; ++j) {
      const double pj = src.at("p").data[i * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)];
      mpfr_set_d(t.v, std::fabs(pj), MPFR_RNDD);
      mpfr_add_d(t.v, t.v, ob.kappa, MPFR_RNDD);
      mpfr_mul_d(t.v, t.v, std::fabs(v[static_cast<std::size_t>(j)]), MPFR_RNDD);
      mpfr_add(mag.v, mag.v, t.v, MPFR_RNDD);
    }
    mpfr_mul_d(allowed.v, mag.v, ob.rel_z, MPFR_RNDD);
    mpfr_add_d(allowed.v, allowed.v, ob.abs, MPFR_RNDD);
    mpfr_set_d(err.v, ot, MPFR_RNDN);
    mpfr_sub_d(err.v, err.v, os, MPFR_RNDU);
    mpfr_abs(err.v, err.v, MPFR_RNDU);
    const double frac = mpfr_sgn(allowed.v) > 0 ? mpfr_get_d(err.v, MPFR_RNDU) / mpfr_get_d(allowed.v, MPFR_RNDD)
                        : mpfr_sgn(err.v) == 0 ? 0
                                               : INFINITY;
    if (!(frac <= 1)) {
      ++rep.output_violations;
      if (rep.first_output_violation.empty())
        rep.first_output_violation = fmt::format("O outside its bound ({:.3g} of it: src {}, tgt {}) on {}", frac, os, ot,
                                          row_text(rows[i]));
    }
    if (frac > rep.worst_output) {
      rep.worst_output = frac;
      rep.worst_output_row = row_text(rows[i]);
    }
  }
}

// The bound a row of n keys is checked against: the scan's, or the fold's at min(block, n).
NormalizerBound row_bound(Prec storage, Prec state, std::int64_t n, std::int64_t block, double exp_ulp) {
  return block > 0 ? fold_bound(storage, state, n, std::min(block, n), exp_ulp)
                   : normalizer_bound(storage, state, n, exp_ulp);
}
}  // namespace

MpfrReport mpfr_check_normalizer(Prec storage, std::int64_t n_focus, const Limits& limits, std::int64_t block) {
  auto t0 = std::chrono::steady_clock::now();
  MpfrReport rep;
  rep.storage = storage;
  rep.state = state_prec(storage);
  rep.bits = std::max(limits.mpfr_bits, 200);
  std::vector<std::int64_t> ladder;
  for (std::int64_t n : {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64, 100, 128, 256})
    if (row_bound(storage, rep.state, n, block, limits.exp_ulp).defined) ladder.push_back(n);
  // The ladder the random picks range over; the focus n, when it is not on it, only gets its share.
  const std::size_t base = ladder.size();
  if (n_focus > 0 && n_focus <= kFocusWork && row_bound(storage, rep.state, n_focus, block, limits.exp_ulp).defined &&
      std::find(ladder.begin(), ladder.end(), n_focus) == ladder.end())
    ladder.push_back(n_focus);
  rep.key_counts = ladder;
  FP_INTERNAL_CHECK(base > 0, "no key count with a defined bound at {}", prec_name(storage));

  SplitMix64 rng(limits.seed * 0x9e3779b97f4a7c15ull + 0x6d706672ull + static_cast<std::uint64_t>(storage));
  std::map<std::int64_t, std::vector<Row>> by_n;
  // The focus n's rows are capped by their work (kFocusWork terms; the rest of its share goes to
  // the ladder): at n = 4096 the 15% share was 1500 rows of 4096 200-bit exps each, 25 s, for a
  // confirmation of what the induction proves for every n. Past kFocusWork keys no row fits: the
  // focus is then covered by the induction and its instance at n alone (the report lists the key
  // counts that were sampled).
  const std::int64_t focus_cap = n_focus > 0 ? kFocusWork / n_focus : 0;
  std::int64_t focus_rows = 0;
  for (int i = 0; i < limits.mpfr_rows; ++i) {
    // Small key counts are cheap and where adversarial structure matters most; the focus n (the
    // obligation's own) gets a fixed share.
    std::int64_t n;
    double r = rng.unit();
    if (n_focus > 0 && r < 0.15 && focus_rows < focus_cap &&
        std::find(ladder.begin(), ladder.end(), n_focus) != ladder.end()) {
      n = n_focus;
      ++focus_rows;
    } else {
      n = ladder[static_cast<std::size_t>(std::min<std::int64_t>(
          static_cast<std::int64_t>(base) - 1,
          static_cast<std::int64_t>(std::floor(std::pow(rng.unit(), 1.6) * static_cast<double>(base)))))];
    }
    Row row;
    row.family = pick_family(rng);
    row.x = make_row(row.family, n, storage, rng);
    by_n[n].push_back(std::move(row));
  }

  const char* shape = block > 0 ? osm::kBlockFoldId : osm::kNormalizerScanId;
  std::vector<FamilyStats> fam(kFamilyCount);
  for (int i = 0; i < kFamilyCount; ++i) fam[static_cast<std::size_t>(i)].name = kFamilies[i];

  Mpfr sum(rep.bits), term(rep.bits), mx(rep.bits), tmp(rep.bits), err(rep.bits), sum_err(rep.bits),
      den(rep.bits);
  for (auto& [n, rows] : by_n) {
    const NormalizerBound b = row_bound(storage, rep.state, n, block, limits.exp_ulp);
    const auto R = static_cast<std::int64_t>(rows.size());
    Routine composed = block > 0 ? fold_rows_routine(storage, R, n) : normalizer_rows_routine(storage, R, n);
    // The member's own emitter, the one shape alone (the tier would run every shape the gates allow).
    const MemberOutput rw = osm::rewrite(composed, osm::RewriteOptions::only(shape, block));
    FP_INTERNAL_CHECK(rw.applications.size() == 1 && rw.applications[0].shape == shape,
                      "the {} rows routine was not rewritten by {} ({} applications)", composed.name, shape,
                      rw.applications.size());
    Tensor x = Tensor::zeros(storage, block > 0 ? std::vector<std::int64_t>{R, n, 1} : std::vector<std::int64_t>{R, n});
    for (std::int64_t i = 0; i < R; ++i)
      std::copy(rows[static_cast<std::size_t>(i)].x.begin(), rows[static_cast<std::size_t>(i)].x.end(),
                x.data.begin() + i * n);
    TensorMap in{{"x", x}};
    std::optional<FoldOutputBound> ob;
    if (block > 0) {
      // Values: signed, magnitudes over 2^-e .. 2^e, e = 20 (10 at f16, whose range ends at 65504:
      // the bound holds without overflow), rounded to the storage precision; one column shared by
      // the group's rows.
      Tensor one = Tensor::zeros(storage, {R, 1}), v = Tensor::zeros(storage, {n, 1});
      std::fill(one.data.begin(), one.data.end(), 1.0);
      const int vexp = storage == Prec::F16 ? 10 : 20;
      for (auto& vj : v.data)
        vj = round_to(storage, (rng.unit() < 0.5 ? -1 : 1) * (0.5 + rng.unit()) *
                                  std::ldexp(1.0, static_cast<int>(rng.range(-vexp, vexp))));
      in.emplace("one", one);
      in.emplace("v", v);
      ob = fold_output_bound(storage, rep.state, n, std::min(block, n), limits.exp_ulp);
    }
    TensorMap src = interpret(composed, in), tgt = interpret(rw.routine, in);
    if (ob && ob->defined) check_output_rows(rep, rows, in.at("v").data, src, tgt, *ob, n);
    for (std::int64_t i = 0; i < R; ++i) {
      if ((i & 255) == 0) check_deadline("MPFR reference rows");
      const Row& row = rows[static_cast<std::size_t>(i)];
      FamilyStats& fs = fam[static_cast<std::size_t>(row.family)];
      ++rep.rows;
      ++fs.rows;
      const double ls = src.at("l").data[static_cast<std::size_t>(i)];
      const double lt = tgt.at("l").data[static_cast<std::size_t>(i)];
      const double ms = src.at("m").data[static_cast<std::size_t>(i)];
      const double mt = tgt.at("m").data[static_cast<std::size_t>(i)];
      if (!(ms == mt || (std::isnan(ms) && std::isnan(mt))) || std::signbit(ms) != std::signbit(mt)) {
        ++rep.max_mismatches;
        if (rep.first_violation.empty())
          rep.first_violation = fmt::format("m differs ({} vs {}) on {}", ms, mt, row_text(row));
      }
      if (std::isnan(ls) || std::isnan(lt)) {
        ++rep.special_rows;
        if (std::isnan(ls) != std::isnan(lt)) {
          ++rep.nan_mismatches;
          if (rep.first_violation.empty())
            rep.first_violation =
                fmt::format("NaN in one side only (src {}, tgt {}) on {}", ls, lt, row_text(row));
        }
        continue;
      }
      ++rep.finite_rows;
      // S = Σ exp(x_t - M) at rep.bits.
      double M = -INFINITY;
      for (double v : row.x) M = std::max(M, v);
      mpfr_set_d(mx.v, M, MPFR_RNDN);
      mpfr_set_zero(sum.v, 1);
      for (double v : row.x) {
        if (v == -INFINITY) continue;
        mpfr_set_d(tmp.v, v, MPFR_RNDN);
        mpfr_sub(tmp.v, tmp.v, mx.v, MPFR_RNDN);
        mpfr_exp(term.v, tmp.v, MPFR_RNDN);
        mpfr_add(sum.v, sum.v, term.v, MPFR_RNDN);
      }
      // S carries n exps, n subtractions and n additions rounded to nearest at rep.bits: its
      // relative error is below (n + 4)·2^(1 - bits). Errors are rounded up, S·bound down.
      mpfr_mul_d(sum_err.v, sum.v, static_cast<double>(row.x.size() + 4), MPFR_RNDU);
      mpfr_mul_2si(sum_err.v, sum_err.v, 1 - rep.bits, MPFR_RNDU);
      auto ratio_to_s = [&](double l, double bnd) {
        error_up(err.v, l, sum.v, sum_err.v);
        mpfr_sub(den.v, sum.v, sum_err.v, MPFR_RNDD);
        mpfr_mul_d(den.v, den.v, bnd, MPFR_RNDD);
        mpfr_div(err.v, err.v, den.v, MPFR_RNDU);
        return mpfr_get_d(err.v, MPFR_RNDU);
      };
      const double rs = ratio_to_s(ls, b.b_src), rt = ratio_to_s(lt, b.b_tgt);
      const double rp = error_fraction(ls, lt, b.rel, std::fabs(ls), 0);
      rep.worst_src = std::max(rep.worst_src, rs);
      rep.worst_tgt = std::max(rep.worst_tgt, rt);
      fs.worst = std::max(fs.worst, rp);
      if (rp > rep.worst_pair) {
        rep.worst_pair = rp;
        rep.worst_row = row_text(row);
      }
      if (rs > 1 || rt > 1 || rp > 1) {
        ++rep.violations;
        if (rep.first_violation.empty())
          rep.first_violation =
              fmt::format("bound exceeded (pair {:.3g}, src {:.3g}, tgt {:.3g} of the bound) on {}", rp, rs,
                          rt, row_text(row));
      }
    }
  }
  mpfr_free_cache();
  for (auto& f : fam)
    if (f.rows > 0) rep.families.push_back(f);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace fp::verify
