#include "rewrites/online_softmax/fused_backward.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "rewrites/online_softmax/axis_roles.h"
#include "rewrites/online_softmax/score_chain.h"

namespace fp::osm {

// One accumulation of the gradient chain between ng and dS: node = 0 + f(prev).
struct ChainLink {
  int pos = -1;
  const Nest* nest = nullptr;
  std::string node, prev;
  RoleEnv env;
};

// A matched nest with its symbols bound to roles.
struct BoundNest {
  int pos = -1;
  const Nest* nest = nullptr;
  RoleEnv env;
};

// What the match found, in the routine's own terms (fused_backward.h, MATCHES).
struct BackwardMatch {
  Normalizer nz;
  Vocabulary vocab;
  Signature x_sig, m_sig, o_sig, dk_sig, dv_sig;
  int key_role = -1, chan0 = -1, chan1 = -1;
  std::vector<int> row_roles;  // x's roles but the key, in x's axis order
  std::string p, o, v, dout, dp, eg, lg, ng, ds, dq, dk, dv;
  std::string q_node, k_node;  // the score contraction's factors: dK's and dQ's other operands
  int p_pos = -1, value_pass = -1;
  BoundNest a, c1, d, c2, e, k, l, b;
  std::vector<ChainLink> links;
  ScoreChain scores;
  std::vector<int> zeros;  // zero-outs of the intermediates
  Prec sp = Prec::F32;     // the pair's state precision
};

namespace {

struct Fail {
  std::string code, sentence;
};

std::string pos_text(int p) { return fmt::format("statement {}", p + 1); }

bool is_get_of(const ExprP& e, const std::string& node) { return is_get(e) && e->name == node; }

bool is_binary(const ExprP& e, BinOp op) { return e && e->kind == ExprKind::Binary && e->binop() == op; }

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
std::optional<int> zeroed_then(const RoutineView& view, const std::string& node, const std::vector<int>& acc) {
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
      return Fail{"dead-or-partial-loop", fmt::format("loop {} of {} runs zero times", lc.loop->sym, pos_text(pos))};
    case LoopFit::Partial:
      return Fail{"dead-or-partial-loop",
                  fmt::format("loop {} of {} does not run over its whole axis from 0", lc.loop->sym, pos_text(pos))};
    case LoopFit::Unbound:
      return Fail{"backward-shape",
                  fmt::format("loop {} of {} follows none of the attention's axes", lc.loop->sym, pos_text(pos))};
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

bool has_role(const Signature& sig, int role) {
  return std::any_of(sig.begin(), sig.end(), [&](const Slot& s) { return s.role == role; });
}

class Matcher {
 public:
  Matcher(const RoutineView& view, const Normalizer& nz) : view_(view) { bm_.nz = nz; }

  // nullopt: no composed backward hangs off this normalizer (nothing to say).
  std::optional<std::variant<BackwardMatch, Fail>> run() {
    if (auto f = roles()) return *f;
    if (auto f = value_pass()) return *f;
    int a = find_a();
    if (a == -2) return std::nullopt;
    if (a < 0) return fail_;
    for (auto step : {&Matcher::dp_readers, &Matcher::eg_chain, &Matcher::gradient_chain, &Matcher::contractions,
                      &Matcher::value_gradient, &Matcher::contract})
      if (auto f = (this->*step)()) return *f;
    return bm_;
  }

 private:
  const RoutineView& view_;
  BackwardMatch bm_;
  Fail fail_;

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
    if (!env.bind(bm_.x_sig, nz().x_idcs)) return shape("the scores' indices do not bind the attention's axes");
    auto m_sig = env.sign(nz().m_idcs);
    if (!m_sig) return shape(fmt::format("{} is stored at indices that are not the rows", nz().m));
    bm_.m_sig = *m_sig;
    return std::nullopt;
  }

  // P = e / l read directly by the value pass O += P·v (c0 the value width).
  std::optional<Fail> value_pass() {
    bool indirect = false;
    for (int pp : view_.readers(nz().e)) {
      const Line& li = view_.line(pp);
      if (!li.nest || !is_pointwise(*li.nest) || !view_.definition(li.nest->store->name)) continue;
      const ExprP& val = li.nest->store->value;
      const bool direct = is_binary(val, BinOp::Div) && is_get_of(val->args[0], nz().e) &&
                          is_get_of(val->args[1], nz().l);
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
      return indirect ? Fail{"value-pass-not-direct",
                             fmt::format("the value pass reads probabilities that are not {} / {} directly (a "
                                         "dropout-like step in between); the fused backward recomputes e / l",
                                         nz().e, nz().l)}
                      : shape(fmt::format("no value pass O += ({} / {})·v reads the normalizer's probabilities",
                                          nz().e, nz().l));
    return std::nullopt;
  }
  RoleEnv venv_;
  Signature v_sig_;

  // A: dP += dO·v. -2 when no reduction other than the value pass reads v with a gradient of O.
  int find_a() {
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
      if (auto lf = loops_fit(env, *acc->nest, bm_.vocab, pos)) {
        fail_ = *lf;
        return -1;
      }
      bm_.a = BoundNest{pos, acc->nest, env};
      bm_.dout = f->second->name;
      bm_.dp = acc->nest->store->name;
      dp_sig_ = *dp_sig;
      return pos;
    }
    return -2;
  }
  Signature dp_sig_, eg_sig_, lg_sig_, ng_sig_, ds_sig_;

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
  std::optional<std::pair<BoundNest, Signature>> bound(int pos,
                                                       const std::vector<std::pair<std::string, Signature>>& reads,
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
    const bool neg_e = (num->kind == ExprKind::Unary && num->unop() == UnOp::Neg && is_get_of(num->args[0], nz().e)) ||
                       (is_binary(num, BinOp::Mul) && ((minus_one(num->args[0]) && is_get_of(num->args[1], nz().e)) ||
                                                       (is_get_of(num->args[0], nz().e) && minus_one(num->args[1]))));
    auto two = [](const ExprP& c) { return c && c->kind == ExprKind::Const && c->value == 2.0; };
    const bool l_sq = (is_binary(den, BinOp::Mul) && is_get_of(den->args[0], nz().l) && is_get_of(den->args[1], nz().l)) ||
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
      if (is_binary(o, BinOp::Div) && is_get_of(o->args[0], bm_.dp) && is_get_of(o->args[1], nz().l) && bm_.c1.pos < 0) {
        auto b = bound(r, {{bm_.dp, dp_sig_}, {nz().l, l_sig()}});
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
        auto b = bound(r, {{bm_.dp, dp_sig_}, {nz().e, bm_.x_sig}, {nz().l, l_sig()}});
        if (!b || !has_all_roles(b->second, roles_of(bm_.m_sig))) continue;
        bm_.d = b->first;
        bm_.lg = acc->nest->store->name;
        lg_sig_ = b->second;
      }
    }
    if (bm_.c1.pos < 0 || bm_.d.pos < 0)
      return shape(fmt::format("{} is not read by eg += {} / {} and lg += {}·(−{} / ({}·{}))", bm_.dp, bm_.dp, nz().l,
                               bm_.dp, nz().e, nz().l, nz().l));
    if (rs.size() != 2)
      return Fail{"gradient-reader", fmt::format("{} has {} readers besides its accumulation; the fused backward "
                                                 "consumes it, so only eg and lg may read it",
                                                 bm_.dp, rs.size())};
    for (const BoundNest* n : {&bm_.c1, &bm_.d})
      if (auto f = loops_fit(n->env, *n->nest, bm_.vocab, n->pos)) return *f;
    return std::nullopt;
  }
  Signature l_sig() const {
    RoleEnv env;
    env.bind(bm_.x_sig, nz().x_idcs);
    return *env.sign(nz().l_idcs);
  }

