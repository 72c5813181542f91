// A user's own block fold, checked against the composed form it replaces (`verify --src
// composed.fp --tgt my_fold.fp --claim bounded`): the member's matcher finds the composed
// attention in the source (its roles and claims; the matcher's own fold is not used), the fold's
// all-sizes lift (fold_lift.h) reads the user's target as it is — its node and loop names, the
// order of its independent loops and of the operands of + and ·, and its own block size — and,
// when it holds, the pair gets the fold's obligations with the target's key count and block, each
// discharged by the checker its claim names (fold-max exact, fold-sum and fold-output bounded,
// every extent). A target that has a fold's skeleton (one scan over blocks of bk keys) but that
// the lift refuses still gets the obligations, at its own block: their checkers then decide at the
// routine's sizes (a wrong fold is refuted there), and the lift's first failed condition is in
// their steps. A counterexample's sizes shrink only to pairs whose skeleton relations (block count
// ceil(sk / bk), tail guard at sk, O stored on the last block) are what they were: still a fold,
// with the same defect. A user's own fused backward of a training step is recognized the same
// way: the matcher's fused-backward application on the source, and the fused backward's lift
// (fused_backward_lift.h) of each of dV, dQ and dK on the target as written (its names, operand
// order, loop order of independent loops and block size); then the pair gets the backward's
// obligations (dV exact, dQ and dK bounded, every extent; their checks at the target's own sizes,
// as no tier emits a small instance of it), and a refuted case keeps the target's sizes. The claims
// must cover every output of the pair; a target with other rewrites too (a fused backward with a
// folded forward, a second layer's fold) is not recognized.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/ir_visit.h"
#include "rewrites/online_softmax/claims.h"
#include "rewrites/online_softmax/online_softmax.h"
#include "verify/online_softmax/fold_lift.h"
#include "verify/online_softmax/fused_backward_lift.h"
#include "verify/online_softmax/proofs.h"

