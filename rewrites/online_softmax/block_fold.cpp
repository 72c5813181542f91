#include "rewrites/online_softmax/block_fold.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "core/numerics.h"
#include "rewrites/online_softmax/score_chain.h"

namespace fp::osm {

// What the match found, in the routine's own terms.
struct FoldMatch {
  Normalizer nz;
  std::int64_t block = 0;
  int p_pos = -1, z_o = -1, f_at = -1;
  std::string p, o, v;
  ScoreChain scores;                        // x's chain down to its contraction (score_chain.h)
  std::vector<int> moved, dead;             // row-state definitions (program order)
  bool m_live = false, l_live = false;
  std::vector<NestLoop> value_loops;        // the value pass's loops indexing O only
  const Nest* value_nest = nullptr;
  bool score_chain_removed = false;
};

namespace {

struct Fail {
  std::string code, sentence;
};

// The score chain under x (score_chain.h), into the match.
std::variant<bool, Fail> match_chain(const RoutineView& view, FoldMatch& fm) {
  auto ch = find_score_chain(view, fm.nz.x);
  if (auto* why = std::get_if<std::string>(&ch)) return Fail{"scores-not-contraction", *why};
  fm.scores = std::get<ScoreChain>(ch);
  return true;
}

// Nodes a statement writes are not read by the fold: the fold's inputs are a, b, v and the
// chain's leaves; none may be written between `lo` and f_at.
std::optional<Fail> inputs_unwritten(const RoutineView& view, const FoldMatch& fm, const std::set<std::string>& in,
                                     int lo) {
  for (const std::string& node : in) {
    for (int w : view.writers(node))
      if (w > lo && w < fm.f_at)
        return Fail{"input-written-in-span",
                    fmt::format("{} writes {}, which the fold reads, between the scores ({}) and the value pass "
                                "({})",
                                pos_text(w), node, pos_text(lo), pos_text(fm.f_at))};
  }
  return std::nullopt;
}

// P = e / l read by a value pass: sets p_pos, p, f_at.
std::optional<Fail> find_value_pass(const RoutineView& view, FoldMatch& fm) {
  const Normalizer& nz = fm.nz;
  // P = e / l, directly, and the value pass reading it.
  int value_pass = -1;
  bool indirect = false;
  for (int pp : view.readers(nz.e)) {
    const Line& li = view.line(pp);
    if (!li.nest || !is_pointwise(*li.nest)) continue;
    const ExprP& val = li.nest->store->value;
    const bool direct = val->kind == ExprKind::Binary && val->binop() == BinOp::Div && is_get(val->args[0]) &&
                        val->args[0]->name == nz.e && is_get(val->args[1]) && val->args[1]->name == nz.l;
    const std::string& pn = li.nest->store->name;
    for (int vp : view.readers(pn)) {
      const Line& vl = view.line(vp);
      if (!vl.nest) continue;
      auto red = reduction_of(*vl.nest);
      if (!red || red->op != BinOp::Add || red->other->kind != ExprKind::Binary ||
          red->other->binop() != BinOp::Mul)
        continue;
      const ExprP& f0 = red->other->args[0];
      const ExprP& f1 = red->other->args[1];
      if (!(is_get(f0) && f0->name == pn) && !(is_get(f1) && f1->name == pn)) continue;
      if (!direct) {
        indirect = true;
        continue;
      }
      if (value_pass < 0) {
        value_pass = vp;
        fm.p_pos = pp;
        fm.p = pn;
      }
    }
    // A dropout-like step: e / l feeding another pointwise node that the value pass reads.
    if (direct)
      for (int q : view.readers(pn)) {
        const Line& ql = view.line(q);
        if (ql.nest && is_pointwise(*ql.nest))
          for (int vp : view.readers(ql.nest->store->name)) {
            auto red = view.line(vp).nest ? reduction_of(*view.line(vp).nest) : std::nullopt;
            if (red && red->op == BinOp::Add) indirect = true;
          }
      }
  }
  if (value_pass < 0)
    return indirect ? Fail{"value-pass-not-direct",
                           fmt::format("the value pass of the normalizer of {} reads probabilities that are not "
                                       "{} / {} directly (a dropout-like step in between); the fold computes "
                                       "p·v from e / l itself",
                                       nz.x, nz.e, nz.l)}
                    : Fail{"no-value-pass",
                           fmt::format("no reduction of {}·v reads the probabilities {} / {}; there is nothing "
                                       "to fold",
                                       nz.e, nz.e, nz.l)};
  fm.f_at = value_pass;
  return std::nullopt;
}

// The value pass's shape: P's read along x's axes, the value axes indexing O, O written whole,
// zeroed right before and read by nothing in between, every node floating point.
std::optional<Fail> check_value_pass(const RoutineView& view, FoldMatch& fm) {
  const Normalizer& nz = fm.nz;
  const Nest& vn = *view.line(fm.f_at).nest;
  fm.value_nest = &vn;
  fm.o = vn.store->name;
  auto red = *reduction_of(vn);
  const ExprP& pr = is_get(red.other->args[0]) && red.other->args[0]->name == fm.p ? red.other->args[0]
                                                                                      : red.other->args[1];
  const ExprP& vr = pr == red.other->args[0] ? red.other->args[1] : red.other->args[0];
  if (!is_get(vr)) return Fail{"value-pass-shape", fmt::format("the value pass multiplies {} by a value that is not a read", fm.p)};
  fm.v = vr->name;
  const Node* o = view.node(fm.o);
  const Node* pnode = view.node(fm.p);
  const Node* x = view.node(nz.x);
  if (pnode->dims != x->dims || !stores_whole(*view.line(fm.p_pos).nest, *pnode))
    return Fail{"value-pass-not-direct", fmt::format("{} does not hold e / l cell for cell", fm.p)};
  // P's read follows the nest's loops at x's axes; the other loops are the value axes.
  std::map<std::string, int> p_axis;
  for (std::size_t a = 0; a < pr->indices.size(); ++a) {
    const Index i = pr->indices[a].canonical();
    const Index xi = nz.x_idcs[a].canonical();
    if (i.is_fixed()) {
      if (!xi.is_fixed() || xi.offset != i.offset)
        return Fail{"value-pass-shape", fmt::format("the value pass reads {} at a fixed index where the scores vary", fm.p)};
      continue;
    }
    const NestLoop* l = i.is_plain_iterator() ? vn.loop(i.terms[0].sym) : nullptr;
    if (!l || p_axis.count(l->sym) || l->from != 0 || l->to != x->dims[a] - 1 || xi.is_fixed())
      return Fail{"value-pass-shape",
                  fmt::format("the value pass reads {} at index {} of axis {}, not a plain iterator over the whole "
                              "axis",
                              fm.p, read_text(fm.p, pr->indices), a)};
    p_axis[l->sym] = static_cast<int>(a);
  }
  std::set<std::string> o_syms;
  for (const auto& raw : vn.store->indices) {
    const Index i = raw.canonical();
    if (i.is_plain_iterator()) o_syms.insert(i.terms[0].sym);
  }
  for (const auto& l : vn.loops) {
    if (l.dead()) return Fail{"value-pass-shape", fmt::format("loop {} of the value pass runs zero times", l.sym)};
    if (p_axis.count(l.sym)) {
      const Index xi = nz.x_idcs[static_cast<std::size_t>(p_axis[l.sym])].canonical();
      const bool key = xi.is_plain_iterator() && xi.terms[0].sym == nz.t.sym;
      if (key == (o_syms.count(l.sym) > 0))
        return Fail{"value-pass-shape",
                    fmt::format("loop {} of the value pass {} O; the fold needs the key axis reduced and every "
                                "row axis stored",
                                l.sym, key ? "indexes" : "does not index")};
      continue;
    }
    if (!o_syms.count(l.sym))
      return Fail{"value-pass-shape",
                  fmt::format("loop {} of the value pass indexes neither {} nor {}", l.sym, fm.p, fm.o)};
    fm.value_loops.push_back(l);
  }
  {
    // O written whole by the value pass.
    std::set<std::string> seen;
    for (std::size_t a = 0; a < vn.store->indices.size(); ++a) {
      const Index i = vn.store->indices[a].canonical();
      if (i.is_fixed()) {
        if (o->dims[a] != 1 || i.offset != 0)
          return Fail{"output-slice", fmt::format("the value pass writes {} at a fixed index of axis {}", fm.o, a)};
        continue;
      }
      const NestLoop* l = i.is_plain_iterator() ? vn.loop(i.terms[0].sym) : nullptr;
      if (!l || l->from != 0 || l->to != o->dims[a] - 1 || !seen.insert(l->sym).second)
        return Fail{"output-slice",
                    fmt::format("the value pass writes {} at {}, not every cell of it", fm.o,
                                read_text(fm.o, vn.store->indices))};
    }
  }
  for (const Node* nd : {o, pnode, view.node(fm.v)})
    if (!nd || !is_float(nd->prec))
      return Fail{"precision-mismatch", fmt::format("{} is not floating point", nd ? nd->name : fm.v)};
  // zero O right before, nothing reading O in between, O not an input.
  if (o->is_input) return Fail{"output-read", fmt::format("{} is an input", fm.o)};
  for (int w : view.writers(fm.o))
    if (w != fm.f_at && view.line(w).stmt->kind == StmtKind::Zero && w < fm.f_at) fm.z_o = w;
  if (fm.z_o < 0 || view.writers(fm.o).size() != 2)
    return Fail{"output-read", fmt::format("{} is not zeroed before the value pass, or written elsewhere", fm.o)};
  if (int rd = view.read_between(fm.o, fm.z_o, fm.f_at); rd >= 0)
    return Fail{"output-read", fmt::format("{} reads {} between its zero-out and the value pass", pos_text(rd), fm.o)};
  if (!(nz.c < fm.p_pos && fm.p_pos < fm.f_at))
    return Fail{"value-pass-shape", fmt::format("the probabilities {} are not computed after the sum and before the value pass", fm.p)};

  return std::nullopt;
}

// The score chain down to its contraction, and the fold's inputs unwritten in the span.
std::optional<Fail> check_scores(const RoutineView& view, FoldMatch& fm) {
  const Normalizer& nz = fm.nz;
  const Node* x = view.node(nz.x);
  // The score chain.
  auto ch = match_chain(view, fm);
  if (auto* f = std::get_if<Fail>(&ch)) return *f;
  if (!is_float(fm.scores.s_prec) || fm.scores.s_prec != x->prec)
    return Fail{"precision-mismatch",
                fmt::format("the score node {} is {} but the scores {} are {}", fm.scores.s, prec_name(fm.scores.s_prec), nz.x,
                            prec_name(x->prec))};

  // The fold's inputs: the contraction's factors, the chain's leaves, v — unwritten in the span.
  std::set<std::string> chain_nodes = {fm.scores.s};
  for (const Nest* n : fm.scores.chain_nests) chain_nodes.insert(n->store->name);
  std::set<std::string> inputs = {fm.v};
  std::vector<const Expr*> gets;
  collect_gets(fm.scores.score_nest->store->value, gets);
  for (const Nest* n : fm.scores.chain_nests) collect_gets(n->store->value, gets);
  for (const Expr* g : gets)
    if (!chain_nodes.count(g->name)) inputs.insert(g->name);
  for (const std::string& in : inputs)
    if (in == nz.m || in == nz.l || in == nz.e || in == nz.n || in == fm.p || in == fm.o)
      return Fail{"input-written-in-span", fmt::format("the fold would read {}, a node it consumes", in)};
  if (auto f = inputs_unwritten(view, fm, inputs, fm.scores.s_pos)) return *f;

  return std::nullopt;
}

// The statements the fold consumes outright.
std::set<int> removed_statements(const FoldMatch& fm) {
  const Normalizer& nz = fm.nz;
  return {nz.a_init, nz.a, nz.c_init, nz.c, fm.z_o, fm.f_at};
}

// Row-state closure: the pointwise definitions between the max and the value pass reading m, l or
// nodes defined from them, split into moved (live) and dead ones; m and l live or not.
std::optional<Fail> row_state_closure(const RoutineView& view, FoldMatch& fm) {
  const Normalizer& nz = fm.nz;
  // Row-state closure: pointwise definitions between the max and f_at reading m, l or nodes
  // defined from them.
  std::set<std::string> state = {nz.m, nz.l};
  const std::set<int> removed = removed_statements(fm);
  std::vector<int> defs;
  for (int p = nz.a + 1; p < fm.f_at; ++p) {
    const Line& li = view.line(p);
    bool reads_state = false;
    for (const auto& r : li.reads) reads_state = reads_state || state.count(r) > 0;
    if (!reads_state || removed.count(p)) continue;
    if (!li.nest || !is_pointwise(*li.nest) || !view.definition(li.nest->store->name))
      return Fail{"row-state-reader",
                  fmt::format("{} reads the row state ({} or {}) and is not a single-writer pointwise nest; the "
                              "fold cannot move it",
                              pos_text(p), nz.m, nz.l)};
    state.insert(li.nest->store->name);
    defs.push_back(p);
  }
  // Live: requested or an output, or read outside the removed statements and the definitions,
  // or read by a live definition (backwards to a fixpoint).
  std::set<int> def_set(defs.begin(), defs.end());
  std::set<std::string> live;
  auto node_live = [&](const std::string& node) {
    const Node* nd = view.node(node);
    if (nd && (nd->is_output || nd->mode == MemMode::Requested)) return true;
    for (int r : view.readers(node))
      if (!removed.count(r) && !def_set.count(r)) return true;
    return false;
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (int p : defs) {
      const std::string& node = view.line(p).nest->store->name;
      if (live.count(node)) continue;
      bool l = node_live(node);
      for (int q : defs)
        if (!l && live.count(view.line(q).nest->store->name) && view.line(q).reads.count(node)) l = true;
      if (l) {
        live.insert(node);
        grew = true;
      }
    }
  }
  for (int p : defs) (live.count(view.line(p).nest->store->name) ? fm.moved : fm.dead).push_back(p);
  fm.m_live = node_live(nz.m);
  fm.l_live = node_live(nz.l);
  for (int p : fm.moved) {
    fm.m_live = fm.m_live || view.line(p).reads.count(nz.m) > 0;
    fm.l_live = fm.l_live || view.line(p).reads.count(nz.l) > 0;
    for (const auto& r : view.line(p).reads) {
      if (state.count(r)) continue;
      for (int w : view.writers(r))
        if (w > p && w < fm.f_at && !removed.count(w) && !def_set.count(w))
          return Fail{"row-state-reader",
                      fmt::format("{} reads {}, which {} writes before the value pass; moving it behind the fold "
                                  "would read another value",
                                  pos_text(p), r, pos_text(w))};
    }
  }
  return std::nullopt;
}

// A row's tiles within the local budget; whether the score chain goes with the fold.
std::optional<Fail> check_tiles_and_chain(const RoutineView& view, FoldMatch& fm) {
  const Normalizer& nz = fm.nz;
  // Tiles per row.
  const std::int64_t sk = nz.t.to - nz.t.from + 1;
  const std::int64_t bk = std::min(fm.block, sk);
  std::int64_t value_cells = 1;
  for (const auto& l : fm.value_loops) value_cells *= l.to - l.from + 1;
  const std::int64_t tile_bytes = (bk + value_cells) * 8;
  if (tile_bytes > kFoldTileBudget)
    return Fail{"tile-too-large",
                fmt::format("a row's tiles take {} bytes ({} scores and {} numerator cells), over the {} byte "
                            "local budget",
                            tile_bytes, bk, value_cells, kFoldTileBudget)};
  // The score chain is removed where nothing outside the removed statements reads it.
  const std::set<int> removed = removed_statements(fm);
  std::set<std::string> chain_nodes = {fm.scores.s};
  for (const Nest* n : fm.scores.chain_nests) chain_nodes.insert(n->store->name);
  bool chain_dead = true;
  std::set<int> chain_pos = {fm.scores.s_zero, fm.scores.s_pos};
  for (int p : fm.scores.chain) chain_pos.insert(p);
  for (const std::string& node : chain_nodes) {
    const Node* nd = view.node(node);
    if (nd && (nd->is_output || nd->mode == MemMode::Requested)) chain_dead = false;
    for (int r : view.readers(node))
      if (!removed.count(r) && !chain_pos.count(r) && !std::count(fm.dead.begin(), fm.dead.end(), r))
        chain_dead = false;
  }
  fm.score_chain_removed = chain_dead;
  return std::nullopt;
}

std::variant<FoldMatch, Fail> match(const RoutineView& view, const Normalizer& nz, std::int64_t block) {
  FoldMatch fm;
  fm.nz = nz;
  fm.block = block;
  for (auto step : {find_value_pass, check_value_pass, check_scores, row_state_closure, check_tiles_and_chain})
    if (std::optional<Fail> f = step(view, fm)) return *f;
  return fm;
}

// ---- emission ----------------------------------------------------------------------------------

Index subst(const Index& i, const std::map<std::string, Index>& m) { return i.substituted(m); }

std::vector<Index> subst(const std::vector<Index>& v, const std::map<std::string, Index>& m) {
  std::vector<Index> out;
  for (const auto& i : v) out.push_back(subst(i, m));
  return out;
}

// `e` with its loop symbols mapped and each read of a node in `inline_nodes` replaced by what
// `inline_node` gives for it.
ExprP rewrite_expr(const ExprP& e, const std::map<std::string, Index>& m,
                   const std::function<ExprP(const Expr&, const std::vector<Index>&)>& inline_node) {
  if (!e) return e;
  switch (e->kind) {
    case ExprKind::Get: {
      std::vector<Index> idx = subst(e->indices, m);
      if (ExprP r = inline_node(*e, idx)) return r;
      return get(e->name, std::move(idx), e->prec);
    }
    case ExprKind::EmbedIndex:
      return embed_index(subst(e->indices[0], m), e->prec);
    case ExprKind::GetLocal:
    case ExprKind::Const:
      return e;
    case ExprKind::Unary:
      return unary(e->unop(), rewrite_expr(e->args[0], m, inline_node), e->prec);
    case ExprKind::Binary:
      return binary(e->binop(), rewrite_expr(e->args[0], m, inline_node), rewrite_expr(e->args[1], m, inline_node),
                    e->prec);
    case ExprKind::Ternary:
      return ternary(e->ternop(), rewrite_expr(e->args[0], m, inline_node),
                     rewrite_expr(e->args[1], m, inline_node), rewrite_expr(e->args[2], m, inline_node), e->prec);
  }
  return e;
}

// Symbol map of a nest storing a node of x's shape: each axis's iterator -> the fold's index there.
std::map<std::string, Index> cell_map(const Nest& nest, const std::vector<Index>& fold_idx) {
  std::map<std::string, Index> m;
  for (std::size_t a = 0; a < nest.store->indices.size(); ++a) {
    const Index i = nest.store->indices[a].canonical();
    if (i.is_plain_iterator()) m[i.terms[0].sym] = fold_idx[a];
  }
  return m;
}

}  // namespace

std::variant<FoldPlan, Decline> match_fold(const RoutineView& view, const Normalizer& nz, std::int64_t block) {
  auto res = match(view, nz, block);
  if (auto* f = std::get_if<Fail>(&res))
    return Decline{"online-softmax", kBlockFoldId, 0, nz.a + 1, view.source_line(nz.a), f->code, f->sentence, ""};
  auto fm = std::make_shared<FoldMatch>(std::move(std::get<FoldMatch>(res)));
  FoldPlan plan;
  plan.f_at = fm->f_at;
  plan.consumed = {nz.a_init, nz.a, nz.c_init, nz.c, fm->z_o, fm->p_pos};
  for (int p : fm->moved) plan.consumed.push_back(p);
  for (int p : fm->dead) plan.consumed.push_back(p);
  if (fm->score_chain_removed) {
    plan.consumed.push_back(fm->scores.s_zero);
    plan.consumed.push_back(fm->scores.s_pos);
    for (int p : fm->scores.chain) plan.consumed.push_back(p);
  }
  std::sort(plan.consumed.begin(), plan.consumed.end());
  plan.consumed.erase(std::unique(plan.consumed.begin(), plan.consumed.end()), plan.consumed.end());
  plan.consumed.erase(std::remove(plan.consumed.begin(), plan.consumed.end(), plan.f_at), plan.consumed.end());
  plan.consumed_nodes = {nz.m, nz.n, nz.e, nz.l, fm->p, fm->scores.s};
  for (const Nest* n : fm->scores.chain_nests) plan.consumed_nodes.push_back(n->store->name);
  plan.match = fm;
  return plan;
}

namespace {

// Builds one fold (the EMITS section of block_fold.h): the names and the fold's index space are
// fixed on construction; each method emits one part of the per-row scan.
class FoldEmitter {
 public:
  FoldEmitter(const FoldMatch& fm, const RoutineView& view, NameMinter& names)
      : fm_(fm), nz_(fm.nz), view_(view), names_(names) {
    const Node& o = *view.node(fm.o);
    sp_ = state_prec(nz_.score_prec);
    up_ = (sp_ == Prec::F64 || state_prec(o.prec) == Prec::F64) ? Prec::F64 : Prec::F32;
    sk_ = nz_.t.to - nz_.t.from + 1;
    bk_ = std::min(fm.block, sk_);
    nkb_ = (sk_ + bk_ - 1) / bk_;
    tail_ = sk_ % bk_ != 0;
    tb_ = names.mint("os_block_" + nz_.t.sym);
    j_ = names.mint("os_key_" + nz_.t.sym);
    tile_s_ = names.mint("os_block_scores_" + nz_.x);
    tile_u_ = names.mint("os_block_numerator_" + fm.o);
    mp_ = names.mint("os_m_prev_" + nz_.m);
    mn_ = names.mint("os_m_next_" + nz_.m);
    lp_ = names.mint("os_l_prev_" + nz_.l);
    ln_ = names.mint("os_l_next_" + nz_.l);
    rmax_ = names.mint("os_block_max_" + nz_.m);
    fl_ = names.mint("os_floor_" + nz_.m);
    alpha_ = names.mint("os_rescale_" + nz_.l);
    rs_ = names.mint("os_block_sum_" + nz_.l);
    lsum_ = names.mint("os_block_next_" + nz_.l);
    norm_ = names.mint("os_norm_" + nz_.l);
    // Row symbols: the max's row loops. The key index of cell j of block tb: bk·tb + j (+ from).
    for (const auto& r : nz_.rows) {
      row_idx_.push_back(Index::iter(r.sym));
      row_dims_.push_back(r.to - r.from + 1);
    }
    // The widest row axis is padded by 16 cells (never accessed): with the rows last, a tile's
    // cells are a whole row extent apart, and at power-of-two lengths (2048 rows: 8 KiB) every
    // cell of a block of rows would fall into the same few cache sets.
    if (!row_dims_.empty()) {
      auto widest = std::max_element(row_dims_.begin(), row_dims_.end());
      if (*widest >= 16) *widest += 16;
    }
    key_ = Index{{Index::Term{bk_, tb_}, Index::Term{1, j_}}, nz_.t.from};
    for (const auto& raw : nz_.x_idcs) {
      const Index i = raw.canonical();
      fold_idx_.push_back(i.is_plain_iterator() && i.terms[0].sym == nz_.t.sym ? key_ : i);
    }
    s_cell_ = tile_at(tile_s_, Index::iter(j_), sp_);
  }

