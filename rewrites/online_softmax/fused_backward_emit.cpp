#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "core/ir_visit.h"
#include "rewrites/online_softmax/fused_backward.h"
#include "rewrites/online_softmax/fused_backward_match.h"

namespace fp::osm {

namespace {

// `e` with its symbols mapped and each read `replace` answers for replaced.
ExprP transplant(const ExprP& e, const std::map<std::string, Index>& syms,
                 const std::function<ExprP(const Expr&)>& replace) {
  if (!e) return e;
  if (e->kind == ExprKind::Get)
    if (ExprP r = replace(*e)) return r;
  auto out = std::make_shared<Expr>(*e);
  for (auto& i : out->indices) i = i.substituted(syms);
  for (auto& a : out->args) a = transplant(a, syms, replace);
  return out;
}

// `e` with each read `replace` answers for replaced (indices kept).
ExprP replace_reads(const ExprP& e, const std::function<ExprP(const Expr&)>& replace) {
  return transplant(e, {}, replace);
}

class Emitter {
 public:
  Emitter(const BackwardMatch& bm, const RoutineView& view, NameMinter& names)
      : bm_(bm), view_(view), names_(names) {
    for (std::size_t r = 0; r < bm.vocab.labels.size(); ++r)
      role_syms_.push_back(names.mint("bw_" + sanitize(bm.vocab.labels[r])));
  }

  BackwardEmission emit(bool allow_blocks) {
    BackwardEmission out;
    const Node* m = view_.node(bm_.nz.m);
    d_node_ = names_.mint("os_bwd_rowdot_" + bm_.o);
    out.nodes.push_back(make_node(d_node_, m->dims, bm_.sp));
    out.stmts.push_back(rowdot());
    const auto order = allow_blocks ? linear_recompute() : std::nullopt;
    // The blocked form needs the pair's other axis to be one role (the key for dQ, the query row
    // for dK and dV: outer_of lists it last) and the recomputed nodes in one line at one precision.
    auto nest = [&](const BoundNest& g, const Signature* own, int channel, bool with_ds, const char* what) {
      std::vector<int> outer = own ? outer_of(*own, channel) : outer_rows_then_key();
      int others = 1;
      if (own) {
        others = 0;
        for (int r : bm_.row_roles) others += !has_role(*own, r);
      }
      if (order && others == 1) {
        const int inner = outer.back();
        outer.pop_back();
        out.stmts.push_back(blocked_nest(g, outer, inner, with_ds, *order, what, out.nodes));
        out.blocked = true;
      } else {
        out.stmts.push_back(gradient_nest(g, outer, with_ds));
      }
    };
    nest(bm_.k, nullptr, bm_.chan1, true, "dq");
    nest(bm_.l, &bm_.dk_sig, bm_.chan1, true, "dk");
    nest(bm_.b, &bm_.dv_sig, bm_.chan0, false, "dv");
    out.skips = skips_;
    return out;
  }

 private:
  const BackwardMatch& bm_;
  const RoutineView& view_;
  NameMinter& names_;
  std::vector<std::string> role_syms_;
  bool skips_ = false;  // some block's steps run under its live condition
  std::string d_node_;

  static std::string sanitize(const std::string& s) {
    std::string out;
    for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    return out;
  }
  // A role's index in the code being emitted: its loop symbol, or inside a block of the blocked
  // form, the block's offset plus the cell.
  Index role_index(int role) const {
    if (auto it = role_override_.find(role); it != role_override_.end()) return it->second;
    return Index::iter(role_syms_[static_cast<std::size_t>(role)]);
  }
  std::vector<Index> at(const Signature& sig) const {
    std::vector<Index> out;
    for (const Slot& s : sig) out.push_back(s.is_fixed() ? Index::fixed(s.fixed) : role_index(s.role));
    return out;
  }
  std::map<int, Index> role_override_;
  std::map<std::string, Index> sym_map(const RoleEnv& env) const {
    std::map<std::string, Index> out;
    for (const auto& [sym, role] : env.symbols()) out[sym] = role_index(role);
    return out;
  }
  // A nest storing a node of x's shape at plain iterators: its symbols -> the pair's.
  std::map<std::string, Index> x_cell_map(const Nest& nest) const {
    RoleEnv env;
    env.bind(bm_.x_sig, nest.store->indices);
    return sym_map(env);
  }
  StmtP loop(int role, std::vector<StmtP> body) const {
    return for_loop(role_syms_[static_cast<std::size_t>(role)], 0,
                    bm_.vocab.extents[static_cast<std::size_t>(role)] - 1, std::move(body));
  }
  StmtP loops(const std::vector<int>& roles, std::vector<StmtP> body) const {
    for (auto it = roles.rbegin(); it != roles.rend(); ++it) body = {loop(*it, std::move(body))};
    return body.size() == 1 ? body[0] : seq(std::move(body));
  }