  // C2: eg += lg (lg's only reader, after D); E: ng += eg·e (eg's only other reader).
  std::optional<Fail> eg_chain() {
    const std::vector<int> lr = outside_readers(view_, bm_.lg);
    if (lr.size() != 1)
      return Fail{"gradient-reader", fmt::format("{} has {} readers; the fused backward consumes it, so only the "
                                                 "broadcast into {} may read it",
                                                 bm_.lg, lr.size(), bm_.eg)};
    auto c2acc = accumulation_at(view_, lr[0]);
    auto c2 = c2acc && c2acc->nest->store->name == bm_.eg && is_get_of(c2acc->other, bm_.lg)
                  ? bound(lr[0], {{bm_.lg, lg_sig_}}, &eg_sig_)
                  : std::nullopt;
    if (!c2) return shape(fmt::format("{} is not added to {} cell by cell ({})", bm_.lg, bm_.eg, pos_text(lr[0])));
    bm_.c2 = c2->first;
    if (auto f = loops_fit(bm_.c2.env, *bm_.c2.nest, bm_.vocab, bm_.c2.pos)) return *f;
    if (!(bm_.d.pos < bm_.c2.pos)) return shape(fmt::format("{} reads {} before {} computes it", pos_text(bm_.c2.pos), bm_.lg, pos_text(bm_.d.pos)));
    if (!zeroed_then(view_, bm_.lg, {bm_.d.pos}) || !zeroed_then(view_, bm_.eg, {bm_.c1.pos, bm_.c2.pos}))
      return Fail{"gradient-reader",
                  fmt::format("{} or {} is not zeroed once and accumulated only by the matched nests", bm_.lg, bm_.eg)};
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
    if (!e || !has_all_roles(e->second, roles_of(bm_.x_sig))) return shape(fmt::format("{} does not follow the scores' axes", pos_text(er[0])));
    bm_.e = e->first;
    bm_.ng = acc->nest->store->name;
    ng_sig_ = e->second;
    if (auto lf = loops_fit(bm_.e.env, *bm_.e.nest, bm_.vocab, bm_.e.pos)) return *lf;
    if (!(bm_.c1.pos < bm_.e.pos && bm_.c2.pos < bm_.e.pos))
      return shape(fmt::format("{} reads {} before it is complete", pos_text(bm_.e.pos), bm_.eg));
    if (!zeroed_then(view_, bm_.ng, {bm_.e.pos}))
      return Fail{"gradient-reader", fmt::format("{} is not zeroed once and accumulated only by {}", bm_.ng, pos_text(bm_.e.pos))};
    return std::nullopt;
  }