  FoldEmission emit() {
    std::vector<StmtP> computed = block_scores();
    block_state(computed);
    numerator(computed);
    std::vector<StmtP> body;
    if (live_) {
      zero_sum_ = names_.mint("os_block_zero_sum_" + fm_.o);
      z_nest_ = zero_sums();
      for (const std::string& l : {rmax_, fl_, alpha_, rs_, lsum_}) body.push_back(declare_local(l, sp_));
      body.push_back(if_(live_, std::move(computed)));
      body.push_back(if_(binary(BinOp::Eq, live_, constant(0.0, Prec::I32), Prec::I32), skipped_block()));
      body.push_back(set_local(mn_, L(rmax_)));
      body.push_back(set_local(ln_, L(lsum_)));
      norm(body);
    } else {
      body = std::move(computed);
    }
    block_outputs(body);
    return assemble(std::move(body));
  }

 private:
  // Tiles are laid out [cell, rows...]: the row axes last, so the rows a compiled executor runs
  // side by side (one per vector lane) read consecutive cells.
  std::vector<Index> tile_idx(Index first) const {
    std::vector<Index> idx = {std::move(first)};
    idx.insert(idx.end(), row_idx_.begin(), row_idx_.end());
    return idx;
  }
  ExprP tile_at(const std::string& tile, Index first, Prec p) const { return get(tile, tile_idx(std::move(first)), p); }
  ExprP L(const std::string& n) const { return get_local(n, sp_); }
  ExprP floor_at_lowest(ExprP v) const {
    return binary(BinOp::Max, std::move(v), constant(lowest_finite(sp_), sp_), sp_);
  }
  // With a tail, a key cell runs only when its key exists.
  std::vector<StmtP> guarded(std::vector<StmtP> body) const {
    if (!tail_) return body;
    const ExprP live = binary(BinOp::Lt, embed_index(key_, Prec::I32),
                              constant(static_cast<double>(nz_.t.to + 1), Prec::I32), Prec::I32);
    return {if_(live, std::move(body))};
  }
  StmtP over_keys(StmtP s) const { return for_loop(j_, 0, bk_ - 1, {std::move(s)}); }
  Node tile(const std::string& name, std::int64_t cells, Prec p) const {
    Node n;
    n.name = name;
    n.dims = {cells};
    n.dims.insert(n.dims.end(), row_dims_.begin(), row_dims_.end());
    n.prec = p;
    return n;
  }