  // D[m's cells] := Σ_c0 dO·O.
  StmtP rowdot() {
    const std::string acc = names_.mint("bw_rowdot_acc");
    const Node* o = view_.node(bm_.o);
    const Node* dout = view_.node(bm_.dout);
    std::vector<StmtP> body = {declare_local(acc, bm_.sp), set_local(acc, constant(0.0, bm_.sp))};
    ExprP term = binary(BinOp::Mul, get(bm_.dout, at(bm_.o_sig), dout->prec),
                        get(bm_.o, at(bm_.o_sig), o->prec), bm_.sp);
    body.push_back(
        loop(bm_.chan0, {set_local(acc, binary(BinOp::Add, get_local(acc, bm_.sp), term, bm_.sp))}));
    body.push_back(set(d_node_, at(bm_.m_sig), get_local(acc, bm_.sp)));
    std::vector<int> rows;
    for (const Slot& s : bm_.m_sig)
      if (!s.is_fixed()) rows.push_back(s.role);
    return loops(rows, std::move(body));
  }

  std::vector<int> outer_rows_then_key() const {
    std::vector<int> out = bm_.row_roles;
    out.push_back(bm_.key_role);
    return out;
  }
  // The gradient's own axes but its channel, in its axis order, then the rows it does not index.
  std::vector<int> outer_of(const Signature& sig, int channel) const {
    std::vector<int> out;
    for (const Slot& s : sig)
      if (!s.is_fixed() && s.role != channel) out.push_back(s.role);
    for (int r : bm_.row_roles)
      if (!has_role(sig, r)) out.push_back(r);
    return out;
  }

  // The score contraction's symbols: its cell's (the pair's indices) and a fresh one per reduced
  // loop, which `reduced` lists outermost first.
  std::map<std::string, Index> score_symbols(std::vector<const NestLoop*>& reduced) {
    const Nest& sn = *bm_.scores.score_nest;
    std::map<std::string, Index> syms = x_cell_map(sn);
    for (const auto& lp : sn.loops)
      if (!syms.count(lp.sym)) {
        syms[lp.sym] = Index::iter(names_.mint("bw_" + sanitize(lp.sym)));
        reduced.push_back(&lp);
      }
    return syms;
  }

  // The pair's recomputed cell of `node` (the score contraction, its chain, n, e, P) into a local,
  // at the node's own precision; recursively for what it reads. Returns the local's read.
  ExprP recompute(const std::string& node, std::vector<StmtP>& out, std::map<std::string, ExprP>& done) {
    if (auto it = done.find(node); it != done.end()) return it->second;
    const Node* nd = view_.node(node);
    if (node != bm_.scores.s) {
      // What the definition reads first (declared in the order they are computed).
      const Nest& def = *view_.line(*view_.definition(node)).nest;
      std::vector<const Expr*> gets;
      collect_gets(def.store->value, gets);
      for (const Expr* g : gets)
        if (recomputed(g->name)) recompute(g->name, out, done);
    }
    const std::string local = names_.mint("bw_" + sanitize(node));
    ExprP read = get_local(local, nd->prec);
    out.push_back(declare_local(local, nd->prec));
    if (node == bm_.scores.s) {
      // zero S, then S += a·b over the reduced loops in their order (fresh symbols).
      const Nest& sn = *bm_.scores.score_nest;
      std::vector<const NestLoop*> reduced;
      std::map<std::string, Index> syms = score_symbols(reduced);
      out.push_back(set_local(local, constant(0.0, nd->prec)));
      StmtP body = set_local(local, transplant(sn.store->value, syms, [&](const Expr& g) -> ExprP {
                               return g.name == node ? read : nullptr;
                             }));
      for (auto it = reduced.rbegin(); it != reduced.rend(); ++it)
        body = for_loop(syms.at((*it)->sym).terms[0].sym, (*it)->from, (*it)->to, {body});
      out.push_back(body);
    } else {
      const Nest& def = *view_.line(*view_.definition(node)).nest;
      out.push_back(
          set_local(local, transplant(def.store->value, x_cell_map(def), [&](const Expr& g) -> ExprP {
                      auto it = done.find(g.name);
                      return it == done.end() ? nullptr : it->second;
                    })));
    }
    done[node] = read;
    return read;
  }
  bool recomputed(const std::string& node) const {
    if (node == bm_.scores.s || node == bm_.nz.n || node == bm_.nz.e || node == bm_.p) return true;
    for (const Nest* n : bm_.scores.chain_nests)
      if (n->store->name == node) return true;
    return false;
  }

