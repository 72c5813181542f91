#include "rewrites/online_softmax/fused_backward.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <variant>

#include "rewrites/online_softmax/fused_backward_match.h"

namespace fp::osm {

namespace {

struct Fail {
  std::string code, sentence;
};

// The two factors of a product `mul(a, b)` as reads, the one of `node` first; nullopt otherwise.
std::optional<std::pair<const Expr*, const Expr*>> product_with(const ExprP& e, const std::string& node) {
  if (!is_binary(e, BinOp::Mul) || !is_get(e->args[0]) || !is_get(e->args[1])) return std::nullopt;
  if (e->args[0]->name == node) return std::make_pair(e->args[0].get(), e->args[1].get());
  if (e->args[1]->name == node) return std::make_pair(e->args[1].get(), e->args[0].get());
  return std::nullopt;
}

// `s` as an accumulation `target += other` (a reduction with add), with its nest.
struct Accumulation {
  const Nest* nest = nullptr;
  ExprP other;
};
std::optional<Accumulation> accumulation_at(const RoutineView& view, int pos) {
  const Line& li = view.line(pos);
  if (!li.nest) return std::nullopt;
  auto red = reduction_of(*li.nest);
  if (!red || red->op != BinOp::Add) return std::nullopt;
  return Accumulation{&*li.nest, red->other};
}

// The node's writers are exactly a whole-node zero-out followed by `acc` (in that order).
std::optional<int> zeroed_then(const RoutineView& view, const std::string& node,
                               const std::vector<int>& acc) {
  const std::vector<int>& ws = view.writers(node);
  if (ws.size() != acc.size() + 1 || view.line(ws[0]).stmt->kind != StmtKind::Zero) return std::nullopt;
  std::vector<int> rest(ws.begin() + 1, ws.end());
  std::vector<int> want = acc;
  std::sort(want.begin(), want.end());
  if (rest != want) return std::nullopt;
  return ws[0];
}

// Readers of `node` other than the statements that write it.
std::vector<int> outside_readers(const RoutineView& view, const std::string& node) {
  std::vector<int> out;
  const std::vector<int>& ws = view.writers(node);
  for (int r : view.readers(node))
    if (!std::count(ws.begin(), ws.end(), r)) out.push_back(r);
  return out;
}

std::optional<Fail> loops_fit(const RoleEnv& env, const Nest& nest, const Vocabulary& vocab, int pos) {
  LoopCheck lc = check_loops(env, nest, vocab);
  switch (lc.fit) {
    case LoopFit::Ok:
      return std::nullopt;
    case LoopFit::Dead:
      return Fail{"dead-or-partial-loop",
                  fmt::format("loop {} of {} runs zero times", lc.loop->sym, pos_text(pos))};
    case LoopFit::Partial:
      return Fail{"dead-or-partial-loop", fmt::format("loop {} of {} does not run over its whole axis from 0",
                                                      lc.loop->sym, pos_text(pos))};
    case LoopFit::Unbound:
      return Fail{"backward-shape", fmt::format("loop {} of {} follows none of the attention's axes",
                                                lc.loop->sym, pos_text(pos))};
  }
  return std::nullopt;
}

// Binds the one loop of `nest` not yet bound to a new or existing channel role of that extent.
bool bind_channel(RoleEnv& env, const Nest& nest, Vocabulary& vocab, int& role, const std::string& label) {
  const NestLoop* extra = nullptr;
  for (const auto& lp : nest.loops)
    if (!env.role_of(lp.sym)) {
      if (extra) return false;
      extra = &lp;
    }
  if (!extra) return false;
  if (role < 0) role = vocab.add(label, extra->to + 1);
  return env.bind(Signature{Slot{role, 0}}, {Index::iter(extra->sym)});
}

class Matcher {
 public:
  Matcher(const RoutineView& view, const Normalizer& nz) : view_(view) { bm_.nz = nz; }

  // nullopt: no composed backward hangs off this normalizer (nothing to say).
  std::optional<std::variant<BackwardMatch, Fail>> run() {
    if (auto f = roles()) return *f;
    if (auto f = value_pass()) return *f;
    const ValueGradientStart a = find_a();
    if (std::holds_alternative<std::monostate>(a)) return std::nullopt;
    if (const Fail* f = std::get_if<Fail>(&a)) return *f;
    for (auto step : {&Matcher::dp_readers, &Matcher::eg_chain, &Matcher::gradient_chain,
                      &Matcher::contractions, &Matcher::value_gradient, &Matcher::contract})
      if (auto f = (this->*step)()) return *f;
    return bm_;
  }