  // The block's scores into T: padding, then the contraction (its row operand copied into a rows-
  // last tile once per row) and the chain, per key cell.
  std::vector<StmtP> block_scores() {
    const Nest& sn = *fm_.scores.score_nest;
    std::map<std::string, Index> m = cell_map(sn, fold_idx_);
    std::vector<NestLoop> reduced;
    for (const auto& l : sn.loops)
      if (!m.count(l.sym)) {
        NestLoop f = l;
        f.sym = names_.mint("os_" + l.sym);
        m[l.sym] = Index::iter(f.sym);
        reduced.push_back(f);
      }
    auto keep_reads = [](const Expr&, const std::vector<Index>&) -> ExprP { return nullptr; };
    const auto red = *reduction_of(sn);
    ExprP term = row_operand_in_tile(rewrite_expr(red.other, m, keep_reads), reduced);
    ExprP acc = red.target_first ? binary(BinOp::Add, s_cell_, term, red.prec)
                                 : binary(BinOp::Add, term, s_cell_, red.prec);
    StmtP s = set(tile_s_, tile_idx(Index::iter(j_)), acc);
    for (auto it = reduced.rbegin(); it != reduced.rend(); ++it) s = for_loop(it->sym, it->from, it->to, {s});
    std::vector<StmtP> steps = {set(tile_s_, tile_idx(Index::iter(j_)), constant(0.0, fm_.scores.s_prec)), s};
    // x = chain(S): x's definition with each chain node inlined at the fold's cell, S the tile.
    std::map<std::string, const Nest*> defs;
    for (const Nest* n : fm_.scores.chain_nests) defs[n->store->name] = n;
    std::function<ExprP(const Expr&, const std::vector<Index>&)> inline_node =
        [&](const Expr& g, const std::vector<Index>&) -> ExprP {
      if (g.name == fm_.scores.s) return s_cell_;
      auto it = defs.find(g.name);
      if (it == defs.end()) return nullptr;
      return rewrite_expr(it->second->store->value, cell_map(*it->second, fold_idx_), inline_node);
    };
    if (!fm_.scores.chain_nests.empty()) {
      const Nest& xn = *fm_.scores.chain_nests.front();
      ExprP x = rewrite_expr(xn.store->value, cell_map(xn, fold_idx_), inline_node);
      live_ = block_live_condition(x);
      steps.push_back(set(tile_s_, tile_idx(Index::iter(j_)), std::move(x)));
    }
    std::vector<StmtP> body;
    if (tail_) {
      body.push_back(over_keys(set(tile_s_, tile_idx(Index::iter(j_)), constant(-INFINITY, sp_))));
      body.push_back(for_loop(j_, 0, bk_ - 1, guarded(steps)));
    } else {
      // Without a tail the three steps run as three loops over the block (each cell still takes
      // them in order): the contraction is then one perfect nest over the block's keys, which a
      // compiled executor keeps in registers across the keys.
      for (const StmtP& st : steps) body.push_back(over_keys(st));
    }
    return body;
  }