  // p, then (for dQ and dK) dp, ds; returns ds's read (or p's).
  ExprP pair(std::vector<StmtP>& out, bool with_ds) {
    std::map<std::string, ExprP> done;
    ExprP p = recompute(bm_.p, out, done);
    if (!with_ds) return p;
    // dp := 0 + Σ_c0 A's product (dP's cell).
    const Node* dpn = view_.node(bm_.dp);
    const std::string dp = names_.mint("bw_dprob");
    ExprP dpr = get_local(dp, dpn->prec);
    out.push_back(declare_local(dp, dpn->prec));
    out.push_back(set_local(dp, constant(0.0, dpn->prec)));
    out.push_back(loop(bm_.chan0, {set_local(dp, transplant(bm_.a.nest->store->value, sym_map(bm_.a.env),
                                                            [&](const Expr& g) -> ExprP {
                                                              return g.name == bm_.dp ? dpr : nullptr;
                                                            }))}));
    // ds := p·(dp − D), then each link 0 + f(ds).
    const std::string ds = names_.mint("bw_dscore");
    ExprP dsr = get_local(ds, bm_.sp);
    out.push_back(declare_local(ds, bm_.sp));
    out.push_back(set_local(
        ds,
        binary(BinOp::Mul, p, binary(BinOp::Sub, dpr, get(d_node_, at(bm_.m_sig), bm_.sp), bm_.sp), bm_.sp)));
    for (const ChainLink& lk : bm_.links) {
      const Node* nd = view_.node(lk.node);
      out.push_back(
          set_local(ds, transplant(lk.nest->store->value, sym_map(lk.env), [&](const Expr& g) -> ExprP {
                      if (g.name == lk.node) return constant(0.0, nd->prec);
                      if (g.name == lk.prev) return dsr;
                      return nullptr;
                    })));
    }
    return dsr;
  }


  // The recomputed nodes in computation order (S, the chain up to x, n, e, P) when each reads only
  // the one before it and all are at x's precision: the blocked form computes them in place, one
  // tile cell per pair.
  std::optional<std::vector<std::string>> linear_recompute() const {
    std::vector<std::string> order = {bm_.scores.s};
    for (auto it = bm_.scores.chain_nests.rbegin(); it != bm_.scores.chain_nests.rend(); ++it)
      order.push_back((*it)->store->name);
    for (const std::string& n : {bm_.nz.n, bm_.nz.e, bm_.p}) order.push_back(n);
    const Prec xp = view_.node(bm_.nz.x)->prec;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (view_.node(order[i])->prec != xp) return std::nullopt;
      if (i == 0) continue;
      std::vector<const Expr*> gets;
      collect_gets(view_.line(*view_.definition(order[i])).nest->store->value, gets);
      for (const Expr* g : gets)
        if (recomputed(g->name) && g->name != order[i - 1]) return std::nullopt;
    }
    return order;
  }