 private:
  const RoutineView& view_;
  BackwardMatch bm_;

  const Normalizer& nz() const { return bm_.nz; }
  Fail shape(std::string s) const { return Fail{"backward-shape", std::move(s)}; }

  // The roles: one per axis of x the max iterates (the key among them), fixed axes fixed.
  std::optional<Fail> roles() {
    const Node* x = view_.node(nz().x);
    RoleEnv env;
    for (std::size_t a = 0; a < nz().x_idcs.size(); ++a) {
      const Index i = nz().x_idcs[a].canonical();
      if (i.is_fixed()) {
        bm_.x_sig.push_back(Slot{-1, i.offset});
        continue;
      }
      const std::string& sym = i.terms[0].sym;
      const int r = bm_.vocab.add(sym, x->dims[a]);
      bm_.x_sig.push_back(Slot{r, 0});
      if (sym == nz().t.sym)
        bm_.key_role = r;
      else
        bm_.row_roles.push_back(r);
    }
    if (!env.bind(bm_.x_sig, nz().x_idcs))
      return shape("the scores' indices do not bind the attention's axes");
    auto m_sig = env.sign(nz().m_idcs);
    auto l_sig = env.sign(nz().l_idcs);
    if (!m_sig || !l_sig)
      return shape(fmt::format("{} or {} is stored at indices that are not the rows", nz().m, nz().l));
    bm_.m_sig = *m_sig;
    l_sig_ = *l_sig;
    return std::nullopt;
  }

  // P = e / l read directly by the value pass O += P·v (c0 the value width).
  std::optional<Fail> value_pass() {
    bool indirect = false;
    for (int pp : view_.readers(nz().e)) {
      const Line& li = view_.line(pp);
      if (!li.nest || !is_pointwise(*li.nest) || !view_.definition(li.nest->store->name)) continue;
      const ExprP& val = li.nest->store->value;
      const bool direct =
          is_binary(val, BinOp::Div) && is_get_of(val->args[0], nz().e) && is_get_of(val->args[1], nz().l);
      const std::string& pn = li.nest->store->name;
      for (int vp : view_.readers(pn)) {
        auto acc = accumulation_at(view_, vp);
        if (!acc) continue;
        auto f = product_with(acc->other, pn);
        if (!f) continue;
        if (!direct) {
          indirect = true;
          continue;
        }
        if (bm_.value_pass >= 0) continue;
        RoleEnv env;
        if (!env.bind(bm_.x_sig, li.nest->store->indices)) continue;
        RoleEnv venv;
        if (!venv.bind(bm_.x_sig, f->first->indices)) continue;
        if (!bind_channel(venv, *acc->nest, bm_.vocab, bm_.chan0, "value width")) continue;
        auto o_sig = venv.sign(acc->nest->store->indices);
        auto v_sig = venv.sign(f->second->indices);
        if (!o_sig || !v_sig || has_role(*o_sig, bm_.key_role) || !has_role(*o_sig, bm_.chan0) ||
            !has_role(*v_sig, bm_.key_role) || !has_role(*v_sig, bm_.chan0))
          continue;
        bm_.p_pos = pp;
        bm_.p = pn;
        bm_.value_pass = vp;
        bm_.o = acc->nest->store->name;
        bm_.v = f->second->name;
        bm_.o_sig = *o_sig;
        venv_ = venv;
        v_sig_ = *v_sig;
      }
      // e / l feeding another pointwise node that a reduction reads: a dropout-like step.
      if (direct)
        for (int q : view_.readers(pn)) {
          const Line& ql = view_.line(q);
          if (!ql.nest || !is_pointwise(*ql.nest)) continue;
          for (int vp : view_.readers(ql.nest->store->name))
            if (accumulation_at(view_, vp)) indirect = true;
        }
    }
    if (bm_.value_pass < 0)
      return indirect
                 ? Fail{"value-pass-not-direct",
                        fmt::format("the value pass reads probabilities that are not {} / {} directly (a "
                                    "dropout-like step in between); the fused backward recomputes e / l",
                                    nz().e, nz().l)}
                 : shape(fmt::format("no value pass O += ({} / {})·v reads the normalizer's probabilities",
                                     nz().e, nz().l));
    return std::nullopt;
  }
  RoleEnv venv_;
  Signature v_sig_;

