#include "rewrites/online_softmax/online_softmax.h"

#include <map>
#include <set>

#include "core/ir_visit.h"
#include "rewrites/name_minter.h"
#include "rewrites/online_softmax/block_fold.h"
#include "rewrites/online_softmax/decline_hints.h"
#include "rewrites/online_softmax/fused_backward.h"
#include "rewrites/online_softmax/mutants.h"
#include "rewrites/online_softmax/normalizer_scan.h"
#include "rewrites/online_softmax/routine_view.h"
#include "rewrites/online_softmax/value_pass_hoist.h"

namespace fp {

namespace {

// Removes the declarations of `candidates` no statement mentions any more (the score chain and
// the probabilities a fold consumed), unless the caller binds or reads them (inputs, outputs,
// requested nodes).
void drop_unreferenced(Routine& r, const std::set<std::string>& candidates) {
  std::set<std::string> used;
  for_each_stmt(r.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Set || s.kind == StmtKind::Zero) used.insert(s.name);
    for_each_own_expr(s, [&](const ExprP& e) {
      for_each_expr(e, [&](const Expr& x) {
        if (x.kind == ExprKind::Get) used.insert(x.name);
      });
    });
  });
  std::erase_if(r.nodes, [&](const Node& n) {
    return candidates.count(n.name) && !used.count(n.name) && !n.is_input && !n.is_output &&
           n.mode != MemMode::Requested;
  });
}

// Shape 3 on every normalizer with a composed backward: the routine with the fused backwards, or
// nullopt when none applied (declines recorded in `out` either way).
std::optional<MemberOutput> apply_backwards(const osm::RoutineView& view, const std::vector<osm::Normalizer>& found,
                                            NameMinter& names, int round, MemberOutput& out) {
  std::map<int, std::vector<StmtP>> replacements;
  std::vector<Node> minted;
  std::set<std::string> consumed_nodes;
  for (const auto& nz : found) {
    auto bw = osm::match_backward(view, nz);
    if (!bw) continue;
    if (auto* d = std::get_if<Decline>(&*bw)) {
      d->round = round;
      out.declines.push_back(std::move(*d));
      continue;
    }
    const auto& plan = std::get<osm::BackwardPlan>(*bw);
    bool overlaps = false;
    for (int p : plan.consumed) overlaps = overlaps || replacements.count(p) > 0;
    if (overlaps) continue;
    osm::BackwardEmission em = osm::emit_backward(plan, view, names);
    Application app = osm::backward_application(plan, view, em);
    app.round = round;
    out.applications.push_back(std::move(app));
    for (int p : plan.consumed) replacements[p] = {};
    replacements[plan.emit_at] = em.stmts;
    for (auto& n : em.nodes) minted.push_back(std::move(n));
    consumed_nodes.insert(plan.consumed_nodes.begin(), plan.consumed_nodes.end());
  }
  if (replacements.empty()) return std::nullopt;
  out.routine = view.rebuild(replacements);
  for (auto& n : minted) out.routine.nodes.push_back(std::move(n));
  drop_unreferenced(out.routine, consumed_nodes);
  return out;
}

}  // namespace

namespace osm {

RewriteOptions RewriteOptions::only(const std::string& shape, std::int64_t block) {
  RewriteOptions o;
  o.scan = shape == kNormalizerScanId;
  o.hoist = shape == kValuePassHoistId;
  o.fold = shape == kBlockFoldId;
  o.backward = shape == kFusedBackwardId;
  o.block = block;
  return o;
}

RewriteOptions options_of(const MemberContext& ctx) {
  auto enabled = [&](const char* id) { return !ctx.shape_enabled || ctx.shape_enabled(id); };
  RewriteOptions o;
  o.scan = enabled(kNormalizerScanId);
  o.hoist = enabled(kValuePassHoistId);
  o.fold = enabled(kBlockFoldId);
  // online_softmax_block: B > 0 folds; 0 keeps the two-pass form; `auto` is kAutoFoldBlock, the
  // block the CPU sweep chose (docs/performance.md, "B sweep").
  if (ctx.config) o.block = ctx.config->integer_or_auto(osm::kBlockKey).value_or(kAutoFoldBlock);
  // online_softmax_backward: the fused backward (shape 3), inert without online_softmax (the tier
  // runs this member only when online_softmax is on).
  o.backward = enabled(kFusedBackwardId) && ctx.config && ctx.config->flag("online_softmax_backward");
  o.round = ctx.round;
  return o;
}

}  // namespace osm

MemberOutput rewrite_online_softmax(const Routine& r, const MemberContext& ctx) {
  return osm::rewrite(r, osm::options_of(ctx));
}

namespace osm {
namespace {
MemberOutput rewrite_shapes(const Routine& r, const RewriteOptions& opts);
}  // namespace
}  // namespace osm