  // Block skipping (block_fold.h, "SKIPS"): x = where(pred, ·, -inf) with pred an integer
  // predicate of the indices that can only turn from true to false as the key grows within a block
  // (lt of affine indices whose difference grows with j, and max / min of such). Then the block has
  // a live cell iff its first key does: pred at j = 0 is the block's live condition. Null when x is
  // not of that form (no skip is emitted).
  ExprP block_live_condition(const ExprP& x) {
    if (!x || x->kind != ExprKind::Ternary || x->ternop() != TernOp::Where) return nullptr;
    const ExprP& fill = x->args[2];
    if (fill->kind != ExprKind::Const || !std::isinf(fill->value) || fill->value > 0) {
      no_skip_ = "the mask's fill is not -inf (a masked block still weighs in)";
      return nullptr;
    }
    if (!falls_with_key(x->args[0])) {
      no_skip_ = "the mask's condition is not an index comparison whose live keys start each block";
      return nullptr;
    }
    std::map<std::string, Index> first = {{j_, Index{{}, 0}}};
    auto keep_reads = [](const Expr&, const std::vector<Index>&) -> ExprP { return nullptr; };
    return rewrite_expr(x->args[0], first, keep_reads);
  }
  std::int64_t key_coef(const ExprP& e) const {
    if (e->kind != ExprKind::EmbedIndex) return 0;
    std::int64_t c = 0;
    for (const auto& t : e->indices[0].canonical().terms)
      if (t.sym == j_) c += t.coef;
    return c;
  }
  bool falls_with_key(const ExprP& e) const {
    if (!e || e->prec != Prec::I32 || e->kind != ExprKind::Binary) return false;
    auto leaf = [](const ExprP& a) {
      return a->prec == Prec::I32 && (a->kind == ExprKind::EmbedIndex || a->kind == ExprKind::Const);
    };
    switch (e->binop()) {
      case BinOp::Lt:
        return leaf(e->args[0]) && leaf(e->args[1]) && key_coef(e->args[0]) - key_coef(e->args[1]) >= 0;
      case BinOp::Max:
      case BinOp::Min:
        return falls_with_key(e->args[0]) && falls_with_key(e->args[1]);
      default:
        return false;
    }
  }

