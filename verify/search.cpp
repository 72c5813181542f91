#include "verify/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/ir_visit.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "core/support/deadline.h"
#include "verify/phase_clock.h"

namespace fp::verify {

namespace {

std::vector<double> specials(Prec p) {
  if (p == Prec::I32) return {2147483647.0, -2147483648.0, 0, -1, 1, 8, -8};
  const double mx = max_finite(p);
  return {INFINITY, -INFINITY,        NAN, mx, -mx, 1e30, -1e30, 0.0,
          -0.0,     min_positive(p), 1,   -1, 1e4, -1e4, 88.75, -104.0};
}

enum Family { kRandom, kScaled, kSpecialCell, kSlice, kTies, kInts, kSparse, kSigned, kCancel, kFamilies };
const char* const kFamilyNames[] = {"random",         "scaled", "special-cell", "special-slice", "ties",
                                    "small-integers", "sparse", "one-signed",   "cancellation"};

double fit(Prec p, double v) {
  return round_to(p, v);
}

std::string fmt_two(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

struct Cell {
  const Node* node;
  std::int64_t index;
};

std::vector<Cell> all_cells(const Routine& r) {
  std::vector<Cell> cells;
  for (const Node* n : r.inputs())
    for (std::int64_t i = 0; i < n->cell_count(); ++i) cells.push_back(Cell{n, i});
  return cells;
}

TensorMap trial_inputs(const Routine& r, int k, std::uint64_t seed, std::string& family) {
  const std::uint64_t s = seed * 0x100000001b3ull + static_cast<std::uint64_t>(k) * 0x9e3779b97f4a7c15ull;
  SplitMix64 rng(s ^ 0x7365617263680000ull);
  TensorMap in = random_inputs(r, s);
  if (k == 0) {
    family = kFamilyNames[kRandom];
    return in;
  }
  const auto f = static_cast<Family>(k % kFamilies);
  family = kFamilyNames[f];
  std::vector<const Node*> nodes = r.inputs();
  if (nodes.empty()) return in;
  switch (f) {
    case kRandom:
      break;
    case kScaled: {
      const double scales[] = {1e-40, 1e-20, 1e-5, 100, 1e5, 1e20, 1e35, 1e300};
      double sc = scales[rng.range(0, 7)];
      for (auto& [name, t] : in)
        for (auto& v : t.data) v = fit(t.prec, t.prec == Prec::I32 ? v : v * sc);
      break;
    }
    case kSpecialCell: {
      // Systematic over (cell, special) first, then random.
      std::vector<Cell> cells = all_cells(r);
      const int idx = k / kFamilies;
      const Cell c = cells[static_cast<std::size_t>(idx) % cells.size()];
      std::vector<double> sp = specials(c.node->prec);
      double v = sp[(static_cast<std::size_t>(idx) / cells.size()) % sp.size()];
      in[c.node->name].data[static_cast<std::size_t>(c.index)] = fit(c.node->prec, v);
      break;
    }
    case kSlice: {
      const Node* n =
          nodes[static_cast<std::size_t>(rng.range(0, static_cast<std::int64_t>(nodes.size()) - 1))];
      if (n->dims.empty()) break;
      std::size_t axis =
          static_cast<std::size_t>(rng.range(0, static_cast<std::int64_t>(n->dims.size()) - 1));
      std::int64_t at = rng.range(0, n->dims[axis] - 1);
      std::vector<double> sp = specials(n->prec);
      double v = fit(n->prec, sp[static_cast<std::size_t>(rng.range(0, 4))]);  // the non-finite and ±max ones
      Tensor& t = in[n->name];
      std::int64_t stride = 1;
      for (std::size_t a = axis + 1; a < n->dims.size(); ++a) stride *= n->dims[a];
      for (std::int64_t i = 0; i < t.size(); ++i)
        if ((i / stride) % n->dims[axis] == at) t.data[static_cast<std::size_t>(i)] = v;
      break;
    }
    case kTies: {
      const double cs[] = {0, 1, -1, 0.5, 2, 3};
      double c = rng.unit() < 0.5 ? cs[rng.range(0, 5)] : 4 * rng.unit() - 2;
      for (auto& [name, t] : in)
        for (auto& v : t.data) v = fit(t.prec, c);
      break;
    }
    case kInts:
      for (auto& [name, t] : in)
        for (auto& v : t.data) v = fit(t.prec, static_cast<double>(rng.range(-2, 2)));
      break;
    case kSparse: {
      for (auto& [name, t] : in)
        for (auto& v : t.data) v = fit(t.prec, 0.0);
      std::vector<Cell> cells = all_cells(r);
      int count = static_cast<int>(rng.range(1, 3));
      for (int i = 0; i < count; ++i) {
        const Cell& c =
            cells[static_cast<std::size_t>(rng.range(0, static_cast<std::int64_t>(cells.size()) - 1))];
        std::vector<double> sp = specials(c.node->prec);
        double v = rng.unit() < 0.5
                       ? sp[static_cast<std::size_t>(rng.range(0, static_cast<std::int64_t>(sp.size()) - 1))]
                       : 4 * rng.unit() - 2;
        in[c.node->name].data[static_cast<std::size_t>(c.index)] = fit(c.node->prec, v);
      }
      break;
    }
    case kSigned: {
      bool neg = rng.unit() < 0.5;
      for (auto& [name, t] : in)
        for (auto& v : t.data)
          v = fit(t.prec, t.prec == Prec::I32 ? v : (neg ? -std::fabs(v) : std::fabs(v)));
      break;
    }
    case kCancel: {
      // Two large values of opposite signs among small ones: catastrophic cancellation exposes
      // any change of summation order.
      std::vector<Cell> cells = all_cells(r);
      if (cells.size() < 2) break;
      const double bigs[] = {1e4, 1e8, 1e20, 1e30};
      const Cell& a =
          cells[static_cast<std::size_t>(rng.range(0, static_cast<std::int64_t>(cells.size()) - 1))];
      const Cell& b =
          cells[static_cast<std::size_t>(rng.range(0, static_cast<std::int64_t>(cells.size()) - 1))];
      double big = bigs[rng.range(0, 3)];
      in[a.node->name].data[static_cast<std::size_t>(a.index)] = fit(a.node->prec, big);
      in[b.node->name].data[static_cast<std::size_t>(b.index)] = fit(b.node->prec, -big);
      break;
    }
    case kFamilies:
      break;
  }
  return in;
}

// Scalar operations of one statement executed `times` times, nested statements included.
double statement_work(const Stmt& s, double times) {
  double own = 0;
  for_each_own_expr(s, [&](const ExprP& e) { for_each_expr(e, [&](const Expr&) { own += 1; }); });
  double work = times * (1 + own);
  double inner = times;
  if (s.kind == StmtKind::For || s.kind == StmtKind::Scan)
    inner *= static_cast<double>(std::max<std::int64_t>(0, s.to - s.from + 1));
  for (const auto& b : s.body) work += statement_work(*b, inner);
  return work;
}

}  // namespace

double routine_work(const Routine& r) {
  return r.body ? statement_work(*r.body, 1) : 0;
}

int scaled_search_trials(const PairRunner& runner, int requested) {
  const double per_trial = routine_work(runner.src()) + routine_work(runner.tgt());
  if (per_trial <= 0) return requested;
  const double fit = std::floor(kSearchWork / per_trial);
  return static_cast<int>(std::min<double>(requested, std::max<double>(std::min(requested, kMinSearchTrials), fit)));
}

int cross_check_runs(const PairRunner& runner, int requested) {
  const double per_run = routine_work(runner.src()) + routine_work(runner.tgt());
  if (per_run <= 0) return requested;
  return static_cast<int>(std::clamp<double>(std::floor(kCrossCheckWork / per_run), 1, std::max(1, requested)));
}

std::optional<Found> search_counterexample(const PairRunner& runner, int trials, std::uint64_t seed) {
  ScopedPhase phase("counterexample search");
  trials = scaled_search_trials(runner, trials);
  for (int k = 0; k < trials; ++k) {
    check_deadline("counterexample search");
    std::string family;
    TensorMap in = trial_inputs(runner.src(), k, seed, family);
    if (auto m = runner.run(in)) return Found{std::move(in), *m, family, k};
  }
  return std::nullopt;
}

Found minimize_counterexample(const PairRunner& runner, Found found, int budget) {
  int runs = 0;
  auto still_fails = [&](const TensorMap& in) -> std::optional<Mismatch> {
    check_deadline("counterexample minimization");
    ++runs;
    return runner.run(in);
  };
  const double simple[] = {0, 1, -1, 2, -2, 0.5, -0.5};
  for (int pass = 0; pass < 2 && runs < budget; ++pass) {
    bool changed = false;
    for (auto& [name, t] : found.inputs) {
      for (std::int64_t i = 0; i < t.size() && runs < budget; ++i) {
        double& cell = t.data[static_cast<std::size_t>(i)];
        const double old = cell;
        if (same_value(old, 0.0)) continue;
        bool done = false;
        for (double cand : simple) {
          if (same_value(cand, old)) {
            cell = old;  // already the simplest value that fails
            done = true;
            break;
          }
          cell = round_to(t.prec, cand);
          if (auto m = still_fails(found.inputs)) {
            found.mismatch = *m;
            changed = true;
            done = true;
            break;
          }
          if (runs >= budget) break;
        }
        if (done) continue;
        // Keep the value, but simpler: an integer, then two significant digits.
        cell = old;
        if (std::isfinite(old)) {
          for (double cand : {std::round(old), std::strtod(fmt_two(old).c_str(), nullptr)}) {
            if (same_value(cand, old) || runs >= budget) continue;
            cell = round_to(t.prec, cand);
            if (auto m = still_fails(found.inputs)) {
              found.mismatch = *m;
              changed = true;
              break;
            }
            cell = old;
          }
        }
      }
    }
    if (!changed) break;
  }
  return found;
}

TensorMap inputs_from_cells(const Routine& r,
                            const std::map<std::pair<std::string, std::int64_t>, double>& cells) {
  TensorMap in;
  for (const Node* n : r.inputs()) {
    Tensor t = Tensor::zeros(n->prec, n->dims);
    for (std::int64_t i = 0; i < t.size(); ++i) {
      auto it = cells.find({n->name, i});
      if (it != cells.end()) t.data[static_cast<std::size_t>(i)] = round_to(n->prec, it->second);
    }
    in[n->name] = std::move(t);
  }
  return in;
}

}  // namespace fp::verify