// Every decline leaves with its hint (decline_hints.h).
MemberOutput osm::rewrite(const Routine& r, const RewriteOptions& opts) {
  MemberOutput out = rewrite_shapes(r, opts);
  for (Decline& d : out.declines)
    if (d.hint.empty()) d.hint = decline_hint(d);
  return out;
}

namespace osm {
namespace {
MemberOutput rewrite_shapes(const Routine& r, const RewriteOptions& opts) {
  const bool scan_on = opts.scan, hoist_on = opts.hoist, fold_on = opts.fold, backward_on = opts.backward;
  const std::int64_t block = opts.block;
  MemberOutput out;
  RoutineView view(r);
  NormalizerSearch search = find_normalizers(view);
  if (scan_on)
    for (auto& d : search.declines) {
      d.round = opts.round;
      out.declines.push_back(std::move(d));
    }
  if (search.found.empty()) {
    // Only the routine as given: later rounds see what the forward shapes left.
    if (backward_on && opts.round == 1)
      if (auto d = orphan_backward(view)) {
        d->round = opts.round;
        out.declines.push_back(std::move(*d));
      }
    out.routine = r;
    return out;
  }

  NameMinter names(r);
  // Shape 3 first, alone in its round: the forward shapes see the routine without the composed
  // backward in the next round, so the fold finds the probabilities and the score chain read by
  // nothing else and removes them (no [seq, seq] buffer), and the hoist does not take the
  // backward's reader of P.
  if (backward_on) {
    if (auto applied = apply_backwards(view, search.found, names, opts.round, out)) return *applied;
  }
  std::map<int, std::vector<StmtP>> replacements;
  std::set<int> consumed;
  std::vector<Node> tiles;
  std::set<std::string> folded_nodes;  // nodes a fold may have left without any statement
  for (const auto& nz : search.found) {
    if (block > 0 && fold_on) {
      // Shape 4 first: the fold replaces the normalizer and its value pass; a decline leaves the
      // two-pass form to shapes 1-2. A fold never takes a statement an earlier match took.
      auto fold = match_fold(view, nz, block);
      bool overlaps = false;
      if (auto* plan = std::get_if<FoldPlan>(&fold)) {
        overlaps = consumed.count(plan->f_at) > 0;
        for (int p : plan->consumed) overlaps = overlaps || consumed.count(p) > 0;
      }
      if (auto* plan = std::get_if<FoldPlan>(&fold); plan && !overlaps) {
        FoldEmission em = emit_fold(*plan, view, names);
        Application app = fold_application(*plan, view, em);
        app.round = opts.round;
        out.applications.push_back(std::move(app));
        for (int p : plan->consumed) {
          replacements[p] = {};
          consumed.insert(p);
        }
        replacements[plan->f_at] = em.stmts;
        consumed.insert(plan->f_at);
        for (auto& t : em.tiles) tiles.push_back(std::move(t));
        folded_nodes.insert(plan->consumed_nodes.begin(), plan->consumed_nodes.end());
        continue;
      }
      if (auto* d = std::get_if<Decline>(&fold)) {
        d->round = opts.round;
        out.declines.push_back(std::move(*d));
      }
    }
    for (int p : {nz.a_init, nz.a, nz.c_init, nz.c}) consumed.insert(p);
    if (!scan_on) continue;
    StmtP scan = emit_normalizer_scan(nz, names);
    Application app = normalizer_application(nz, view, *scan);
    app.round = opts.round;
    out.applications.push_back(std::move(app));
    replacements[nz.a] = {scan};
    replacements[nz.a_init] = {};
    replacements[nz.c_init] = {};
    replacements[nz.c] = {};
  }

  if (hoist_on) {
    std::set<std::string> normalized = normalized_nodes(view, search.found);
    for (int p = 0; p < view.size(); ++p) {
      if (consumed.count(p)) continue;
      auto m = match_hoist(view, p, normalized);
      if (!m) continue;
      if (auto* d = std::get_if<Decline>(&*m)) {
        d->round = opts.round;
        out.declines.push_back(std::move(*d));
        continue;
      }
      const Hoist& h = std::get<Hoist>(*m);
      StmtP s = emit_hoist(h, view, names);
      Application app = hoist_application(h, view, *s);
      app.round = opts.round;
      out.applications.push_back(std::move(app));
      replacements[p] = {s};
    }
  }
  out.routine = replacements.empty() ? r : view.rebuild(replacements);
  for (auto& t : tiles) out.routine.nodes.push_back(std::move(t));
  if (!tiles.empty()) drop_unreferenced(out.routine, folded_nodes);
  return out;
}
}  // namespace
}  // namespace osm