  // The contraction's row operand (the factor that does not depend on the key: q) is copied once
  // per row into a tile laid out [reduced cells, rows] before the scan, and read from there: the
  // same values, read by consecutive rows side by side (a compiled executor's vector lanes).
  ExprP row_operand_in_tile(ExprP term, const std::vector<NestLoop>& reduced) {
    if (reduced.empty()) return term;
    for (std::size_t f = 0; f < 2; ++f) {
      const Expr& g = *term->args[f];
      bool keyed = false;
      for (const Index& i : g.indices) keyed = keyed || i.mentions(tb_) || i.mentions(j_);
      if (keyed) continue;
      const Node* src = view_.node(g.name);
      const std::string name = names_.mint("os_block_rows_" + g.name);
      Index cell;  // the reduced loops' cells, flattened (each loop from its own start)
      std::int64_t stride = 1;
      for (auto it = reduced.rbegin(); it != reduced.rend(); ++it) {
        cell.terms.insert(cell.terms.begin(), Index::Term{stride, it->sym});
        cell.offset -= stride * it->from;
        stride *= it->to - it->from + 1;
      }
      cell = cell.canonical();
      StmtP copy = set(name, tile_idx(cell), get(g.name, g.indices, src->prec));
      for (auto it = reduced.rbegin(); it != reduced.rend(); ++it) copy = for_loop(it->sym, it->from, it->to, {copy});
      row_copies_.push_back(copy);
      extra_tiles_.push_back(tile(name, stride, src->prec));
      ExprP read = get(name, tile_idx(cell), src->prec);
      return binary(term->binop(), f == 0 ? read : term->args[0], f == 1 ? read : term->args[1], term->prec);
    }
    return term;
  }