  // The blocked form of one gradient nest (fused_backward.h, EMITS, "blocked"): per outer cell, the
  // pair's other axis (`inner`) in blocks of up to kBackwardBlock cells, each block's p (in place
  // in tile T), dp (tile DP) and ds (tile DS) one statement per step over the block's cells, then
  // the gradient's contraction over the block. The same values as the per-pair form, bit for bit:
  // each cell is the same expression, and every gradient cell still accumulates its pairs in the
  // inner axis's order.
  StmtP blocked_nest(const BoundNest& g, const std::vector<int>& outer, int inner, bool with_ds,
                     const std::vector<std::string>& order, const char* what, std::vector<Node>& nodes) {
    const std::int64_t n = bm_.vocab.extents[static_cast<std::size_t>(inner)];
    const std::int64_t bsz = std::min(kBackwardBlock, n), full = n / bsz, rem = n % bsz;
    const std::string j = names_.mint("bw_j"), ib = names_.mint("bw_block");
    // Tiles [cell, outer axes...], the widest outer axis padded by 16 cells (as the fold's tiles:
    // at power-of-two lengths the cells of a block would share cache sets).
    std::vector<std::int64_t> dims = {bsz};
    for (int r : outer) dims.push_back(bm_.vocab.extents[static_cast<std::size_t>(r)]);
    if (dims.size() > 1) {
      auto widest = std::max_element(dims.begin() + 1, dims.end());
      if (*widest >= 16) *widest += 16;
    }
    const Prec xp = view_.node(bm_.nz.x)->prec, dpp = view_.node(bm_.dp)->prec;
    auto tile = [&](const std::string& base, Prec p) {
      Node t = make_node(names_.mint(fmt::format("os_bwd_{}_{}", base, what)), dims, p);
      nodes.push_back(t);
      return t.name;
    };
    const std::string tp = tile("probs", xp);
    // ds goes into dp's tile in place when both are at one precision (every step then reads the
    // cell it writes, which a compiled executor runs across its lanes), else into its own tile.
    const std::string tdp = with_ds ? tile("dprob", dpp) : "";
    const std::string tds = !with_ds ? "" : dpp == bm_.sp ? tdp : tile("dscore", bm_.sp);
    std::vector<Index> tix = {Index::iter(j)};
    for (int r : outer) tix.push_back(role_index(r));
    // The gradient's tile [channel, outer axes].
    const int channel = with_ds ? bm_.chan1 : bm_.chan0;
    const std::string grad = g.nest->store->name;
    const Prec gp = view_.node(grad)->prec;
    const std::vector<Index> grad_at = at(*g.env.sign(g.nest->store->indices));
    std::string tg;
    {
      std::vector<std::int64_t> gdims = dims;
      gdims[0] = bm_.vocab.extents[static_cast<std::size_t>(channel)];
      Node t = make_node(names_.mint(fmt::format("os_bwd_grad_{}", what)), gdims, gp);
      nodes.push_back(t);
      tg = t.name;
    }
    std::vector<Index> gix = {role_index(channel)};
    for (int r : outer) gix.push_back(role_index(r));
    auto cell = [&](const std::string& t, Prec p) { return get(t, tix, p); };
    auto over = [&](std::int64_t count, std::vector<StmtP> body) {
      return for_loop(j, 0, count - 1, std::move(body));
    };
    // The row operands (fused_backward.h, EMITS, "blocked"): a read of the contractions that
    // follows the outer cell and the reduced axis but not the block's cell is copied once per outer
    // cell into a tile [reduced cells, outer axes] — the rows a compiled executor runs side by side
    // then read consecutive cells — and read from there (the same values).
    std::vector<StmtP> copies;
    std::map<std::string, ExprP> copied;
    std::vector<Index> outer_idx;
    for (int r : outer) outer_idx.push_back(role_index(r));
    auto from_rows = [&](const ExprP& v, const std::string& red, std::int64_t extent) {
      return replace_reads(v, [&](const Expr& rd) -> ExprP {
        bool red_only = false, blockwise = false;
        for (const Index& i : rd.indices) {
          red_only = red_only || i.mentions(red);
          blockwise = blockwise || i.mentions(j) || i.mentions(ib);
        }
        if (!red_only || blockwise || rd.name.rfind("os_bwd_", 0) == 0) return nullptr;
        const std::string key = rd.name + "/" + red;
        if (!copied.count(key)) {
          std::vector<std::int64_t> tdims = dims;
          tdims[0] = extent;
          Node t = make_node(names_.mint(fmt::format("os_bwd_rows_{}_{}", rd.name, what)), tdims, rd.prec);
          nodes.push_back(t);
          std::vector<Index> at_red = {Index::iter(red)};
          at_red.insert(at_red.end(), outer_idx.begin(), outer_idx.end());
          copies.push_back(for_loop(red, 0, extent - 1, {set(t.name, at_red, std::make_shared<Expr>(rd))}));
          copied[key] = get(t.name, at_red, rd.prec);
        }
        return copied[key];
      });
    };

    auto block = [&](Index off, std::int64_t count) {
      Index at_j = off;
      at_j.terms.push_back(Index::Term{1, j});
      role_override_[inner] = at_j.canonical();
      std::vector<StmtP> st;
      // p: S's zero and contraction, then each node of the line in place.
      st.push_back(over(count, {set(tp, tix, constant(0.0, xp))}));
      {
        const Nest& sn = *bm_.scores.score_nest;
        std::vector<const NestLoop*> reduced;
        std::map<std::string, Index> syms = score_symbols(reduced);
        ExprP value = transplant(sn.store->value, syms, [&](const Expr& e) -> ExprP {
          return e.name == order[0] ? cell(tp, xp) : nullptr;
        });
        if (reduced.size() == 1)
          value = from_rows(value, syms.at(reduced[0]->sym).terms[0].sym, reduced[0]->to + 1);
        StmtP body = set(tp, tix, value);
        for (auto it = reduced.rbegin(); it != reduced.rend(); ++it)
          body = for_loop(syms.at((*it)->sym).terms[0].sym, (*it)->from, (*it)->to, {body});
        st.push_back(over(count, {body}));
      }
      for (std::size_t i = 1; i < order.size(); ++i) {
        const Nest& def = *view_.line(*view_.definition(order[i])).nest;
        st.push_back(over(
            count, {set(tp, tix, transplant(def.store->value, x_cell_map(def), [&](const Expr& e) -> ExprP {
                          return e.name == order[i - 1] ? cell(tp, xp) : nullptr;
                        }))}));
      }
      const std::size_t dp_from = st.size();
      if (with_ds) {
        // dp := 0 + Σ_c0 A's product; ds := p·(dp − D), then each link 0 + f(ds).
        st.push_back(over(count, {set(tdp, tix, constant(0.0, dpp))}));
        ExprP dp_value =
            transplant(bm_.a.nest->store->value, sym_map(bm_.a.env),
                       [&](const Expr& e) -> ExprP { return e.name == bm_.dp ? cell(tdp, dpp) : nullptr; });
        dp_value = from_rows(dp_value, role_syms_[static_cast<std::size_t>(bm_.chan0)],
                             bm_.vocab.extents[static_cast<std::size_t>(bm_.chan0)]);
        st.push_back(over(count, {loop(bm_.chan0, {set(tdp, tix, dp_value)})}));
        st.push_back(
            over(count,
                 {set(tds, tix,
                      binary(BinOp::Mul, cell(tp, xp),
                             binary(BinOp::Sub, cell(tdp, dpp), get(d_node_, at(bm_.m_sig), bm_.sp), bm_.sp),
                             bm_.sp))}));
        for (const ChainLink& lk : bm_.links) {
          const Node* nd = view_.node(lk.node);
          st.push_back(over(
              count,
              {set(tds, tix, transplant(lk.nest->store->value, sym_map(lk.env), [&](const Expr& e) -> ExprP {
                     if (e.name == lk.node) return constant(0.0, nd->prec);
                     if (e.name == lk.prev) return cell(tds, bm_.sp);
                     return nullptr;
                   }))}));
        }
      }
      skip_masked_steps(st, dp_from, j, count, cell(tp, xp), with_ds ? cell(tds, bm_.sp) : nullptr);
      // The gradient's row, in its tile: over its channel, each cell accumulating the block's pairs
      // in order.
      const std::string replaced = with_ds ? bm_.ds : bm_.p;
      ExprP scalar = with_ds ? cell(tds, bm_.sp) : cell(tp, xp);
      st.push_back(loop(
          channel,
          {over(count,
                {set(tg, gix, transplant(g.nest->store->value, sym_map(g.env), [&](const Expr& e) -> ExprP {
                       if (e.name == replaced) return scalar;
                       if (e.name == grad) return get(tg, gix, gp);
                       return nullptr;
                     }))})}));
      role_override_.erase(inner);
      return st;
    };
    std::vector<StmtP> blocks;
    if (full > 0) blocks.push_back(for_loop(ib, 0, full - 1, block(Index{{Index::Term{bsz, ib}}, 0}, bsz)));
    if (rem > 0)
      for (StmtP& st : block(Index::fixed(full * bsz), rem)) blocks.push_back(std::move(st));
    // The gradient's row copied into its tile before the blocks and back after them (exact copies
    // at its precision): the accumulation then reads and writes consecutive cells across the rows
    // a compiled executor runs side by side.
    std::vector<StmtP> body = std::move(copies);
    body.push_back(loop(channel, {set(tg, gix, get(grad, grad_at, gp))}));
    for (StmtP& st : blocks) body.push_back(std::move(st));
    body.push_back(loop(channel, {set(grad, grad_at, get(tg, gix, gp))}));
    return loops(outer, std::move(body));
  }