  // A: dP += dO·v — found (true), a decline, or none at all (monostate: no reduction other than
  // the value pass reads v with a gradient of O).
  using ValueGradientStart = std::variant<std::monostate, bool, Fail>;
  ValueGradientStart find_a() {
    for (int pos : view_.readers(bm_.v)) {
      if (pos == bm_.value_pass) continue;
      auto acc = accumulation_at(view_, pos);
      if (!acc) continue;
      auto f = product_with(acc->other, bm_.v);
      if (!f || f->second->name == bm_.o || f->second->name == bm_.p) continue;
      const Node* dout = view_.node(f->second->name);
      const Node* o = view_.node(bm_.o);
      if (!dout || !o || dout->dims != o->dims) continue;
      RoleEnv env;
      if (!env.bind(v_sig_, f->first->indices) || !env.bind(bm_.o_sig, f->second->indices)) continue;
      auto dp_sig = env.sign(acc->nest->store->indices);
      if (!dp_sig || !has_all_roles(*dp_sig, roles_of(bm_.x_sig))) continue;
      if (auto lf = loops_fit(env, *acc->nest, bm_.vocab, pos)) return *lf;
      bm_.a = BoundNest{pos, acc->nest, env};
      bm_.dout = f->second->name;
      bm_.dp = acc->nest->store->name;
      dp_sig_ = *dp_sig;
      return true;
    }
    return std::monostate{};
  }
  Signature l_sig_, dp_sig_, eg_sig_, lg_sig_, ng_sig_, ds_sig_;

  // Binds every read of `node` in `e` to `sig`; false when one does not fit.
  static bool bind_reads(RoleEnv& env, const ExprP& e, const std::string& node, const Signature& sig) {
    std::vector<const Expr*> gets;
    collect_gets(e, gets);
    for (const Expr* g : gets)
      if (g->name == node && !env.bind(sig, g->indices)) return false;
    return true;
  }

  // Matches `pos` as an accumulation whose value reads the nodes given (with their signatures) and
  // whose loops all follow them; returns the bound nest and the target's signature.
  // With `store`, the target is first bound to that signature (a broadcast: the value reads fewer
  // axes than the target has).
  std::optional<std::pair<BoundNest, Signature>> bound(
      int pos, const std::vector<std::pair<std::string, Signature>>& reads,
      const Signature* store = nullptr) {
    auto acc = accumulation_at(view_, pos);
    if (!acc) return std::nullopt;
    RoleEnv env;
    if (store && !env.bind(*store, acc->nest->store->indices)) return std::nullopt;
    for (const auto& [node, sig] : reads)
      if (!bind_reads(env, acc->other, node, sig)) return std::nullopt;
    auto sig = env.sign(acc->nest->store->indices);
    if (!sig) return std::nullopt;
    return std::make_pair(BoundNest{pos, acc->nest, env}, *sig);
  }

  // −e / (l·l) in one of its spellings.
  bool is_l_grad_factor(const ExprP& u) const {
    if (!is_binary(u, BinOp::Div)) return false;
    const ExprP& num = u->args[0];
    const ExprP& den = u->args[1];
    auto minus_one = [](const ExprP& c) { return c && c->kind == ExprKind::Const && c->value == -1.0; };
    const bool neg_e =
        (num->kind == ExprKind::Unary && num->unop() == UnOp::Neg && is_get_of(num->args[0], nz().e)) ||
        (is_binary(num, BinOp::Mul) && ((minus_one(num->args[0]) && is_get_of(num->args[1], nz().e)) ||
                                        (is_get_of(num->args[0], nz().e) && minus_one(num->args[1]))));
    auto two = [](const ExprP& c) { return c && c->kind == ExprKind::Const && c->value == 2.0; };
    const bool l_sq =
        (is_binary(den, BinOp::Mul) && is_get_of(den->args[0], nz().l) && is_get_of(den->args[1], nz().l)) ||
        (is_binary(den, BinOp::Pow) && is_get_of(den->args[0], nz().l) && two(den->args[1]));
    return neg_e && l_sq;
  }