  // The running max over the block in key order, the floors, the rescale, the exponentials in
  // place, the rescaled sum and what a row with no live key stores. With skipping, the block's max
  // and sum go to locals declared before the two branches (the carried values are written at the
  // scan body's top level, after them).
  void block_state(std::vector<StmtP>& body) const {
    const Prec sp = sp_;
    // Without skipping each local is declared where it is first set; with it, before the branches.
    auto declare = [&](const std::string& local) {
      if (!live_) body.push_back(declare_local(local, sp));
    };
    declare(rmax_);
    body.push_back(set_local(rmax_, L(mp_)));
    body.push_back(over_keys(set_local(rmax_, binary(BinOp::Max, L(rmax_), s_cell_, sp))));
    if (!live_) body.push_back(set_local(mn_, L(rmax_)));
    declare(fl_);
    body.push_back(set_local(fl_, floor_at_lowest(L(live_ ? rmax_ : mn_))));
    declare(alpha_);
    body.push_back(set_local(alpha_, rescale()));
    body.push_back(over_keys(set(tile_s_, tile_idx(Index::iter(j_)),
                                 unary(UnOp::Exp, binary(BinOp::Sub, s_cell_, L(fl_), sp), sp))));
    declare(rs_);
    body.push_back(set_local(rs_, constant(0.0, sp)));
    body.push_back(over_keys(set_local(rs_, binary(BinOp::Add, L(rs_), s_cell_, sp))));
    body.push_back(set_local(live_ ? lsum_ : ln_, rescaled_sum()));
    if (!live_) norm(body);
  }
  void norm(std::vector<StmtP>& body) const {
    body.push_back(declare_local(norm_, sp_));
    body.push_back(set_local(norm_, ternary(TernOp::Where, binary(BinOp::Eq, L(mn_), constant(-INFINITY, sp_), sp_),
                                            constant(NAN, sp_), L(ln_), sp_)));
  }
  ExprP rescale() const {
    return unary(UnOp::Exp, binary(BinOp::Sub, floor_at_lowest(L(mp_)), L(fl_), sp_), sp_);
  }
  ExprP rescaled_sum() const { return binary(BinOp::Add, binary(BinOp::Mul, L(lp_), L(alpha_), sp_), L(rs_), sp_); }