  // A reader of a chain node reducing it into a node of the row axes: the max's composed gradient.
  std::optional<Fail> max_gradient(const std::string& node, const Signature& sig) {
    for (int r : outside_readers(view_, node)) {
      auto b = bound(r, {{node, sig}});
      if (b && roles_of(b->second) == roles_of(bm_.m_sig))
        return Fail{"composed-max-gradient",
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
        return Fail{"gradient-reader", fmt::format("{} has {} readers; the score gradient's chain continues through "
                                                   "exactly one reader to the two contractions against q and k",
                                                   cur, rs.size())};
      auto acc = accumulation_at(view_, rs[0]);
      if (!acc) return shape(fmt::format("{} reads {} and is not an accumulation", pos_text(rs[0]), cur));
      auto b = bound(rs[0], {{cur, sig}});
      if (!b || !has_all_roles(b->second, roles_of(bm_.x_sig)))
        return shape(fmt::format("{} accumulates {} at cells that do not follow the scores' axes", pos_text(rs[0]), cur));
      if (auto lf = loops_fit(b->first.env, *b->first.nest, bm_.vocab, rs[0])) return *lf;
      const std::string node = acc->nest->store->name;
      if (!zeroed_then(view_, node, {rs[0]}))
        return Fail{"gradient-reader", fmt::format("{} is not zeroed once and accumulated only by {}", node, pos_text(rs[0]))};
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
      if (!f) return shape(fmt::format("{} reads {} and is not a contraction of it with another read", pos_text(r), bm_.ds));
      RoleEnv env;
      if (!env.bind(ds_sig_, f->first->indices) || !bind_channel(env, *acc->nest, bm_.vocab, bm_.chan1, "head width"))
        return shape(fmt::format("{} does not contract {} over one head axis", pos_text(r), bm_.ds));
      auto t = env.sign(acc->nest->store->indices);
      auto w = env.sign(f->second->indices);
      if (!t || !w) return shape(fmt::format("{} indexes its operands at non-plain indices", pos_text(r)));
      if (auto lf = loops_fit(env, *acc->nest, bm_.vocab, r)) return *lf;
      bool all_rows = true;
      for (int role : bm_.row_roles) all_rows = all_rows && has_role(*t, role);
      const bool dq = all_rows && has_role(*t, bm_.chan1) && !has_role(*t, bm_.key_role) && has_role(*w, bm_.key_role);
      const bool dk = !all_rows && has_role(*t, bm_.key_role) && has_role(*t, bm_.chan1) && !has_role(*w, bm_.key_role);
      if (!factors.count(f->second->name) || (!dq && !dk))
        return shape(fmt::format("{} contracts {} with {}, not the score contraction's factors {} into a gradient of "
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
      return shape(fmt::format("{} is not read by one contraction into q's gradient and one into k's", bm_.ds));
    return std::nullopt;
  }

  // B: dV += P·dO, P's only reader besides the value pass, over dK's axes but the head.
  std::optional<Fail> value_gradient() {
    std::vector<int> rs;
    for (int r : outside_readers(view_, bm_.p))
      if (r != bm_.value_pass) rs.push_back(r);
    if (rs.size() != 1)
      return Fail{"gradient-reader", fmt::format("{} has {} readers besides the value pass; the fused backward "
                                                 "needs exactly one, dV += {}·dO",
                                                 bm_.p, rs.size(), bm_.p)};
    auto acc = accumulation_at(view_, rs[0]);
    auto f = acc ? product_with(acc->other, bm_.p) : std::nullopt;
    if (!f || f->second->name != bm_.dout) return shape(fmt::format("{} is not dV += {}·{}", pos_text(rs[0]), bm_.p, bm_.dout));
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
      return Fail{"mixed-precision", fmt::format("{} is {} but the scores {} are {}", bm_.p, pn ? prec_name(pn->prec) : "?",
                                                 nz().x, prec_name(x->prec))};
    const Prec gp = view_.node(bm_.dp)->prec;
    for (const std::string& n : intermediates()) {
      const Node* nd = view_.node(n);
      if (!nd || !is_float(nd->prec) || nd->prec != gp)
        return Fail{"mixed-precision", fmt::format("{} is {}; the backward's intermediates must all be at {}'s precision "
                                                   "({})",
                                                   n, nd ? prec_name(nd->prec) : "?", bm_.dp, prec_name(gp))};
      if (nd->mode == MemMode::Requested || nd->is_input || nd->is_output)
        return Fail{"requested-intermediate",
                    fmt::format("{} is {}: the fused backward would not compute it", n,
                                nd->mode == MemMode::Requested ? "requested" : nd->is_input ? "an input" : "an output")};
    }
    for (const std::string& n : {bm_.o, bm_.v, bm_.dout, bm_.dq, bm_.dk, bm_.dv})
      if (!is_float(view_.node(n)->prec)) return Fail{"mixed-precision", fmt::format("{} is not floating point", n)};
    bm_.sp = state_prec(x->prec) == Prec::F64 || state_prec(gp) == Prec::F64 ? Prec::F64 : Prec::F32;

    // A link reads its predecessor and nodes the backward does not consume: the fused nests
    // compute the predecessor per pair and nothing else of the chain.
    for (const ChainLink& lk : bm_.links) {
      std::vector<const Expr*> gets;
      collect_gets(lk.nest->store->value, gets);
      for (const Expr* g : gets) {
        const bool own = g->name == lk.node || g->name == lk.prev;
        if (!own && (intermediates_set().count(g->name) || g->name == bm_.dq || g->name == bm_.dk || g->name == bm_.dv))
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
    std::set<std::string> matched_nodes = intermediates_set();
    for (const std::string& n : inputs()) matched_nodes.insert(n);
    for (const std::string& n : {bm_.dq, bm_.dk, bm_.dv}) matched_nodes.insert(n);
    for (int p = emit; p <= last; ++p) {
      const Line& li = view_.line(p);
      if (li.nest || consumed.count(p) || li.stmt->kind == StmtKind::Zero || li.stmt->kind == StmtKind::Comment ||
          li.stmt->kind == StmtKind::Noop)
        continue;
      for (const auto* set : {&li.reads, &li.writes})
        for (const std::string& n : *set)
          if (matched_nodes.count(n))
            return Fail{"opaque-in-span",
                        fmt::format("{} (not a loop nest) touches {} inside the backward's span (statements {}..{})",
                                    pos_text(p), n, emit + 1, last + 1)};
    }
    // Every node the fused nests read is final at the emit position and not consumed.
    for (const std::string& n : inputs()) {
      for (int w : view_.writers(n))
        if (w >= emit && !consumed.count(w))
          return Fail{"input-written-in-span",
                      fmt::format("{} writes {}, which the fused backward reads, at or after the emit position ({})",
                                  pos_text(w), n, pos_text(emit))};
      if (intermediates_set().count(n))
        return Fail{"input-written-in-span", fmt::format("the fused backward would read {}, a node it consumes", n)};
    }
    // The gradients: nothing else reads or writes them between the emit position and their contraction.
    for (const auto& [node, pos] : {std::pair{bm_.dq, bm_.k.pos}, {bm_.dk, bm_.l.pos}, {bm_.dv, bm_.b.pos}}) {
      if (intermediates_set().count(node) || node == nz().x || inputs().count(node))
        return Fail{"gradient-output-touched", fmt::format("the gradient {} is also a node the backward reads", node)};
      for (int w : view_.readers(node))
        if (w >= emit && w < pos)
          return Fail{"gradient-output-touched",
                      fmt::format("{} reads {} between the emit position ({}) and its contraction ({})", pos_text(w),
                                  node, pos_text(emit), pos_text(pos))};
      for (int w : view_.writers(node))
        if (w != pos && w >= emit && w <= pos)
          return Fail{"gradient-output-touched",
                      fmt::format("{} writes {} between the emit position ({}) and its contraction ({})", pos_text(w),
                                  node, pos_text(emit), pos_text(pos))};
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
    std::vector<int> out = {bm_.a.pos, bm_.c1.pos, bm_.d.pos, bm_.c2.pos, bm_.e.pos, bm_.k.pos, bm_.l.pos, bm_.b.pos};
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

std::optional<std::variant<BackwardPlan, Decline>> match_backward(const RoutineView& view, const Normalizer& nz) {
  Matcher m(view, nz);
  auto res = m.run();
  if (!res) return std::nullopt;
  if (auto* f = std::get_if<Fail>(&*res))
    return Decline{"online-softmax", kFusedBackwardId, 0, nz.a + 1, view.source_line(nz.a), f->code, f->sentence};
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
        return Decline{"online-softmax", kFusedBackwardId, 0, p + 1, view.source_line(p), "no-normalizer",
                       fmt::format("{} accumulates a softmax gradient (−{} / ({}·{})) but the routine holds no forward "
                                   "normalizer to anchor the fused backward on (a backward compiled alone is left "
                                   "composed)",
                                   pos_text(p), num->args[0]->name, u->args[1]->args[0]->name,
                                   u->args[1]->args[0]->name)};
    }
  }
  return std::nullopt;
}

// ---- emission ----------------------------------------------------------------------------------

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
        blocked_ = true;
      } else {
        out.stmts.push_back(gradient_nest(g, outer, with_ds));
      }
    };
    nest(bm_.k, nullptr, bm_.chan1, true, "dq");
    nest(bm_.l, &bm_.dk_sig, bm_.chan1, true, "dk");
    nest(bm_.b, &bm_.dv_sig, bm_.chan0, false, "dv");
    return out;
  }
  bool blocked() const { return blocked_; }
  const std::string& d_node() const { return d_node_; }

 private:
  const BackwardMatch& bm_;
  const RoutineView& view_;
  NameMinter& names_;
  std::vector<std::string> role_syms_;
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
    ExprP term = binary(BinOp::Mul, get(bm_.dout, at(bm_.o_sig), dout->prec), get(bm_.o, at(bm_.o_sig), o->prec), bm_.sp);
    body.push_back(loop(bm_.chan0, {set_local(acc, binary(BinOp::Add, get_local(acc, bm_.sp), term, bm_.sp))}));
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
      out.push_back(set_local(local, transplant(def.store->value, x_cell_map(def), [&](const Expr& g) -> ExprP {
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
        ds, binary(BinOp::Mul, p, binary(BinOp::Sub, dpr, get(d_node_, at(bm_.m_sig), bm_.sp), bm_.sp), bm_.sp)));
    for (const ChainLink& lk : bm_.links) {
      const Node* nd = view_.node(lk.node);
      out.push_back(set_local(ds, transplant(lk.nest->store->value, sym_map(lk.env), [&](const Expr& g) -> ExprP {
                                if (g.name == lk.node) return constant(0.0, nd->prec);
                                if (g.name == lk.prev) return dsr;
                                return nullptr;
                              })));
    }
    return dsr;
  }

  bool blocked_ = false;

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
    auto over = [&](std::int64_t count, std::vector<StmtP> body) { return for_loop(j, 0, count - 1, std::move(body)); };
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
        st.push_back(over(count, {set(tp, tix, transplant(def.store->value, x_cell_map(def), [&](const Expr& e) -> ExprP {
                                        return e.name == order[i - 1] ? cell(tp, xp) : nullptr;
                                      }))}));
      }
      if (with_ds) {
        // dp := 0 + Σ_c0 A's product; ds := p·(dp − D), then each link 0 + f(ds).
        st.push_back(over(count, {set(tdp, tix, constant(0.0, dpp))}));
        ExprP dp_value = transplant(bm_.a.nest->store->value, sym_map(bm_.a.env), [&](const Expr& e) -> ExprP {
          return e.name == bm_.dp ? cell(tdp, dpp) : nullptr;
        });
        dp_value = from_rows(dp_value, role_syms_[static_cast<std::size_t>(bm_.chan0)],
                             bm_.vocab.extents[static_cast<std::size_t>(bm_.chan0)]);
        st.push_back(over(count, {loop(bm_.chan0, {set(tdp, tix, dp_value)})}));
        st.push_back(over(count, {set(tds, tix, binary(BinOp::Mul, cell(tp, xp),
                                                        binary(BinOp::Sub, cell(tdp, dpp), get(d_node_, at(bm_.m_sig), bm_.sp), bm_.sp),
                                                        bm_.sp))}));
        for (const ChainLink& lk : bm_.links) {
          const Node* nd = view_.node(lk.node);
          st.push_back(over(count, {set(tds, tix, transplant(lk.nest->store->value, sym_map(lk.env), [&](const Expr& e) -> ExprP {
                                          if (e.name == lk.node) return constant(0.0, nd->prec);
                                          if (e.name == lk.prev) return cell(tds, bm_.sp);
                                          return nullptr;
                                        }))}));
        }
      }
      // The gradient's row, in its tile: over its channel, each cell accumulating the block's pairs
      // in order.
      const std::string replaced = with_ds ? bm_.ds : bm_.p;
      ExprP scalar = with_ds ? cell(tds, bm_.sp) : cell(tp, xp);
      st.push_back(loop(channel, {over(count, {set(tg, gix, transplant(g.nest->store->value, sym_map(g.env), [&](const Expr& e) -> ExprP {
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

  // One gradient nest: the outer loops, the pair, the contraction over its channel.
  StmtP gradient_nest(const BoundNest& g, const std::vector<int>& outer, bool with_ds) {
    std::vector<StmtP> body;
    ExprP scalar = pair(body, with_ds);
    const std::string replaced = with_ds ? bm_.ds : bm_.p;
    const int channel = with_ds ? bm_.chan1 : bm_.chan0;
    body.push_back(loop(channel, {set(g.nest->store->name, at(*g.env.sign(g.nest->store->indices)),
                                      transplant(g.nest->store->value, sym_map(g.env), [&](const Expr& e) -> ExprP {
                                        return e.name == replaced ? scalar : nullptr;
                                      }))}));
    return loops(outer, std::move(body));
  }
};

}  // namespace

BackwardEmission emit_backward(const BackwardPlan& plan, const RoutineView& view, NameMinter& names,
                               bool allow_blocks) {
  Emitter em(*plan.match, view, names);
  BackwardEmission out = em.emit(allow_blocks);
  out.blocked = em.blocked();
  return out;
}

Application backward_application(const BackwardPlan& plan, const RoutineView& view, const BackwardEmission& em) {
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
  app.matched = {{"x", bm.nz.x}, {"p", bm.p},   {"o", bm.o},   {"v", bm.v},   {"dO", bm.dout}, {"dP", bm.dp},
                 {"dS", bm.ds},  {"q", bm.q_node}, {"k", bm.k_node}, {"dQ", bm.dq}, {"dK", bm.dk}, {"dV", bm.dv}};
  app.emitted = fmt::format(
      "the row dot D = Σ {}·{} into {}, and three nests recomputing p, dp and ds per (query, key) pair {}: over "
      "the query rows into {}, over the keys into {} and {}; {} intermediate{} and {} statement{} consumed",
      bm.dout, bm.o, em.nodes[0].name,
      em.blocked ? fmt::format("in blocks of up to {} over the pair's other axis, in tiles", kBackwardBlock)
                 : "in scope locals",
      bm.dq, bm.dk, bm.dv, plan.consumed_nodes.size(),
      plan.consumed_nodes.size() == 1 ? "" : "s", plan.consumed.size(), plan.consumed.size() == 1 ? "" : "s");
  Obligation dv;
  dv.kind = ObligationKind::Exact;
  dv.claim = "backward-dv";
  dv.description = fmt::format("{} receives the composed products {}·{} in the same order, p recomputed bit for bit",
                               bm.dv, bm.p, bm.dout);
  dv.covers = {Cover{bm.dv, bm.dv}};
  app.obligations.push_back(dv);
  for (const auto& [claim, node] : {std::pair{"backward-dq", bm.dq}, {"backward-dk", bm.dk}}) {
    Obligation ob;
    ob.kind = ObligationKind::Bounded;
    ob.claim = claim;
    ob.description = fmt::format("{} is the composed gradient within rounding: ds = p·(dp − D) reassociates (dP / l + "
                                 "lg)·e, D = Σ dO·O; the per-cell order over the pairs is the composed one",
                                 node);
    ob.covers = {Cover{node, node}};
    app.obligations.push_back(ob);
  }
  return app;
}

}  // namespace fp::osm