  // How an i32 predicate of the indices changes as the block's cell `j` grows: -1 it can only turn
  // from true to false, +1 only from false to true, 0 it does not depend on j, 2 anything else.
  // Leaves are lt of affine indices (a < b turns false as j grows when a - b grows with j); max and
  // min of two predicates (or, and) keep a shared direction.
  static int direction(const ExprP& e, const std::string& j) {
    if (!e || e->prec != Prec::I32) return 2;
    if (e->kind == ExprKind::Const) return 0;
    if (e->kind != ExprKind::Binary) return 2;
    auto coef = [&](const ExprP& a) -> std::optional<std::int64_t> {
      if (a->prec != Prec::I32) return std::nullopt;
      if (a->kind == ExprKind::Const) return 0;
      if (a->kind != ExprKind::EmbedIndex) return std::nullopt;
      std::int64_t c = 0;
      for (const auto& t : a->indices[0].canonical().terms)
        if (t.sym == j) c += t.coef;
      return c;
    };
    switch (e->binop()) {
      case BinOp::Lt: {
        const auto a = coef(e->args[0]), b = coef(e->args[1]);
        if (!a || !b) return 2;
        return *a > *b ? -1 : *a < *b ? 1 : 0;
      }
      case BinOp::Max:
      case BinOp::Min: {
        const int x = direction(e->args[0], j), y = direction(e->args[1], j);
        if (x == 2 || y == 2 || (x != 0 && y != 0 && x != y)) return 2;
        return x != 0 ? x : y;
      }
      default:
        return 2;
    }
  }

