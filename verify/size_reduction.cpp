#include "verify/size_reduction.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/ir_visit.h"
#include "core/support/deadline.h"
#include "verify/phase_clock.h"
#include "verify/program_equality.h"
#include "verify/routine_pair_memo.h"

namespace fp::verify {

namespace {

// Per loop statement, the extents of the node axes its symbol indexes as ±sym + c.
using Ties = std::map<const Stmt*, std::set<std::int64_t>>;

void collect_ties(const Routine& r, const StmtP& s, std::vector<std::pair<std::string, const Stmt*>>& scope,
                  Ties& ties) {
  auto note = [&](const std::string& node, const std::vector<Index>& idx) {
    const Node* n = r.find_node(node);
    if (!n) return;
    for (std::size_t a = 0; a < idx.size() && a < n->dims.size(); ++a) {
      const Index& i = idx[a];
      if (i.terms.size() != 1 || std::llabs(i.terms[0].coef) != 1) continue;
      for (auto it = scope.rbegin(); it != scope.rend(); ++it)
        if (it->first == i.terms[0].sym) {
          ties[it->second].insert(n->dims[a]);
          break;
        }
    }
  };
  if (s->kind == StmtKind::Set) note(s->name, s->indices);
  // Own expressions first: a scan's carried inits are evaluated outside its scope.
  for_each_own_expr(*s, [&](const ExprP& e) {
    for_each_expr(e, [&](const Expr& x) {
      if (x.kind == ExprKind::Get) note(x.name, x.indices);
    });
  });
  const bool loop = s->kind == StmtKind::For || s->kind == StmtKind::Scan;
  if (loop) {
    ties[s.get()];  // a loop that indexes nothing still has an (empty) entry
    scope.emplace_back(s->sym, s.get());
  }
  for (const auto& b : s->body) collect_ties(r, b, scope, ties);
  if (loop) scope.pop_back();
}

class Resizer {
 public:
  Resizer(const Routine& r, std::int64_t V, std::int64_t v) : r_(r), V_(V), v_(v) {
    std::vector<std::pair<std::string, const Stmt*>> scope;
    collect_ties(r, r.body, scope, ties_);
  }

  StmtP stmt(const StmtP& s) const {
    bool changed = false;
    auto copy = std::make_shared<Stmt>(*s);
    if (s->kind == StmtKind::Set) {
      std::vector<Index> idx = indices(s->name, s->indices);
      if (idx != s->indices) {
        copy->indices = std::move(idx);
        changed = true;
      }
    }
    if (s->value) {
      ExprP e = expr(s->value);
      changed = changed || e != s->value;
      copy->value = e;
    }
    for (auto& c : copy->carried) {
      if (!c.init) continue;
      ExprP e = expr(c.init);
      changed = changed || e != c.init;
      c.init = e;
    }
    for (auto& b : copy->body) {
      StmtP nb = stmt(b);
      changed = changed || nb != b;
      b = nb;
    }
    if ((s->kind == StmtKind::For || s->kind == StmtKind::Scan) && tied(*s)) {
      copy->from = bound(s->from);
      copy->to = bound(s->to);
      changed = changed || copy->from != s->from || copy->to != s->to;
    }
    return changed ? StmtP(copy) : s;
  }

 private:
  // A bound (or index) counted from the end of an axis of extent V: in its last three cells and
  // past its middle.
  bool near_end(std::int64_t b) const { return b >= V_ - 3 && 2 * b > V_ - 1; }
  std::int64_t bound(std::int64_t b) const { return near_end(b) ? b - (V_ - v_) : b; }

  bool tied(const Stmt& s) const {
    auto it = ties_.find(&s);
    if (it != ties_.end() && !it->second.empty()) return it->second.count(V_) > 0;
    return s.from == 0 && s.to == V_ - 1;
  }

  std::vector<Index> indices(const std::string& node, const std::vector<Index>& idx) const {
    const Node* n = r_.find_node(node);
    if (!n) return idx;
    std::vector<Index> out = idx;
    for (std::size_t a = 0; a < out.size() && a < n->dims.size(); ++a) {
      if (n->dims[a] != V_) continue;
      Index& i = out[a];
      const bool fixed = i.terms.empty();
      const bool reversed = i.terms.size() == 1 && i.terms[0].coef == -1;
      if ((fixed || reversed) && near_end(i.offset)) i.offset -= V_ - v_;
    }
    return out;
  }