  // C1: eg += dP / l and D: lg += dP·(−e / (l·l)), the only readers of dP.
  std::optional<Fail> dp_readers() {
    if (!zeroed_then(view_, bm_.dp, {bm_.a.pos}))
      return Fail{"gradient-reader", fmt::format("{} is not zeroed once and accumulated only by {}", bm_.dp,
                                                 pos_text(bm_.a.pos))};
    const std::vector<int> rs = outside_readers(view_, bm_.dp);
    for (int r : rs) {
      auto acc = accumulation_at(view_, r);
      if (!acc) continue;
      const ExprP& o = acc->other;
      if (is_binary(o, BinOp::Div) && is_get_of(o->args[0], bm_.dp) && is_get_of(o->args[1], nz().l) &&
          bm_.c1.pos < 0) {
        auto b = bound(r, {{bm_.dp, dp_sig_}, {nz().l, l_sig_}});
        if (!b || !has_all_roles(b->second, roles_of(bm_.x_sig))) continue;
        bm_.c1 = b->first;
        bm_.eg = acc->nest->store->name;
        eg_sig_ = b->second;
        continue;
      }
      if (is_binary(o, BinOp::Mul) && bm_.d.pos < 0) {
        const ExprP& u = is_get_of(o->args[0], bm_.dp) ? o->args[1] : o->args[0];
        if (!is_get_of(o->args[0], bm_.dp) && !is_get_of(o->args[1], bm_.dp)) continue;
        if (!is_l_grad_factor(u)) continue;
        auto b = bound(r, {{bm_.dp, dp_sig_}, {nz().e, bm_.x_sig}, {nz().l, l_sig_}});
        if (!b || !has_all_roles(b->second, roles_of(bm_.m_sig))) continue;
        bm_.d = b->first;
        bm_.lg = acc->nest->store->name;
        lg_sig_ = b->second;
      }
    }
    if (bm_.c1.pos < 0 || bm_.d.pos < 0)
      return shape(fmt::format("{} is not read by eg += {} / {} and lg += {}·(−{} / ({}·{}))", bm_.dp, bm_.dp,
                               nz().l, bm_.dp, nz().e, nz().l, nz().l));
    if (rs.size() != 2)
      return Fail{"gradient-reader",
                  fmt::format("{} has {} readers besides its accumulation; the fused backward "
                              "consumes it, so only eg and lg may read it",
                              bm_.dp, rs.size())};
    for (const BoundNest* n : {&bm_.c1, &bm_.d})
      if (auto f = loops_fit(n->env, *n->nest, bm_.vocab, n->pos)) return *f;
    return std::nullopt;
  }
  // C2: eg += lg (lg's only reader, after D); E: ng += eg·e (eg's only other reader).
  std::optional<Fail> eg_chain() {
    const std::vector<int> lr = outside_readers(view_, bm_.lg);
    if (lr.size() != 1)
      return Fail{"gradient-reader",
                  fmt::format("{} has {} readers; the fused backward consumes it, so only the "
                              "broadcast into {} may read it",
                              bm_.lg, lr.size(), bm_.eg)};
    auto c2acc = accumulation_at(view_, lr[0]);
    auto c2 = c2acc && c2acc->nest->store->name == bm_.eg && is_get_of(c2acc->other, bm_.lg)
                  ? bound(lr[0], {{bm_.lg, lg_sig_}}, &eg_sig_)
                  : std::nullopt;
    if (!c2)
      return shape(fmt::format("{} is not added to {} cell by cell ({})", bm_.lg, bm_.eg, pos_text(lr[0])));
    bm_.c2 = c2->first;
    if (auto f = loops_fit(bm_.c2.env, *bm_.c2.nest, bm_.vocab, bm_.c2.pos)) return *f;
    if (!(bm_.d.pos < bm_.c2.pos))
      return shape(fmt::format("{} reads {} before {} computes it", pos_text(bm_.c2.pos), bm_.lg,
                               pos_text(bm_.d.pos)));
    if (!zeroed_then(view_, bm_.lg, {bm_.d.pos}) || !zeroed_then(view_, bm_.eg, {bm_.c1.pos, bm_.c2.pos}))
      return Fail{"gradient-reader",
                  fmt::format("{} or {} is not zeroed once and accumulated only by the matched nests", bm_.lg,
                              bm_.eg)};
    const std::vector<int> er = outside_readers(view_, bm_.eg);
    if (er.size() != 1)
      return Fail{"gradient-reader", fmt::format("{} has {} readers; the fused backward consumes it, so only "
                                                 "ng += {}·{} may read it",
                                                 bm_.eg, er.size(), bm_.eg, nz().e)};
    auto acc = accumulation_at(view_, er[0]);
    auto f = acc ? product_with(acc->other, bm_.eg) : std::nullopt;
    if (!f || f->second->name != nz().e)
      return shape(fmt::format("{} is not read as ng += {}·{}", bm_.eg, bm_.eg, nz().e));
    auto e = bound(er[0], {{bm_.eg, eg_sig_}, {nz().e, bm_.x_sig}});
    if (!e || !has_all_roles(e->second, roles_of(bm_.x_sig)))
      return shape(fmt::format("{} does not follow the scores' axes", pos_text(er[0])));
    bm_.e = e->first;
    bm_.ng = acc->nest->store->name;
    ng_sig_ = e->second;
    if (auto lf = loops_fit(bm_.e.env, *bm_.e.nest, bm_.vocab, bm_.e.pos)) return *lf;
    if (!(bm_.c1.pos < bm_.e.pos && bm_.c2.pos < bm_.e.pos))
      return shape(fmt::format("{} reads {} before it is complete", pos_text(bm_.e.pos), bm_.eg));
    if (!zeroed_then(view_, bm_.ng, {bm_.e.pos}))
      return Fail{"gradient-reader", fmt::format("{} is not zeroed once and accumulated only by {}", bm_.ng,
                                                 pos_text(bm_.e.pos))};
    return std::nullopt;
  }