namespace fp::verify {

namespace {

// What a fold's sizes are, read from the target as written, and how they relate to the source's key
// count: the scan's block count K, the block bk (the coefficient of the scan's symbol in the key
// indices), the tail guards' and O-store's constants.
struct Skeleton {
  bool readable = false;
  std::int64_t keys = 0, block = 0, blocks = 0;
  std::vector<bool> relations;  // K = ceil(sk / bk), bk <= sk, every tail constant sk, every store constant K - 1
  bool operator==(const Skeleton& o) const { return readable == o.readable && relations == o.relations; }
};

std::int64_t numel(const Node& n) {
  std::int64_t c = 1;
  for (std::int64_t d : n.dims) c *= d;
  return c;
}

bool names(const Index& i, const std::string& sym) {
  const Index c = i.canonical();
  return std::any_of(c.terms.begin(), c.terms.end(), [&](const Index::Term& t) { return t.sym == sym; });
}

Skeleton skeleton_of(const Routine& src, const Routine& tgt, const Application& app) {
  Skeleton k;
  const osm::FoldRoles roles = osm::fold_roles(app);
  const Node *scores = src.find_node(roles.x), *row_max = src.find_node(roles.m);
  if (!scores || !row_max || numel(*row_max) == 0) return k;
  k.keys = numel(*scores) / numel(*row_max);
  std::string tb;
  int scans = 0;
  for_each_stmt(tgt.body, [&](const Stmt& st) {
    if (st.kind != StmtKind::Scan) return;
    ++scans;
    tb = st.sym;
    k.blocks = st.to - st.from + 1;
  });
  if (scans != 1) return k;
  bool tails_at_sk = true, stores_at_last = true;
  auto read_block = [&](const Index& i) {
    const Index c = i.canonical();
    if (c.terms.size() < 2) return;
    for (const auto& t : c.terms)
      if (t.sym == tb && t.coef > 0) k.block = std::max(k.block, t.coef);
  };
  for_each_stmt(tgt.body, [&](const Stmt& st) {
    for (const auto& i : st.indices) read_block(i);
    for_each_own_expr(st, [&](const ExprP& e) {
      for_each_expr(e, [&](const Expr& x) {
        for (const auto& i : x.indices) read_block(i);
        if (x.kind != ExprKind::Binary || x.args.size() != 2 || x.args[0]->kind != ExprKind::EmbedIndex ||
            x.args[1]->kind != ExprKind::Const || !names(x.args[0]->indices[0], tb))
          return;
        const std::size_t terms = x.args[0]->indices[0].canonical().terms.size();
        const auto c = static_cast<std::int64_t>(x.args[1]->value);
        if (x.binop() == BinOp::Lt && terms == 2) tails_at_sk = tails_at_sk && c == k.keys;
        if (x.binop() == BinOp::Eq && terms == 1) stores_at_last = stores_at_last && c == k.blocks - 1;
      });
    });
  });
  if (k.block < 1 || k.blocks < 1) return k;
  k.readable = true;
  k.relations = {k.blocks == (k.keys + k.block - 1) / k.block, k.block <= k.keys, tails_at_sk, stores_at_last};
  return k;
}

// `app` as the matcher makes it at the target's block (its claims' sentences name the block); `app`
// itself when that run does not make it.
Application at_block(const Routine& src, const Application& app, std::int64_t block) {
  for (const Application& a : osm::rewrite(src, osm::RewriteOptions::only(osm::kBlockFoldId, block)).applications)
    if (a.shape == app.shape && a.statements == app.statements) return a;
  return app;
}

// The recognized pair's tasks, their bound terms at the target's key count and block; `whole` the
// pair's skeleton, which a case's resized pairs must keep.
PairRecognition tasks_for(const Routine& src, const Routine& tgt, const Application& app, std::int64_t keys,
                          std::int64_t block, const Skeleton& whole) {
  PairRecognition r;
  for (Obligation ob : app.obligations) {
    if (const osm::SumTerms* terms = osm::sum_terms(ob))
      ob.bound = std::make_shared<osm::SumTerms>(keys, terms->storage, terms->state, block);
    Task t;
    t.id = "pair." + ob.claim;
    t.member = app.member;
    t.shape = app.shape;
    t.app = app;
    t.obligation = std::move(ob);
    t.src = src;
    t.tgt = tgt;
    // A case shrinks only to pairs with the same skeleton relations: still this fold.
    t.faithful_resize = [app, whole](const Routine& s, const Routine& g) { return skeleton_of(s, g, app) == whole; };
    r.tasks.push_back(std::move(t));
  }
  return r;
}

std::string uncovered_outputs(const Routine& src, const PairRecognition& r) {
  std::set<std::string> covered;
  for (const auto& t : r.tasks)
    for (const auto& c : t.obligation.covers) covered.insert(c.node);
  std::vector<std::string> missing;
  for (const Node* n : src.outputs())
    if (!covered.count(n->name)) missing.push_back(n->name);
  return fmt::format("{}", fmt::join(missing, ", "));
}

// The target keeps none of the source's top-level statements the application consumes (the
// composed backward, every gradient's accumulation among them) and declares nodes of its own.
bool rewrites_every_gradient(const Routine& src, const Routine& tgt, const Application& app) {
  const std::vector<StmtP> S = top_level_statements(src), T = top_level_statements(tgt);
  for (int pos : app.statements) {
    const std::size_t i = static_cast<std::size_t>(pos - 1);
    if (i >= S.size() || S[i]->kind == StmtKind::Zero) continue;
    for (const StmtP& t : T)
      if (equal(S[i], t)) return false;
  }
  return std::any_of(tgt.nodes.begin(), tgt.nodes.end(), [&](const Node& n) { return !src.find_node(n.name); });
}

// The fused backward's obligations on the pair when every gradient's lift holds (or the target
// rewrites every gradient: rewrites_every_gradient); else the reason
// (in `why`) and nothing.
std::optional<PairRecognition> recognize_backward(const Routine& src, const Routine& tgt, std::vector<std::string>& why) {
  const MemberOutput matched = osm::rewrite(src, osm::RewriteOptions::only(osm::kFusedBackwardId));
  for (const Application& app : matched.applications) {
    if (app.shape != osm::kFusedBackwardId) continue;
    const int at = app.statements.empty() ? 0 : app.statements[0];
    const osm::BackwardRoles roles = osm::backward_roles(app);
    std::string failed;
    for (const std::string& g : {roles.d_v, roles.d_q, roles.d_k}) {
      const BackwardLift lift = lift_fused_backward(src, tgt, roles, g);
      if (!lift.proved && failed.empty()) failed = g + ": " + lift.why_not;
    }
    if (!failed.empty() && !rewrites_every_gradient(src, tgt, app)) {
      why.push_back(fmt::format("the target is not a fused backward of the training step at statement {} ({})", at, failed));
      continue;
    }
    // Lifted, or the target replaces every gradient's accumulation with its own statements: the
    // checkers decide (at the pair's sizes where a lift fails, naming its first failed condition).
    PairRecognition r;
    for (const Obligation& ob : app.obligations) {
      Task t;
      t.id = "pair." + ob.claim;
      t.member = app.member;
      t.shape = app.shape;
      t.app = app;
      t.obligation = ob;
      t.src = src;
      t.tgt = tgt;
      // A hand-written backward hard-codes its blocks: a case keeps the pair's sizes.
      t.faithful_resize = [](const Routine&, const Routine&) { return false; };
      r.tasks.push_back(std::move(t));
    }
    if (std::string missing = uncovered_outputs(src, r); !missing.empty()) {
      why.push_back(fmt::format("the target is a fused backward of the training step at statement {}, but its claims "
                                "do not cover the outputs {}",
                                at, missing));
      continue;
    }
    return r;
  }
  return std::nullopt;
}

PairRecognition recognize(const Routine& src, const Routine& tgt, const Limits& limits) {
  // The matcher's applications on the source (any block: only its roles and claims are read).
  const MemberOutput matched = osm::rewrite(src, osm::RewriteOptions::only(osm::kBlockFoldId, 2));
  std::vector<std::string> why;
  for (const Application& app : matched.applications) {
    if (app.shape != osm::kBlockFoldId) continue;
    const int at = app.statements.empty() ? 0 : app.statements[0];
    const FoldLift lift = lift_fold(src, tgt, app, limits);
    const Skeleton sk = skeleton_of(src, tgt, app);
    if (!lift.proved && !sk.readable) {
      why.push_back(fmt::format("the target is not a block fold of the composed attention at statement {} ({})", at,
                                lift.why_not));
      continue;
    }
    const std::int64_t keys = lift.proved ? lift.keys : sk.keys, block = lift.proved ? lift.block : sk.block;
    PairRecognition r = tasks_for(src, tgt, at_block(src, app, block), keys, block, sk);
    if (std::string missing = uncovered_outputs(src, r); !missing.empty()) {
      why.push_back(fmt::format("the target is a block fold of the attention at statement {}, but the fold's claims "
                                "do not cover the outputs {} (a pair with other rewrites too is checked with --claim "
                                "exact or bounded:REL)",
                                at, missing));
      continue;
    }
    return r;
  }
  if (std::optional<PairRecognition> backward = recognize_backward(src, tgt, why)) return *backward;
  if (why.empty()) {
    const std::string declined =
        matched.declines.empty() ? std::string("no composed attention (max, exp, sum, divide, value pass) matched")
                                 : fmt::format("the source's attention was not matched: {}",
                                               matched.declines.front().sentence);
    why.push_back(declined);
  }
  return PairRecognition{{}, fmt::format("online softmax: {}", fmt::join(why, "; "))};
}

}  // namespace

PairRecognizer online_softmax_pair_recognizer() {
  return recognize;
}

}  // namespace fp::verify