  ExprP expr(const ExprP& e) const {
    if (!e) return e;
    std::shared_ptr<Expr> copy;
    if (e->kind == ExprKind::Get) {
      std::vector<Index> idx = indices(e->name, e->indices);
      if (idx != e->indices) {
        copy = std::make_shared<Expr>(*e);
        copy->indices = std::move(idx);
      }
    }
    for (std::size_t k = 0; k < e->args.size(); ++k) {
      ExprP a = expr(e->args[k]);
      if (a == e->args[k]) continue;
      if (!copy) copy = std::make_shared<Expr>(*e);
      copy->args[k] = a;
    }
    return copy ? ExprP(copy) : e;
  }

  const Routine& r_;
  std::int64_t V_, v_;
  Ties ties_;
};

std::vector<std::int64_t> candidates(std::int64_t V) {
  std::set<std::int64_t> c;
  for (std::int64_t x :
       {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{4}, V / 8, V / 4, V / 2})
    if (x >= 1 && x < V) c.insert(x);
  return {c.begin(), c.end()};
}

// The leading (or trailing) cells of `t` along every axis, to `dims`.
Tensor crop(const Tensor& t, const std::vector<std::int64_t>& dims, bool leading) {
  FP_INTERNAL_CHECK(dims.size() == t.dims.size(), "cropping a rank-{} tensor to rank {}", t.dims.size(),
                    dims.size());
  Tensor out = Tensor::zeros(t.prec, dims);
  std::vector<std::int64_t> stride(dims.size(), 1);
  for (std::size_t k = dims.size(); k-- > 1;) stride[k - 1] = stride[k] * t.dims[k];
  for (std::int64_t flat = 0; flat < out.size(); ++flat) {
    std::int64_t rem = flat, from = 0;
    for (std::size_t k = dims.size(); k-- > 0;) {
      FP_INTERNAL_CHECK(dims[k] <= t.dims[k], "cropping axis {} from {} up to {}", k, t.dims[k], dims[k]);
      const std::int64_t i = rem % dims[k] + (leading ? 0 : t.dims[k] - dims[k]);
      rem /= dims[k];
      from += i * stride[k];
    }
    out.data[static_cast<std::size_t>(flat)] = t.data[static_cast<std::size_t>(from)];
  }
  return out;
}

TensorMap crop_inputs(const Routine& r, const TensorMap& inputs, bool leading) {
  TensorMap out;
  for (const Node* n : r.inputs()) out[n->name] = crop(inputs.at(n->name), n->dims, leading);
  return out;
}

bool well_formed(const Routine& r) {
  return check_routine(r).empty();
}

// Failing inputs for the resized pair: the old ones cropped, else a short search.
std::optional<Found> still_fails(const PairRunner& small, const TensorMap& inputs, int trials,
                                 std::uint64_t seed) {
  TensorMap leading = crop_inputs(small.src(), inputs, true);
  if (auto m = small.run(leading)) return Found{std::move(leading), *m, "cropped (leading cells)", 0};
  TensorMap trailing = crop_inputs(small.src(), inputs, false);
  bool same = true;
  for (const auto& [name, t] : trailing) same = same && t.data == leading.at(name).data;
  if (!same)
    if (auto m = small.run(trailing)) return Found{std::move(trailing), *m, "cropped (trailing cells)", 0};
  if (trials <= 0) return std::nullopt;
  return search_counterexample(small, trials, seed);
}

}  // namespace

Routine resize_routine(const Routine& r, std::int64_t V, std::int64_t v) {
  FP_INTERNAL_CHECK(v >= 1 && V >= 1, "resizing extent {} to {}", V, v);
  Routine out = r;
  out.body = Resizer(r, V, v).stmt(r.body);
  for (auto& n : out.nodes)
    for (auto& d : n.dims)
      if (d == V) d = v;
  for (auto& [key, value] : out.attrs)
    if (value == V) value = v;
  return out;
}

std::string SizeReduction::text() const {
  return extents_text(extents);
}

namespace {

// The source side of the substitutions, kept per process: every obligation of a tier round has
// the same source (the same statement objects), so a 24-layer model resizes and checks it once,
// not 96 times. The key holds the body it was computed from, so its address cannot be reused.
struct ResizedSource {
  StmtP from;  // keeps the key's body alive
  Routine out;
  bool ok = false;
};
std::mutex g_resized_mutex;
std::map<std::string, ResizedSource> g_resized;

std::pair<Routine, bool> resized_source(const Routine& r, std::int64_t V, std::int64_t v) {
  std::string key = fmt::format("{}|{}|{}|{}|", static_cast<const void*>(r.body.get()), r.name, V, v);
  for (const auto& n : r.nodes) key += fmt::format("{}[{}];", n.name, fmt::join(n.dims, ","));
  for (const auto& [a, x] : r.attrs) key += fmt::format("{}={};", a, x);
  {
    std::lock_guard<std::mutex> lock(g_resized_mutex);
    if (auto it = g_resized.find(key); it != g_resized.end()) return {it->second.out, it->second.ok};
  }
  Routine out = resize_routine(r, V, v);
  const bool ok = well_formed(out);
  std::lock_guard<std::mutex> lock(g_resized_mutex);
  if (g_resized.size() >= 256) g_resized.clear();
  g_resized.emplace(key, ResizedSource{r.body, out, ok});
  return {out, ok};
}

}  // namespace

ShrunkPair shrink_pair(const Routine& src, const Routine& tgt, std::int64_t cap) {
  check_deadline("the cross-check instance");
  ShrunkPair res{src, tgt, {}};
  std::set<std::int64_t, std::greater<>> extents;
  for (const Routine* r : {&src, &tgt})
    for (const auto& n : r->nodes) extents.insert(n.dims.begin(), n.dims.end());
  for (std::int64_t V : extents) {
    if (V <= cap) break;
    auto [s, src_ok] = resized_source(res.src, V, cap);
    if (!src_ok) continue;
    Routine t = resize_routine(res.tgt, V, cap);
    if (!well_formed(t)) continue;
    res.src = std::move(s);
    res.tgt = std::move(t);
    res.extents.push_back(ExtentReduction{V, cap});
  }
  return res;
}

ShrunkPair cross_check_instance(const Routine& src, const Routine& tgt) {
  ScopedPhase phase("cross-check instance");
  ShrunkPair eight = shrink_pair(src, tgt, 8);
  if (routine_work(eight.src) + routine_work(eight.tgt) <= kCrossCheckInstanceWork) return eight;
  ShrunkPair four = shrink_pair(eight.src, eight.tgt, 4);
  // The substitutions counted from the original extents.
  std::map<std::int64_t, std::int64_t, std::greater<>> current;  // original → final
  for (const auto& e : eight.extents) current[e.original] = e.reduced;
  for (const auto& e : four.extents) {
    bool seen = false;
    for (auto& [orig, cur] : current)
      if (cur == e.original) {
        cur = e.reduced;
        seen = true;
      }
    if (!seen) current[e.original] = e.reduced;
  }
  four.extents.clear();
  for (const auto& [orig, cur] : current) four.extents.push_back(ExtentReduction{orig, cur});
  return four;
}

namespace {

ShrunkPair faithful_shrink(const ShrunkPair& from, std::int64_t cap, const EmitTarget& emit) {
  ShrunkPair res = from;
  std::set<std::int64_t, std::greater<>> extents;
  for (const auto& n : from.src.nodes) extents.insert(n.dims.begin(), n.dims.end());
  for (std::int64_t V : extents) {
    if (V <= cap) break;
    auto [s, src_ok] = resized_source(res.src, V, cap);
    if (!src_ok) continue;
    std::optional<Routine> t = emit(s);
    if (!t || !well_formed(*t)) continue;
    res.src = std::move(s);
    res.tgt = std::move(*t);
    bool seen = false;
    for (auto& e : res.extents)
      if (e.reduced == V) {
        e.reduced = cap;
        seen = true;
      }
    if (!seen) res.extents.push_back(ExtentReduction{V, cap});
  }
  return res;
}

}  // namespace

ShrunkPair faithful_cross_check_instance(const Routine& src, const Routine& tgt, const EmitTarget& emit,
                                         const std::function<bool(const ShrunkPair&)>& accept) {
  ScopedPhase phase("cross-check instance");
  const ShrunkPair whole{src, tgt, {}};
  ShrunkPair eight = faithful_shrink(whole, 8, emit);
  if (!eight.extents.empty() && !accept(eight)) return whole;
  if (routine_work(eight.src) + routine_work(eight.tgt) <= kCrossCheckInstanceWork) return eight;
  ShrunkPair four = faithful_shrink(eight, 4, emit);
  return four.extents.empty() || accept(four) ? four : eight;
}

ShrunkPair faithful_cross_check_instance(const Routine& origin, const EmitTarget& reach, const Routine& src,
                                         const Routine& tgt, const EmitTarget& emit,
                                         const std::function<bool(const ShrunkPair&)>& accept) {
  ScopedPhase phase("cross-check instance");
  const ShrunkPair whole{src, tgt, {}};
  const EmitTarget itself = [](const Routine& r) { return std::optional<Routine>(r); };
  // The pair at a shrunk origin: its round's source, and the target emitted for it.
  auto pair_at = [&](const ShrunkPair& o) -> std::optional<ShrunkPair> {
    if (o.extents.empty()) return std::nullopt;
    std::optional<Routine> s = reach(o.src);
    if (!s || !well_formed(*s)) return std::nullopt;
    std::optional<Routine> t = emit(*s);
    if (!t || !well_formed(*t)) return std::nullopt;
    return ShrunkPair{std::move(*s), std::move(*t), o.extents};
  };
  const ShrunkPair o8 = faithful_shrink(ShrunkPair{origin, origin, {}}, 8, itself);
  const std::optional<ShrunkPair> eight = pair_at(o8);
  if (!eight || !accept(*eight)) return whole;
  if (routine_work(eight->src) + routine_work(eight->tgt) <= kCrossCheckInstanceWork) return *eight;
  const std::optional<ShrunkPair> four = pair_at(faithful_shrink(o8, 4, itself));
  return four && accept(*four) ? *four : *eight;
}

bool emitted_by_tier(const Task& t) {
  if (!t.reemit) return false;
  // An application's claims ask once: the re-emission runs the member on the whole routine.
  static RoutinePairMemo<bool> memo(1024);
  const std::string key = fmt::format("{}|{}", t.shape, fmt::join(t.app.statements, ","));
  if (std::optional<bool> known = memo.find(t.src, t.tgt, key)) return *known;
  const std::optional<Routine> emitted = t.reemit(t.src);
  const bool tiers = emitted && program_difference(*emitted, t.tgt).empty();
  memo.put(t.src, t.tgt, key, tiers);
  return tiers;
}

ShrunkPair tier_cross_check_instance(const Task& t, const EmitTarget& emit,
                                     const std::function<bool(const ShrunkPair&)>& accept) {
  if (!emit || !emitted_by_tier(t)) return ShrunkPair{t.src, t.tgt, {}};
  if (t.origin && t.reach) return faithful_cross_check_instance(*t.origin, t.reach, t.src, t.tgt, emit, accept);
  return faithful_cross_check_instance(t.src, t.tgt, emit, accept);
}

SizeReduction reduce_sizes(const PairRunner& runner, const Found& found, std::vector<Routine> companions,
                           const SizeReductionOptions& o) {
  SizeReduction res;
  res.src = runner.src();
  res.tgt = runner.tgt();
  res.companions = std::move(companions);
  res.found = found;
  auto extents_of = [&] {
    std::set<std::int64_t, std::greater<>> e;
    for (const Routine* r : {&res.src, &res.tgt})
      for (const auto& n : r->nodes) e.insert(n.dims.begin(), n.dims.end());
    return e;
  };
  std::map<std::int64_t, std::int64_t, std::greater<>> current;  // original extent → current
  for (std::int64_t e : extents_of()) current[e] = e;
  for (bool changed = true; changed && res.runs < o.budget;) {
    changed = false;
    for (std::int64_t V : extents_of()) {
      for (std::int64_t v : candidates(V)) {
        if (res.runs >= o.budget) break;
        ++res.tried;
        Routine s = resize_routine(res.src, V, v), t = resize_routine(res.tgt, V, v);
        std::vector<Routine> comp;
        for (const auto& c : res.companions) comp.push_back(resize_routine(c, V, v));
        bool ok = well_formed(s) && well_formed(t);
        for (const auto& c : comp) ok = ok && well_formed(c);
        if (!ok) {
          ++res.rejected_by_checker;
          continue;
        }
        if (o.faithful && !o.faithful(comp)) {
          ++res.rejected_unfaithful;
          continue;
        }
        PairRunner small(std::move(s), std::move(t), runner.checks());
        std::optional<Found> f =
            still_fails(small, res.found.inputs, std::min(o.search_trials, o.budget - res.runs - 2), o.seed);
        res.runs += static_cast<int>(small.runs());
        if (!f) continue;
        res.src = small.src();
        res.tgt = small.tgt();
        res.companions = std::move(comp);
        res.found = std::move(*f);
        for (auto& [orig, cur] : current)
          if (cur == V) cur = v;
        changed = true;
        break;
      }
      if (res.runs >= o.budget) break;
    }
  }
  for (const auto& [orig, cur] : current)
    if (cur != orig) res.extents.push_back(ExtentReduction{orig, cur});
  return res;
}

}  // namespace fp::verify