  // A reader of a chain node reducing it into a node of the row axes: the max's composed gradient.
  std::optional<Fail> max_gradient(const std::string& node, const Signature& sig) {
    for (int r : outside_readers(view_, node)) {
      auto b = bound(r, {{node, sig}});
      if (b && roles_of(b->second) == roles_of(bm_.m_sig))
        return Fail{
            "composed-max-gradient",
            fmt::format("{} reduces {} over the keys into {}: the max's gradient is composed (the fused "
                        "backward needs the max taken without a gradient)",
                        pos_text(r), node, view_.line(r).nest->store->name)};
    }
    return std::nullopt;
  }

  // From ng along unique readers accumulating onto zeroed nodes of x's roles, to dS (two readers).
  std::optional<Fail> gradient_chain() {
    std::string cur = bm_.ng;
    Signature sig = ng_sig_;
    for (int depth = 0; depth <= 16; ++depth) {
      if (auto f = max_gradient(cur, sig)) return *f;
      const std::vector<int> rs = outside_readers(view_, cur);
      if (rs.size() == 2) {
        bm_.ds = cur;
        ds_sig_ = sig;
        return std::nullopt;
      }
      if (rs.size() != 1)
        return Fail{"gradient-reader",
                    fmt::format("{} has {} readers; the score gradient's chain continues through "
                                "exactly one reader to the two contractions against q and k",
                                cur, rs.size())};
      auto acc = accumulation_at(view_, rs[0]);
      if (!acc) return shape(fmt::format("{} reads {} and is not an accumulation", pos_text(rs[0]), cur));
      auto b = bound(rs[0], {{cur, sig}});
      if (!b || !has_all_roles(b->second, roles_of(bm_.x_sig)))
        return shape(fmt::format("{} accumulates {} at cells that do not follow the scores' axes",
                                 pos_text(rs[0]), cur));
      if (auto lf = loops_fit(b->first.env, *b->first.nest, bm_.vocab, rs[0])) return *lf;
      const std::string node = acc->nest->store->name;
      if (!zeroed_then(view_, node, {rs[0]}))
        return Fail{"gradient-reader",
                    fmt::format("{} is not zeroed once and accumulated only by {}", node, pos_text(rs[0]))};
      bm_.links.push_back(ChainLink{rs[0], acc->nest, node, cur, b->first.env});
      cur = node;
      sig = b->second;
    }
    return shape(fmt::format("the chain from {} is longer than 16 links", bm_.ng));
  }