  // What a computed block does to the state when every one of its scores is -inf, in O(value cells)
  // (block_fold.h, "SKIPS"): the max unchanged, the same floor and rescale, the sum of b cells
  // exp(-inf - fl) (each +0, or NaN when fl is: the sum is 0 + that cell), and U rescaled plus the
  // block's zero sum Z (the products 0·v summed from -0: x + 0·v_1 + … + 0·v_b is x + Z bit for bit).
  std::vector<StmtP> skipped_block() const {
    const Prec sp = sp_;
    std::vector<StmtP> body;
    body.push_back(set_local(rmax_, L(mp_)));
    body.push_back(set_local(fl_, floor_at_lowest(L(rmax_))));
    body.push_back(set_local(alpha_, rescale()));
    body.push_back(set_local(rs_, binary(BinOp::Add, constant(0.0, sp),
                                         unary(UnOp::Exp, binary(BinOp::Sub, constant(-INFINITY, sp), L(fl_), sp), sp),
                                         sp)));
    body.push_back(set_local(lsum_, rescaled_sum()));
    const ExprP u_read = tile_at(tile_u_, u_cell_, up_);
    body.push_back(over_values(set(tile_u_, tile_idx(u_cell_),
                                   binary(BinOp::Add, binary(BinOp::Mul, u_read, L(alpha_), up_),
                                          get(zero_sum_, zero_sum_cell(), up_), up_))));
    return body;
  }

  // The numerator U over the value loops (fresh symbols, indexed like O's value axes): rescaled,
  // accumulating p·v (tail-guarded).
  void numerator(std::vector<StmtP>& body) {
    const Nest& vn = *fm_.value_nest;
    const auto red = *reduction_of(vn);
    const ExprP& f0 = red.other->args[0];
    const bool p_first = is_get(f0) && f0->name == fm_.p;
    const ExprP& pr = p_first ? f0 : red.other->args[1];
    const ExprP& vr = p_first ? red.other->args[1] : f0;
    for (std::size_t a = 0; a < pr->indices.size(); ++a) {
      const Index i = pr->indices[a].canonical();
      if (i.is_plain_iterator()) vmap_[i.terms[0].sym] = fold_idx_[a];
    }
    for (const auto& l : fm_.value_loops) {
      NestLoop f = l;
      f.sym = names_.mint("os_" + l.sym);
      vmap_[l.sym] = Index::iter(f.sym);
      vloops_.push_back(f);
    }
    // U's cell: the value loops' cells flattened.
    std::int64_t stride = 1;
    for (auto it = vloops_.rbegin(); it != vloops_.rend(); ++it) {
      u_cell_.terms.insert(u_cell_.terms.begin(), Index::Term{stride, it->sym});
      stride *= it->to - it->from + 1;
    }
    u_cell_ = u_cell_.canonical();
    value_cells_ = stride;
    const ExprP u_read = tile_at(tile_u_, u_cell_, up_);
    body.push_back(over_values(set(tile_u_, tile_idx(u_cell_), binary(BinOp::Mul, u_read, get_local(alpha_, sp_), up_))));
    auto keep_reads = [](const Expr&, const std::vector<Index>&) -> ExprP { return nullptr; };
    v_read_ = rewrite_expr(vr, vmap_, keep_reads);
    StmtP acc = set(tile_u_, tile_idx(u_cell_), binary(BinOp::Add, u_read, product(s_cell_), up_));
    std::vector<StmtP> g = guarded({acc});
    body.push_back(over_values(over_keys(g.size() == 1 ? g[0] : seq(g))));
  }
  ExprP product(ExprP p) const { return binary(BinOp::Mul, std::move(p), v_read_, up_); }

  // After every block: the row state stored when read later, O on the last block.
  void block_outputs(std::vector<StmtP>& body) const {
    const Nest& vn = *fm_.value_nest;
    if (fm_.m_live) body.push_back(set(nz_.m, nz_.m_idcs, L(mn_)));
    if (fm_.l_live) body.push_back(set(nz_.l, nz_.l_idcs, L(norm_)));
    const ExprP u_read = tile_at(tile_u_, u_cell_, up_);
    StmtP out = over_values(set(fm_.o, subst(vn.store->indices, vmap_), binary(BinOp::Div, u_read, get_local(norm_, sp_), up_)));
    body.push_back(if_(binary(BinOp::Eq, embed_index(Index::iter(tb_), Prec::I32),
                              constant(static_cast<double>(nkb_ - 1), Prec::I32), Prec::I32),
                       {out}));
  }

  // The zero sums Z[tb, value cell, v's row axes] = -0 + 0·v[key 0] + … over each block's keys
  // (tail-guarded), computed once before the fold: only the row axes v is indexed by.
  StmtP zero_sums() {
    for (std::size_t r = 0; r < nz_.rows.size(); ++r) {
      bool read = false;
      for (const Index& i : v_read_->indices) read = read || i.mentions(nz_.rows[r].sym);
      if (read) z_rows_.push_back(r);
    }
    std::vector<std::int64_t> dims = {nkb_, value_cells_};
    for (std::size_t r : z_rows_) dims.push_back(nz_.rows[r].to - nz_.rows[r].from + 1);
    Node z;
    z.name = zero_sum_;
    z.dims = dims;
    z.prec = up_;
    extra_tiles_.push_back(z);
    const std::vector<Index> at = zero_sum_cell();
    std::vector<StmtP> g = guarded({set(zero_sum_, at, binary(BinOp::Add, get(zero_sum_, at, up_),
                                                               product(constant(0.0, sp_)), up_))});
    StmtP nest = over_values(seq({set(zero_sum_, at, constant(-0.0, up_)), over_keys(g.size() == 1 ? g[0] : seq(g))}));
    nest = for_loop(tb_, 0, nkb_ - 1, {nest});
    for (auto it = z_rows_.rbegin(); it != z_rows_.rend(); ++it)
      nest = for_loop(nz_.rows[*it].sym, nz_.rows[*it].from, nz_.rows[*it].to, {nest});
    return nest;
  }
  // Z's cell of the current block and value cell.
  std::vector<Index> zero_sum_cell() const {
    std::vector<Index> idx = {Index::iter(tb_), u_cell_};
    for (std::size_t r : z_rows_) idx.push_back(row_idx_[r]);
    return idx;
  }

  StmtP over_values(StmtP s) const {
    for (auto it = vloops_.rbegin(); it != vloops_.rend(); ++it) s = for_loop(it->sym, it->from, it->to, {s});
    return s;
  }