  // Skipping masked blocks (fused_backward.h, EMITS, "skips"). When the line computes p through
  // x = where(pred, T, fill) with T the score tile, the steps before that where (S's zero, its
  // contraction and the chain up to x) only feed its first branch, which a cell with pred false
  // never reads; likewise, when a link is 0 + where(pred, ds, 0) with the same pred, dp's zero and
  // contraction, ds := p·(dp − D) and the links before it only feed that branch. A block whose
  // cells all have pred false reads neither, so these steps run under `if live`, live = pred at the
  // cell where a monotone pred is true longest (j = 0 if it can only fall as j grows, the block's
  // last cell if it can only rise): a causal mask's fully masked blocks then skip the block's score
  // and dp contractions. The where still runs and selects the fill (or 0) as before, from whatever
  // the tile holds: every value is the same, bit for bit.
  void skip_masked_steps(std::vector<StmtP>& st, std::size_t dp_from, const std::string& j, std::int64_t count,
                         const ExprP& score_cell, const ExprP& ds_cell) {
    auto value_of = [](const StmtP& s) -> const ExprP& { return s->body.at(0)->value; };  // over(count, {set})
    std::optional<std::size_t> where_at;
    ExprP pred;
    for (std::size_t i = 2; i < dp_from && !where_at; ++i) {
      const ExprP& v = value_of(st[i]);
      if (v && v->kind == ExprKind::Ternary && v->ternop() == TernOp::Where && equal(v->args[1], score_cell)) {
        where_at = i;
        pred = v->args[0];
      }
    }
    if (!where_at) return;
    const int dir = direction(pred, j);
    if (dir == 2) return;
    const ExprP live = transplant(pred, {{j, Index::fixed(dir > 0 ? count - 1 : 0)}}, [](const Expr&) { return nullptr; });
    std::optional<std::size_t> mask_link;
    if (ds_cell)
      for (std::size_t i = dp_from + 3; i < st.size() && !mask_link; ++i) {
        const ExprP& v = value_of(st[i]);
        if (!v) continue;
        bool found = false;
        for_each_expr(v, [&](const Expr& e) {
          found = found || (e.kind == ExprKind::Ternary && e.ternop() == TernOp::Where && equal(e.args[0], pred) &&
                            equal(e.args[1], ds_cell) && e.args[2]->kind == ExprKind::Const && e.args[2]->value == 0);
        });
        if (found) mask_link = i;
      }
    skips_ = true;
    std::vector<StmtP> out;
    out.push_back(if_(live, std::vector<StmtP>(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(*where_at))));
    const std::size_t dp_end = mask_link ? *mask_link : dp_from;
    out.insert(out.end(), st.begin() + static_cast<std::ptrdiff_t>(*where_at), st.begin() + static_cast<std::ptrdiff_t>(dp_from));
    if (mask_link)
      out.push_back(if_(live, std::vector<StmtP>(st.begin() + static_cast<std::ptrdiff_t>(dp_from),
                                                 st.begin() + static_cast<std::ptrdiff_t>(dp_end))));
    out.insert(out.end(), st.begin() + static_cast<std::ptrdiff_t>(dp_end), st.end());
    st = std::move(out);
  }