  // K: dQ += dS·k (rows and c1), L: dK += q·dS (key and c1), {q, k} the score contraction's factors.
  std::optional<Fail> contractions() {
    auto ch = find_score_chain(view_, nz().x);
    if (auto* why = std::get_if<std::string>(&ch)) return shape(*why);
    bm_.scores = std::get<ScoreChain>(ch);
    const ExprP prod = reduction_of(*bm_.scores.score_nest)->other;
    const std::set<std::string> factors = {prod->args[0]->name, prod->args[1]->name};
    std::set<std::string> seen;
    for (int r : outside_readers(view_, bm_.ds)) {
      auto acc = accumulation_at(view_, r);
      auto f = acc ? product_with(acc->other, bm_.ds) : std::nullopt;
      if (!f)
        return shape(
            fmt::format("{} reads {} and is not a contraction of it with another read", pos_text(r), bm_.ds));
      RoleEnv env;
      if (!env.bind(ds_sig_, f->first->indices) ||
          !bind_channel(env, *acc->nest, bm_.vocab, bm_.chan1, "head width"))
        return shape(fmt::format("{} does not contract {} over one head axis", pos_text(r), bm_.ds));
      auto t = env.sign(acc->nest->store->indices);
      auto w = env.sign(f->second->indices);
      if (!t || !w) return shape(fmt::format("{} indexes its operands at non-plain indices", pos_text(r)));
      if (auto lf = loops_fit(env, *acc->nest, bm_.vocab, r)) return *lf;
      bool all_rows = true;
      for (int role : bm_.row_roles) all_rows = all_rows && has_role(*t, role);
      const bool dq =
          all_rows && has_role(*t, bm_.chan1) && !has_role(*t, bm_.key_role) && has_role(*w, bm_.key_role);
      const bool dk =
          !all_rows && has_role(*t, bm_.key_role) && has_role(*t, bm_.chan1) && !has_role(*w, bm_.key_role);
      if (!factors.count(f->second->name) || (!dq && !dk))
        return shape(
            fmt::format("{} contracts {} with {}, not the score contraction's factors {} into a gradient of "
                        "one of them",
                        pos_text(r), bm_.ds, f->second->name, fmt::join(factors, " and ")));
      seen.insert(f->second->name);
      if (dq) {
        bm_.k = BoundNest{r, acc->nest, env};
        bm_.dq = acc->nest->store->name;
        bm_.k_node = f->second->name;
      } else {
        bm_.l = BoundNest{r, acc->nest, env};
        bm_.dk = acc->nest->store->name;
        bm_.dk_sig = *t;
        bm_.q_node = f->second->name;
      }
    }
    if (bm_.k.pos < 0 || bm_.l.pos < 0 || seen.size() != 2)
      return shape(
          fmt::format("{} is not read by one contraction into q's gradient and one into k's", bm_.ds));
    return std::nullopt;
  }

  // B: dV += P·dO, P's only reader besides the value pass, over dK's axes but the head.
  std::optional<Fail> value_gradient() {
    std::vector<int> rs;
    for (int r : outside_readers(view_, bm_.p))
      if (r != bm_.value_pass) rs.push_back(r);
    if (rs.size() != 1)
      return Fail{"gradient-reader",
                  fmt::format("{} has {} readers besides the value pass; the fused backward "
                              "needs exactly one, dV += {}·dO",
                              bm_.p, rs.size(), bm_.p)};
    auto acc = accumulation_at(view_, rs[0]);
    auto f = acc ? product_with(acc->other, bm_.p) : std::nullopt;
    if (!f || f->second->name != bm_.dout)
      return shape(fmt::format("{} is not dV += {}·{}", pos_text(rs[0]), bm_.p, bm_.dout));
    RoleEnv env;
    if (!env.bind(bm_.x_sig, f->first->indices) || !env.bind(bm_.o_sig, f->second->indices))
      return shape(fmt::format("{} reads {} or {} at other cells", pos_text(rs[0]), bm_.p, bm_.dout));
    auto t = env.sign(acc->nest->store->indices);
    if (auto lf = loops_fit(env, *acc->nest, bm_.vocab, rs[0])) return *lf;
    auto without = [](std::vector<int> roles, int drop) {
      roles.erase(std::remove(roles.begin(), roles.end(), drop), roles.end());
      return roles;
    };
    if (!t || !has_role(*t, bm_.chan0) ||
        without(roles_of(*t), bm_.chan0) != without(roles_of(bm_.dk_sig), bm_.chan1))
      return shape(fmt::format("{} does not accumulate over the axes of k's gradient", pos_text(rs[0])));
    bm_.b = BoundNest{rs[0], acc->nest, env};
    bm_.dv = acc->nest->store->name;
    bm_.dv_sig = *t;
    return std::nullopt;
  }