  // Per row: the operand copy, U and T cleared, the scan over the blocks; then the moved definitions.
  FoldEmission assemble(std::vector<StmtP> body) {
    std::vector<Carried> carried = {Carried{mp_, mn_, sp_, constant(-INFINITY, sp_)},
                                    Carried{lp_, ln_, sp_, constant(0.0, sp_)}};
    std::vector<StmtP> row_body = row_copies_;
    row_body.push_back(over_values(set(tile_u_, tile_idx(u_cell_), constant(0.0, up_))));
    row_body.push_back(over_keys(set(tile_s_, tile_idx(Index::iter(j_)), constant(0.0, sp_))));
    row_body.push_back(scan_loop(tb_, 0, nkb_ - 1, ScanDir::Forward, std::move(carried), std::move(body)));
    StmtP fold = seq(row_body);
    for (auto it = nz_.rows.rbegin(); it != nz_.rows.rend(); ++it) fold = for_loop(it->sym, it->from, it->to, {fold});
    FoldEmission em;
    em.skips = z_nest_ != nullptr;
    em.no_skip = no_skip_;
    if (z_nest_) em.stmts.push_back(z_nest_);
    em.stmts.push_back(fold);
    for (int p : fm_.moved) em.stmts.push_back(view_.line(p).stmt);
    em.tiles = {tile(tile_s_, bk_, sp_), tile(tile_u_, value_cells_, up_)};
    for (auto& t : extra_tiles_) em.tiles.push_back(std::move(t));
    return em;
  }

  const FoldMatch& fm_;
  const Normalizer& nz_;
  const RoutineView& view_;
  NameMinter& names_;
  Prec sp_ = Prec::F32, up_ = Prec::F32;
  std::int64_t sk_ = 0, bk_ = 0, nkb_ = 0, value_cells_ = 1;
  bool tail_ = false;
  std::string tb_, j_, tile_s_, tile_u_, mp_, mn_, lp_, ln_, rmax_, fl_, alpha_, rs_, lsum_, norm_;
  std::vector<Index> row_idx_, fold_idx_;
  std::vector<std::int64_t> row_dims_;
  Index key_, u_cell_;
  ExprP s_cell_;
  std::vector<NestLoop> vloops_;
  std::map<std::string, Index> vmap_;
  ExprP v_read_, live_;
  std::string zero_sum_, no_skip_;
  std::vector<std::size_t> z_rows_;
  StmtP z_nest_;
  std::vector<StmtP> row_copies_;
  std::vector<Node> extra_tiles_;
};

}  // namespace

FoldEmission emit_fold(const FoldPlan& plan, const RoutineView& view, NameMinter& names) {
  return FoldEmitter(*plan.match, view, names).emit();
}

Application fold_application(const FoldPlan& plan, const RoutineView& view, const FoldEmission& emitted) {
  const FoldMatch& fm = *plan.match;
  const Normalizer& nz = fm.nz;
  Application app;
  app.member = "online-softmax";
  app.shape = kBlockFoldId;
  // The anchor first: the value pass, where the fold lands (verify isolates an application by
  // replacing its anchor in place).
  std::vector<int> stmts = {plan.f_at};
  for (int p : plan.consumed) stmts.push_back(p);
  for (int p : stmts) {
    app.statements.push_back(p + 1);
    app.lines.push_back(view.source_line(p));
  }
  app.anchor_run = static_cast<int>(emitted.stmts.size());  // the fold, then the moved definitions
  const std::int64_t sk = nz.t.to - nz.t.from + 1;
  const std::int64_t bk = std::min(fm.block, sk);
  app.matched = matched_roles(FoldRoles{nz.x, nz.m, nz.l, fm.p, fm.o, fm.v, fm.scores.s});
  app.emitted = fmt::format(
      "one scan per row over {} key block{} of {} ({}), tiles {} and {}{}; {} moved behind it{}",
      (sk + bk - 1) / bk, (sk + bk - 1) / bk == 1 ? "" : "s", bk, sk % bk ? "a guarded tail padded with -inf" : "no tail",
      emitted.tiles[0].name, emitted.tiles[1].name,
      emitted.skips ? "; a block the -inf mask hides entirely is skipped (the state updated in O(value cells))"
      : emitted.no_skip.empty() ? ""
                                : "; no block skipping: " + emitted.no_skip,
      fm.moved.empty() ? "no definition" : fmt::format("{} definition{}", fm.moved.size(), fm.moved.size() == 1 ? "" : "s"),
      fm.score_chain_removed ? "; the score chain removed" : "; the score chain kept (read elsewhere)");
  const Prec sp = state_prec(nz.score_prec);
  if (fm.m_live) {
    Obligation mx;
    mx.kind = ObligationKind::Exact;
    mx.claim = claim::kFoldMax;
    mx.description = fmt::format("{} equals the composed max of {} bitwise: the same maxima in the same order, "
                                 "padded cells -inf",
                                 nz.m, nz.x);
    mx.covers = {Cover{nz.m, cells_text(nz.m, nz.m_idcs, nz.rows)}};
    app.obligations.push_back(mx);
  }
  if (fm.l_live) {
    Obligation sum;
    sum.kind = ObligationKind::Bounded;
    sum.claim = claim::kFoldSum;
    sum.description = fmt::format("{} is the composed sum of exp({} - {}) within rounding, accumulated block by block",
                                  nz.l, nz.x, nz.m);
    sum.covers = {Cover{nz.l, cells_text(nz.l, nz.l_idcs, nz.rows)}};
    sum.bound = std::make_shared<SumTerms>(sk, nz.score_prec, sp, bk);
    app.obligations.push_back(sum);
  }
  Obligation out;
  out.kind = ObligationKind::Bounded;
  out.claim = claim::kFoldOutput;
  out.description = fmt::format("{} is the composed (p / l)·v within rounding: (Σ p·v) / l accumulated in blocks of {}",
                                fm.o, bk);
  out.covers = {Cover{fm.o, fm.o}};
  out.bound = std::make_shared<SumTerms>(sk, nz.score_prec, sp, bk);
  app.obligations.push_back(out);
  return app;
}

}  // namespace fp::osm