  // One gradient nest: the outer loops, the pair, the contraction over its channel.
  StmtP gradient_nest(const BoundNest& g, const std::vector<int>& outer, bool with_ds) {
    std::vector<StmtP> body;
    ExprP scalar = pair(body, with_ds);
    const std::string replaced = with_ds ? bm_.ds : bm_.p;
    const int channel = with_ds ? bm_.chan1 : bm_.chan0;
    body.push_back(
        loop(channel, {set(g.nest->store->name, at(*g.env.sign(g.nest->store->indices)),
                           transplant(g.nest->store->value, sym_map(g.env), [&](const Expr& e) -> ExprP {
                             return e.name == replaced ? scalar : nullptr;
                           }))}));
    return loops(outer, std::move(body));
  }
};

}  // namespace

BackwardEmission emit_backward(const BackwardPlan& plan, const RoutineView& view, NameMinter& names,
                               bool allow_blocks) {
  return Emitter(*plan.match, view, names).emit(allow_blocks);
}

Application backward_application(const BackwardPlan& plan, const RoutineView& view,
                                 const BackwardEmission& em) {
  const BackwardMatch& bm = *plan.match;
  Application app;
  app.member = "online-softmax";
  app.shape = kFusedBackwardId;
  std::vector<int> stmts = {plan.emit_at};
  for (int p : plan.consumed)
    if (p != plan.emit_at) stmts.push_back(p);
  for (int p : stmts) {
    app.statements.push_back(p + 1);
    app.lines.push_back(view.source_line(p));
  }
  app.matched = matched_roles(BackwardRoles{bm.nz.x, bm.p, bm.o, bm.v, bm.dout, bm.dp, bm.ds, bm.q_node, bm.k_node,
                                            bm.dq, bm.dk, bm.dv, bm.nz.m, bm.nz.e, bm.nz.l, bm.ng});
  app.anchor_run = static_cast<int>(em.stmts.size());
  app.emitted = fmt::format(
      "the row dot D = Σ {}·{} into {}, and three nests recomputing p, dp and ds per (query, key) pair {}: "
      "over "
      "the query rows into {}, over the keys into {} and {}{}; {} intermediate{} and {} statement{} consumed",
      bm.dout, bm.o, em.nodes[0].name,
      em.blocked ? fmt::format("in blocks of up to {} over the pair's other axis, in tiles", kBackwardBlock)
                 : "in scope locals",
      bm.dq, bm.dk, bm.dv,
      em.skips ? "; a block the mask hides entirely skips its score and dp contractions" : "",
      plan.consumed_nodes.size(), plan.consumed_nodes.size() == 1 ? "" : "s", plan.consumed.size(),
      plan.consumed.size() == 1 ? "" : "s");
  Obligation dv;
  dv.kind = ObligationKind::Exact;
  dv.claim = claim::kBackwardDv;
  dv.description =
      fmt::format("{} receives the composed products {}·{} in the same order, p recomputed bit for bit",
                  bm.dv, bm.p, bm.dout);
  dv.covers = {Cover{bm.dv, bm.dv}};
  app.obligations.push_back(dv);
  for (const auto& [claim, node] : {std::pair{claim::kBackwardDq, bm.dq}, {claim::kBackwardDk, bm.dk}}) {
    Obligation ob;
    ob.kind = ObligationKind::Bounded;
    ob.claim = claim;
    ob.description = fmt::format(
        "{} is the composed gradient within rounding: ds = p·(dp − D) reassociates (dP / l + "
        "lg)·e, D = Σ dO·O; the per-cell order over the pairs is the composed one",
        node);
    ob.covers = {Cover{node, node}};
    app.obligations.push_back(ob);
  }
  return app;
}

}  // namespace fp::osm