namespace {

std::vector<ConfigKeySpec> online_softmax_keys() {
  return {
      ConfigKeySpec{"online_softmax", ConfigType::Bool, "false", {{"approximate", "true"}}, true,
                    "the online-softmax normalizer scan and value-pass hoist (a numerics policy: the "
                    "normalizer's sum is reassociated)"},
      ConfigKeySpec{"online_softmax_backward", ConfigType::Bool, "false", {{"approximate", "true"}}, true,
                    "the fused backward (shape 3): a training step's composed softmax backward becomes a per-row D = "
                    "sum(dO*O) and three nests recomputing p, dp and ds per pair, with no [seq, seq] gradient buffer"},
      ConfigKeySpec{osm::kBlockKey, ConfigType::IntOrAuto, "0", {{"approximate", "auto"}}, true,
                    "block size of the FlashAttention-2 block fold (shape 4): B > 0 folds, 0 keeps the two-pass "
                    "form; auto is 64, the size the CPU block sweep chose (docs/performance.md)"},
  };
}

}  // namespace

Member online_softmax_member() {
  Member m;
  m.id = kOnlineSoftmaxId;
  m.gate = "online_softmax";
  m.version = "6";
  m.description =
      "online softmax: the (max, sum-of-exp) normalizer as one scan per row, the value pass reading the "
      "probabilities once, the fused backward and the block fold (default off; on in the approximate profile)";
  m.config_keys = online_softmax_keys();
  m.shapes = {
      ShapeInfo{osm::kNormalizerScanId,
                "exact (max), bounded (sum)",
                "a max reduction and the sum of exp(x - max) over one axis become one scan per row carrying the "
                "running max and the rescaled running sum, writing both to their nodes",
                {ClaimSpec{"normalizer-max", ObligationKind::Exact, "all-sizes-lift.normalizer-scan",
                           "the scan's running max is the composed max, bit for bit, for every extent"},
                 ClaimSpec{"normalizer-sum", ObligationKind::Bounded, "certified-bound.online-normalizer",
                           "the scan's rescaled sum is the composed sum within the certified bound"}},
                [](const Routine& tgt, const Application&) { return osm::normalizer_scan_mutants(tgt); }},
      ShapeInfo{osm::kValuePassHoistId,
                "exact",
                "a reduction of (normalized probabilities) * v moves the loops the probabilities do not index "
                "innermost, behind one read of the probability into a local",
                {ClaimSpec{"value-pass", ObligationKind::Exact, "all-sizes-lift.loop-permutation",
                           "every target cell receives the same contributions in the same order"}},
                osm::value_pass_mutants},
      ShapeInfo{osm::kBlockFoldId,
                "exact (max), bounded (sum, output)",
                "with online_softmax_block = B > 0, a normalizer and its value pass become one scan per row over "
                "key blocks of B (FlashAttention-2): the block's scores into a tile, the running max and rescaled "
                "sum, the numerator tile rescaled and accumulating p*v, O = U / l on the last block",
                {ClaimSpec{"fold-max", ObligationKind::Exact, "all-sizes-lift.block-fold",
                           "the fold's running max is the composed max, bit for bit, for every extent (padded cells "
                           "are -inf)"},
                 ClaimSpec{"fold-sum", ObligationKind::Bounded, "certified-bound.block-fold-sum",
                           "the fold's rescaled sum is the composed sum within the fold's certified bound REL(n, b) "
                           "(docs/bounds.md §7: the fold's induction for every n and b)"},
                 ClaimSpec{"fold-output", ObligationKind::Bounded, "certified-bound.block-fold-output",
                           "the fold's output is the composed (p / l)*v within the fold's certified bound, per cell "
                           "relative to sum (|p| + kappa)*|v| (docs/bounds.md §7)"}},
                osm::block_fold_mutants},
      ShapeInfo{osm::kFusedBackwardId,
                "exact (dV), bounded (dQ, dK: the fused backward's certified bound per cell, docs/bounds.md §8)",
                "with online_softmax_backward on, a training step's composed softmax backward becomes a per-row "
                "D = sum(dO*O) and three nests (over the query rows into dQ, over the keys into dK and dV) "
                "recomputing p, dp and ds = chain(p*(dp - D)) per pair (in blocks of up to 64, in tiles, where the chain allows): "
                "no [seq, seq] gradient buffer",
                {ClaimSpec{"backward-dv", ObligationKind::Exact, "bitwise.fused-backward-dv",
                           "dV receives the composed products p*dO in the same order, p recomputed bit for bit; the "
                           "order for every size of the blocked template"},
                 ClaimSpec{"backward-dq", ObligationKind::Bounded, "certified-bound.fused-backward",
                           "dQ is the composed gradient within the fused backward's bound per cell (docs/bounds.md §8); refuted when it computes another function"},
                 ClaimSpec{"backward-dk", ObligationKind::Bounded, "certified-bound.fused-backward",
                           "dK is the composed gradient within the fused backward's bound per cell (docs/bounds.md §8); refuted when it computes another function"}},
                osm::fused_backward_mutants},
  };
  m.apply = rewrite_online_softmax;
  return m;
}

}  // namespace fp