  // The contract: precisions, requested intermediates, inputs final, gradients untouched, opaque code.
  std::optional<Fail> contract() {
    const Node* x = view_.node(nz().x);
    const Node* pn = view_.node(bm_.p);
    if (!pn || pn->prec != x->prec)
      return Fail{"mixed-precision", fmt::format("{} is {} but the scores {} are {}", bm_.p,
                                                 pn ? prec_name(pn->prec) : "?", nz().x, prec_name(x->prec))};
    const Prec gp = view_.node(bm_.dp)->prec;
    for (const std::string& n : intermediates()) {
      const Node* nd = view_.node(n);
      if (!nd || !is_float(nd->prec) || nd->prec != gp)
        return Fail{"mixed-precision",
                    fmt::format("{} is {}; the backward's intermediates must all be at {}'s precision "
                                "({})",
                                n, nd ? prec_name(nd->prec) : "?", bm_.dp, prec_name(gp))};
      if (nd->mode == MemMode::Requested || nd->is_input || nd->is_output)
        return Fail{"requested-intermediate",
                    fmt::format("{} is {}: the fused backward would not compute it", n,
                                nd->mode == MemMode::Requested ? "requested"
                                : nd->is_input                 ? "an input"
                                                               : "an output")};
    }
    for (const std::string& n : {bm_.o, bm_.v, bm_.dout, bm_.dq, bm_.dk, bm_.dv})
      if (!is_float(view_.node(n)->prec))
        return Fail{"mixed-precision", fmt::format("{} is not floating point", n)};
    bm_.sp = state_prec(x->prec) == Prec::F64 || state_prec(gp) == Prec::F64 ? Prec::F64 : Prec::F32;

    const std::set<std::string> consumed_nodes = intermediates_set();
    const std::set<std::string> read = inputs();
    // A link reads its predecessor and nodes the backward does not consume: the fused nests
    // compute the predecessor per pair and nothing else of the chain.
    for (const ChainLink& lk : bm_.links) {
      std::vector<const Expr*> gets;
      collect_gets(lk.nest->store->value, gets);
      for (const Expr* g : gets) {
        const bool own = g->name == lk.node || g->name == lk.prev;
        if (!own && (consumed_nodes.count(g->name) || g->name == bm_.dq || g->name == bm_.dk ||
                     g->name == bm_.dv))
          return shape(fmt::format("{} reads {}, another gradient of the chain, besides {}", pos_text(lk.pos),
                                   g->name, lk.prev));
      }
    }
    const std::vector<int> nests = matched();
    const int emit = *std::min_element(nests.begin(), nests.end());
    const int last = *std::max_element(nests.begin(), nests.end());
    for (const std::string& n : intermediates())
      if (auto z = zero_of(n)) bm_.zeros.push_back(*z);
    const std::set<int> consumed = consumed_positions();
    // Code that is not a nest inside the span touching a matched node.
    std::set<std::string> matched_nodes = consumed_nodes;
    matched_nodes.insert(read.begin(), read.end());
    for (const std::string& n : {bm_.dq, bm_.dk, bm_.dv}) matched_nodes.insert(n);
    for (int p = emit; p <= last; ++p) {
      const Line& li = view_.line(p);
      if (li.nest || consumed.count(p) || li.stmt->kind == StmtKind::Zero ||
          li.stmt->kind == StmtKind::Comment || li.stmt->kind == StmtKind::Noop)
        continue;
      for (const auto* set : {&li.reads, &li.writes})
        for (const std::string& n : *set)
          if (matched_nodes.count(n))
            return Fail{
                "opaque-in-span",
                fmt::format("{} (not a loop nest) touches {} inside the backward's span (statements {}..{})",
                            pos_text(p), n, emit + 1, last + 1)};
    }
    // Every node the fused nests read is final at the emit position and not consumed.
    for (const std::string& n : read) {
      for (int w : view_.writers(n))
        if (w >= emit && !consumed.count(w))
          return Fail{
              "input-written-in-span",
              fmt::format("{} writes {}, which the fused backward reads, at or after the emit position ({})",
                          pos_text(w), n, pos_text(emit))};
      if (consumed_nodes.count(n))
        return Fail{"input-written-in-span",
                    fmt::format("the fused backward would read {}, a node it consumes", n)};
    }
    // The gradients: nothing else reads or writes them between the emit position and their contraction.
    for (const auto& [node, pos] : {std::pair{bm_.dq, bm_.k.pos}, {bm_.dk, bm_.l.pos}, {bm_.dv, bm_.b.pos}}) {
      if (consumed_nodes.count(node) || node == nz().x || read.count(node))
        return Fail{"gradient-output-touched",
                    fmt::format("the gradient {} is also a node the backward reads", node)};
      for (int w : view_.readers(node))
        if (w >= emit && w < pos)
          return Fail{"gradient-output-touched",
                      fmt::format("{} reads {} between the emit position ({}) and its contraction ({})",
                                  pos_text(w), node, pos_text(emit), pos_text(pos))};
      for (int w : view_.writers(node))
        if (w != pos && w >= emit && w <= pos)
          return Fail{"gradient-output-touched",
                      fmt::format("{} writes {} between the emit position ({}) and its contraction ({})",
                                  pos_text(w), node, pos_text(emit), pos_text(pos))};
    }
    return std::nullopt;
  }

 public:
  std::vector<std::string> intermediates() const {
    std::vector<std::string> out = {bm_.dp, bm_.eg, bm_.lg, bm_.ng};
    for (const auto& l : bm_.links) out.push_back(l.node);
    return out;
  }
  std::set<std::string> intermediates_set() const {
    auto v = intermediates();
    return {v.begin(), v.end()};
  }
  std::vector<int> matched() const {
    std::vector<int> out = {bm_.a.pos, bm_.c1.pos, bm_.d.pos, bm_.c2.pos,
                            bm_.e.pos, bm_.k.pos,  bm_.l.pos, bm_.b.pos};
    for (const auto& l : bm_.links) out.push_back(l.pos);
    return out;
  }
  std::optional<int> zero_of(const std::string& node) const {
    const std::vector<int>& ws = view_.writers(node);
    if (!ws.empty() && view_.line(ws[0]).stmt->kind == StmtKind::Zero) return ws[0];
    return std::nullopt;
  }
  std::set<int> consumed_positions() const {
    std::set<int> out;
    for (int p : matched()) out.insert(p);
    for (int p : bm_.zeros) out.insert(p);
    return out;
  }
  // What the emitted nests read: the score chain's leaves and factors, m, l, O, dO, v, the
  // operands of K and L, and the links' other reads.
  std::set<std::string> inputs() const {
    std::set<std::string> recomputed = {bm_.scores.s, nz().n, nz().e, bm_.p};
    for (const Nest* n : bm_.scores.chain_nests) recomputed.insert(n->store->name);
    std::set<std::string> out = {nz().m, nz().l, bm_.o, bm_.dout, bm_.v};
    std::vector<const Expr*> gets;
    collect_gets(bm_.scores.score_nest->store->value, gets);
    for (const Nest* n : bm_.scores.chain_nests) collect_gets(n->store->value, gets);
    for (int pos : {bm_.k.pos, bm_.l.pos}) collect_gets(view_.line(pos).nest->store->value, gets);
    for (const auto& l : bm_.links) collect_gets(l.nest->store->value, gets);
    std::set<std::string> skip = intermediates_set();
    for (const std::string& n : {bm_.dq, bm_.dk, bm_.dv, bm_.ds}) skip.insert(n);
    for (const Expr* g : gets)
      if (!recomputed.count(g->name) && !skip.count(g->name)) out.insert(g->name);
    return out;
  }
};

}  // namespace

std::optional<std::variant<BackwardPlan, Decline>> match_backward(const RoutineView& view,
                                                                  const Normalizer& nz) {
  Matcher m(view, nz);
  auto res = m.run();
  if (!res) return std::nullopt;
  if (auto* f = std::get_if<Fail>(&*res))
    return Decline{"online-softmax",       kFusedBackwardId, 0,          nz.a + 1,
                   view.source_line(nz.a), f->code,          f->sentence, ""};
  auto bm = std::make_shared<BackwardMatch>(std::move(std::get<BackwardMatch>(*res)));
  BackwardPlan plan;
  std::set<int> consumed = m.consumed_positions();
  const std::vector<int> nests = m.matched();
  plan.emit_at = *std::min_element(nests.begin(), nests.end());
  plan.consumed.assign(consumed.begin(), consumed.end());
  plan.consumed_nodes = m.intermediates();
  plan.match = bm;
  return plan;
}

std::optional<Decline> orphan_backward(const RoutineView& view) {
  for (int p = 0; p < view.size(); ++p) {
    const Line& li = view.line(p);
    if (!li.nest) continue;
    auto red = reduction_of(*li.nest);
    if (!red || red->op != BinOp::Add || !is_binary(red->other, BinOp::Mul)) continue;
    for (const ExprP& u : red->other->args) {
      if (!is_binary(u, BinOp::Div) || !is_binary(u->args[1], BinOp::Mul) || !is_get(u->args[1]->args[0]) ||
          !is_get_of(u->args[1]->args[1], u->args[1]->args[0]->name))
        continue;
      const ExprP& num = u->args[0];
      if (num->kind == ExprKind::Unary && num->unop() == UnOp::Neg && is_get(num->args[0]))
        return Decline{
            "online-softmax",
            kFusedBackwardId,
            0,
            p + 1,
            view.source_line(p),
            "no-normalizer",
            fmt::format("{} accumulates a softmax gradient (−{} / ({}·{})) but the routine holds no forward "
                        "normalizer to anchor the fused backward on (a backward compiled alone is left "
                        "composed)",
                        pos_text(p), num->args[0]->name, u->args[1]->args[0]->name,
                        u->args[1]->args[0]->name),
            ""};
    }
  }
  return std::nullopt;
}

}  // namespace fp::osm
