#include "rewrites/online_softmax/normalizer_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <variant>

#include "core/ir_visit.h"
#include "core/numerics.h"
#include "core/text_printer.h"
#include "rewrites/online_softmax/axis_roles.h"

namespace fp::osm {

namespace {

struct Fail {
  std::string code;
  std::string sentence;
};

// What the anchor (the max reduction) fixes for every candidate chain.
struct Anchor {
  int pos = -1;
  const Nest* nest = nullptr;
  const Node* m = nullptr;
  const Node* x = nullptr;
  Prec max_prec = Prec::F32;
  Vocabulary vocab;
  Signature m_sig, x_sig;
  std::vector<int> row_roles;
  int reduced_role = -1;
  std::vector<std::string> role_syms;  // per role, the max nest's symbol
  std::vector<NestLoop> rows;
  NestLoop t;
  std::vector<Index> m_idcs, x_idcs;
};

std::string range_text(const NestLoop& l) {
  return fmt::format("{}..{}", l.from, l.to);
}

// The sentence for a loop that does not fit, naming the nest by the node it stores.
std::optional<Fail> loop_failure(const LoopCheck& lc, const Vocabulary& vocab, const RoleEnv& env,
                                 const std::string& what) {
  switch (lc.fit) {
    case LoopFit::Ok:
      return std::nullopt;
    case LoopFit::Dead:
      return Fail{"dead-loop",
                  fmt::format("loop {} of {} runs zero times ({}); the match needs every loop live",
                              lc.loop->sym, what, range_text(*lc.loop))};
    case LoopFit::Unbound:
      return Fail{
          "index-mismatch",
          fmt::format("loop {} of {} indexes no axis the max reduction relates it to", lc.loop->sym, what)};
    case LoopFit::Partial: {
      std::int64_t ext = vocab.extents[static_cast<std::size_t>(*env.role_of(lc.loop->sym))];
      return Fail{
          "partial-loop",
          fmt::format("loop {} of {} covers {}, not the full extent 0..{}; the match needs full-extent "
                      "loops starting at 0",
                      lc.loop->sym, what, range_text(*lc.loop), ext - 1)};
    }
  }
  return std::nullopt;
}

std::optional<Fail> dead_loop(const Nest& n, const std::string& what) {
  for (const auto& l : n.loops)
    if (l.dead())
      return Fail{"dead-loop",
                  fmt::format("loop {} of {} runs zero times ({}); the match needs every loop live", l.sym,
                              what, range_text(l))};
  return std::nullopt;
}

// A constant equal to v (for v = 0 both +0 and -0: a fill of either is a zero-out of a sum of
// exponentials, which are never -0).
bool is_const(const ExprP& e, double v) {
  return e && e->kind == ExprKind::Const && e->value == v;
}

// Matches the anchor. nullopt: not an anchor at all (no decline recorded).
std::optional<std::variant<Anchor, Fail>> match_anchor(const RoutineView& view, int pos) {
  const Line& line = view.line(pos);
  if (!line.nest) return std::nullopt;
  const Nest& nest = *line.nest;
  auto red = reduction_of(nest);
  if (!red || red->op != BinOp::Max || red->other->kind != ExprKind::Get) return std::nullopt;
  Anchor an;
  an.pos = pos;
  an.nest = &nest;
  an.m = view.node(nest.store->name);
  an.x = view.node(red->other->name);
  an.max_prec = red->prec;
  if (!an.m || !an.x) return std::nullopt;
  const std::string what = fmt::format("the max reduction of {}", an.m->name);

  // Which loops index m: the rest are reduced.
  std::vector<std::string> target_syms;
  for (const auto& raw : nest.store->indices) {
    Index i = raw.canonical();
    if (i.is_fixed()) continue;
    if (!i.is_plain_iterator() || !nest.loop(i.terms[0].sym) ||
        std::count(target_syms.begin(), target_syms.end(), i.terms[0].sym))
      return Fail{
          "non-plain-index",
          fmt::format("{} stores {} at index {}, not a plain iterator of its own loops or a fixed index",
                      what, an.m->name, print_index(raw))};
    target_syms.push_back(i.terms[0].sym);
  }
  std::vector<const NestLoop*> reduced;
  for (const auto& l : nest.loops)
    if (std::find(target_syms.begin(), target_syms.end(), l.sym) == target_syms.end()) reduced.push_back(&l);
  if (reduced.empty()) return std::nullopt;  // an elementwise max, not a reduction
  if (auto f = dead_loop(nest, what)) return *f;
  if (reduced.size() > 1)
    return Fail{
        "multiple-reduced-axes",
        fmt::format("{} reduces over {} loops ({} and {}); a normalizer reduces over exactly one axis", what,
                    reduced.size(), reduced[0]->sym, reduced[1]->sym)};
  an.t = *reduced[0];

  // x's indices: plain iterators of the nest or fixed, no symbol twice, the reduced one among them.
  std::vector<std::string> x_syms;
  int t_axis = -1;
  for (std::size_t ax = 0; ax < red->other->indices.size(); ++ax) {
    Index i = red->other->indices[ax].canonical();
    if (i.is_fixed()) continue;
    if (!i.is_plain_iterator() || !nest.loop(i.terms[0].sym) ||
        std::count(x_syms.begin(), x_syms.end(), i.terms[0].sym))
      return Fail{"non-plain-index",
                  fmt::format("{} reads {} at index {}, not a plain iterator or a fixed index", what,
                              an.x->name, print_index(red->other->indices[ax]))};
    x_syms.push_back(i.terms[0].sym);
    if (i.terms[0].sym == an.t.sym) t_axis = static_cast<int>(ax);
  }
  if (t_axis < 0)
    return Fail{"scores-not-reduced",
                fmt::format("{} reduces over loop {}, which does not index the scores {}", what, an.t.sym,
                            an.x->name)};

  // Vocabulary: a row role per iterator axis of m, then the reduced role.
  RoleEnv env;
  for (std::size_t ax = 0; ax < nest.store->indices.size(); ++ax) {
    Index i = nest.store->indices[ax].canonical();
    if (i.is_fixed()) {
      an.m_sig.push_back(Slot{-1, i.offset});
    } else {
      int role = an.vocab.add(fmt::format("row {}", ax), an.m->dims[ax]);
      an.m_sig.push_back(Slot{role, 0});
      an.row_roles.push_back(role);
    }
  }
  an.reduced_role = an.vocab.add("reduced", an.x->dims[static_cast<std::size_t>(t_axis)]);
  if (!env.bind(an.m_sig, nest.store->indices)) return std::nullopt;
  for (std::size_t ax = 0; ax < red->other->indices.size(); ++ax) {
    Index i = red->other->indices[ax].canonical();
    if (i.is_fixed()) {
      an.x_sig.push_back(Slot{-1, i.offset});
    } else if (i.terms[0].sym == an.t.sym) {
      an.x_sig.push_back(Slot{an.reduced_role, 0});
    } else {
      an.x_sig.push_back(Slot{*env.role_of(i.terms[0].sym), 0});
    }
  }
  if (!env.bind(an.x_sig, red->other->indices)) return std::nullopt;
  if (auto f = loop_failure(check_loops(env, nest, an.vocab), an.vocab, env, what)) return *f;

  an.role_syms.assign(an.vocab.extents.size(), "");
  for (const auto& [sym, role] : env.symbols()) an.role_syms[static_cast<std::size_t>(role)] = sym;
  for (const auto& l : nest.loops)
    if (l.sym != an.t.sym) an.rows.push_back(l);
  an.m_idcs = nest.store->indices;
  an.x_idcs = red->other->indices;
  return an;
}

// Binds a chain nest's reads, checks its loops and signs its store. `what` names the nest.
std::variant<Signature, Fail> relate(const Nest& nest, const Anchor& an,
                                     const std::vector<std::pair<const Signature*, const Expr*>>& reads,
                                     const std::string& what,
                                     const std::optional<std::vector<int>>& required_roles) {
  if (auto f = dead_loop(nest, what)) return *f;
  RoleEnv env;
  for (const auto& [sig, read] : reads)
    if (!env.bind(*sig, read->indices))
      return Fail{"index-mismatch",
                  fmt::format("{} reads {} at indices that do not follow the max reduction's axes", what,
                              read->name)};
  if (auto f = loop_failure(check_loops(env, nest, an.vocab), an.vocab, env, what)) return *f;
  auto sig = env.sign(nest.store->indices);
  // By default the store must be one cell per iteration: every bound role indexes it.
  std::vector<int> roles;
  if (required_roles)
    roles = *required_roles;
  else
    for (const auto& [sym, role] : env.symbols()) roles.push_back(role);
  if (!sig || !has_all_roles(*sig, roles))
    return Fail{"index-mismatch",
                fmt::format("{} does not store to {} at indices that follow the max reduction's axes "
                            "(one cell per iteration)",
                            what, nest.store->name)};
  return *sig;
}

std::variant<Normalizer, Fail> complete(const RoutineView& view, const Anchor& an, int np, int ep, int cp) {
  const Nest& nn = *view.line(np).nest;
  const Nest& en = *view.line(ep).nest;
  const Nest& cn = *view.line(cp).nest;
  const Expr& sub = *nn.store->value;
  const Expr& ex = *en.store->value;
  auto cred = *reduction_of(cn);
  Normalizer nz;
  nz.a = an.pos;
  nz.n_pos = np;
  nz.e_pos = ep;
  nz.c = cp;
  nz.m = an.m->name;
  nz.x = an.x->name;
  nz.n = nn.store->name;
  nz.e = en.store->name;
  nz.l = cn.store->name;
  nz.score_prec = an.x->prec;
  nz.rows = an.rows;
  nz.t = an.t;
  nz.m_idcs = an.m_idcs;
  nz.x_idcs = an.x_idcs;

  // Relate the chain's nests to the anchor through the nodes they share.
  auto n_sig = relate(nn, an, {{&an.x_sig, sub.args[0].get()}, {&an.m_sig, sub.args[1].get()}},
                      fmt::format("the nest of {}", nz.n), std::nullopt);
  if (auto* f = std::get_if<Fail>(&n_sig)) return *f;
  auto e_sig = relate(en, an, {{&std::get<Signature>(n_sig), ex.args[0].get()}},
                      fmt::format("the nest of {}", nz.e), std::nullopt);
  if (auto* f = std::get_if<Fail>(&e_sig)) return *f;
  auto l_sig = relate(cn, an, {{&std::get<Signature>(e_sig), cred.other.get()}},
                      fmt::format("the sum into {}", nz.l), an.row_roles);
  if (auto* f = std::get_if<Fail>(&l_sig)) return *f;
  const Signature& lsig = std::get<Signature>(l_sig);
  nz.l_idcs = indices_for(lsig, an.role_syms);

  // One floating-point precision throughout: the scores'.
  const Node* n = view.node(nz.n);
  const Node* e = view.node(nz.e);
  const Node* l = view.node(nz.l);
  if (!n || !e || !l) return Fail{"index-mismatch", "a chain node is not declared"};
  for (const Node* node : {an.m, l, an.x, n, e})
    if (!is_float(node->prec))
      return Fail{
          "non-float-chain",
          fmt::format("{} is {}, not floating point; an integer normalizer truncates per step where the "
                      "scan would not",
                      node->name, prec_name(node->prec))};
  const Prec sp = an.x->prec;
  for (const Node* node : {an.m, n, e, l})
    if (node->prec != sp)
      return Fail{
          "chain-precision-mismatch",
          fmt::format("{} is {} but the scores {} are {}; the chain is recognized only at the scores' "
                      "precision",
                      node->name, prec_name(node->prec), an.x->name, prec_name(sp))};
  const std::pair<const char*, Prec> ops[] = {
      {"max", an.max_prec}, {"sub", sub.prec}, {"exp", ex.prec}, {"add", cred.prec}};
  for (const auto& [op, p] : ops)
    if (p != sp)
      return Fail{
          "chain-precision-mismatch",
          fmt::format("the chain's {} is computed at {} but the scores {} are {}; the chain is recognized "
                      "only at the scores' precision",
                      op, prec_name(p), an.x->name, prec_name(sp))};

  // Writers: n and e have one each; m and l exactly their init and their reduction.
  for (const auto& [node, p] : {std::pair{nz.n, np}, std::pair{nz.e, ep}})
    if (view.writers(node) != std::vector<int>{p})
      return Fail{"extra-writer",
                  fmt::format("{} is written outside its nest ({} writers); the chain needs it "
                              "defined once",
                              node, view.writers(node).size())};
  auto others = [&](const std::string& node, int own) {
    std::vector<int> o;
    for (int p : view.writers(node))
      if (p != own) o.push_back(p);
    return o;
  };
  auto m_others = others(nz.m, an.pos);
  if (m_others.size() > 1)
    return Fail{"extra-writer", fmt::format("{} is written by {} and {} besides its init and the max", nz.m,
                                            pos_text(m_others[0]), pos_text(m_others[1]))};
  if (m_others.empty() || m_others[0] > an.pos)
    return Fail{"no-max-init", fmt::format("{} is not set to -inf before the max reduction", nz.m)};
  nz.a_init = m_others[0];
  {
    const Line& li = view.line(nz.a_init);
    const std::string what = fmt::format("the init of {}", nz.m);
    if (!li.nest || li.nest->store->name != nz.m || !is_const(li.nest->store->value, -INFINITY))
      return Fail{"no-max-init",
                  fmt::format("{} is set by {} before the max, which is not a cell-wise -inf fill", nz.m,
                              pos_text(nz.a_init))};
    if (auto f = dead_loop(*li.nest, what)) return *f;
    RoleEnv env;
    if (!env.bind(an.m_sig, li.nest->store->indices))
      return Fail{"no-max-init",
                  fmt::format("the -inf fill of {} does not cover exactly the max's cells", nz.m)};
    auto lc = check_loops(env, *li.nest, an.vocab);
    if (lc.fit == LoopFit::Unbound)
      return Fail{"no-max-init", fmt::format("the -inf fill of {} has loop {} indexing none of its axes",
                                             nz.m, lc.loop->sym)};
    if (auto f = loop_failure(lc, an.vocab, env, what)) return *f;
  }
  auto l_others = others(nz.l, cp);
  if (l_others.size() > 1)
    return Fail{"extra-writer", fmt::format("{} is written by {} and {} besides its zero-out and the sum",
                                            nz.l, pos_text(l_others[0]), pos_text(l_others[1]))};
  if (l_others.empty() || l_others[0] > cp)
    return Fail{"no-sum-init", fmt::format("{} is not zeroed before the sum", nz.l)};
  nz.c_init = l_others[0];
  {
    const Line& li = view.line(nz.c_init);
    const std::string what = fmt::format("the zero fill of {}", nz.l);
    if (li.stmt->kind == StmtKind::Zero && li.stmt->name == nz.l) {
      if (!covers_all_cells(lsig, *l, an.vocab))
        return Fail{
            "zero-out-too-wide",
            fmt::format("zero {} clears all {} cells of {} but the sum writes only {}; deleting it would "
                        "leave the other cells unzeroed",
                        nz.l, l->cell_count(), nz.l, read_text(nz.l, cn.store->indices))};
    } else if (li.nest && li.nest->store->name == nz.l && is_const(li.nest->store->value, 0.0)) {
      if (auto f = dead_loop(*li.nest, what)) return *f;
      RoleEnv env;
      if (!env.bind(lsig, li.nest->store->indices))
        return Fail{"no-sum-init",
                    fmt::format("the zero fill of {} does not cover exactly the sum's cells", nz.l)};
      auto lc = check_loops(env, *li.nest, an.vocab);
      if (lc.fit == LoopFit::Unbound)
        return Fail{"no-sum-init", fmt::format("the zero fill of {} has loop {} indexing none of its axes",
                                               nz.l, lc.loop->sym)};
      if (auto f = loop_failure(lc, an.vocab, env, what)) return *f;
    } else {
      return Fail{"no-sum-init",
                  fmt::format("{} is set by {} before the sum, which is neither `zero {}` nor a "
                              "cell-wise 0 fill",
                              nz.l, pos_text(nz.c_init), nz.l)};
    }
  }

  // Program order and the census.
  if (!(an.pos < np && np < ep && ep < cp))
    return Fail{
        "program-order",
        fmt::format("the chain runs max ({}), {} ({}), {} ({}), sum ({}); it must run max < {} < {} < sum",
                    pos_text(an.pos), nz.n, pos_text(np), nz.e, pos_text(ep), pos_text(cp), nz.n, nz.e)};
  if (int w = view.write_after(nz.x, an.pos); w >= 0)
    return Fail{"x-written-after-max",
                fmt::format("{} writes the scores {} after the max reduction; the scan would "
                            "read different scores than the sum",
                            pos_text(w), nz.x)};
  if (int rd = view.read_between(nz.m, nz.a_init, an.pos); rd >= 0)
    return Fail{"m-read-before-max",
                fmt::format("{} reads {} between its -inf init and the max reduction; the scan "
                            "deletes the init",
                            pos_text(rd), nz.m)};
  if (int rd = view.read_between(nz.l, std::min(an.pos, nz.c_init), cp); rd >= 0)
    return Fail{"l-read-before-sum",
                fmt::format("{} reads {} between its zero-out and the sum; the scan deletes the "
                            "zero-out and writes the sum at the max",
                            pos_text(rd), nz.l)};
  return nz;
}

bool is_sub_of(const Line& line, const std::string& x, const std::string& m) {
  if (!line.nest) return false;
  const ExprP& v = line.nest->store->value;
  return v && v->kind == ExprKind::Binary && v->binop() == BinOp::Sub && is_get_of(v->args[0], x) &&
         is_get_of(v->args[1], m);
}

bool is_exp_of(const Line& line, const std::string& n) {
  if (!line.nest) return false;
  const ExprP& v = line.nest->store->value;
  return v && v->kind == ExprKind::Unary && v->unop() == UnOp::Exp && is_get_of(v->args[0], n);
}

// Where the max's shift x - m sits inside a larger expression (exp(x - m) written inline): the
// scan matches each step as its own statement, so the no-sum-chain sentence says where.
std::string inline_shift_text(const RoutineView& view, const Anchor& an) {
  for (int p : view.readers(an.m->name)) {
    const Line& line = view.line(p);
    if (!line.nest || is_sub_of(line, an.x->name, an.m->name)) continue;
    bool inline_shift = false;
    for_each_expr(line.nest->store->value, [&](const Expr& e) {
      inline_shift = inline_shift || (e.kind == ExprKind::Binary && e.binop() == BinOp::Sub &&
                                      is_get_of(e.args[0], an.x->name) && is_get_of(e.args[1], an.m->name));
    });
    if (inline_shift)
      return fmt::format("{} computes {} - {} inside a larger expression, where the scan needs it as its own "
                         "statement into its own node",
                         pos_text(p), an.x->name, an.m->name);
  }
  return "it is not a softmax normalizer";
}

bool is_sum_of(const Line& line, const std::string& e) {
  if (!line.nest) return false;
  auto red = reduction_of(*line.nest);
  return red && red->op == BinOp::Add && is_get_of(red->other, e);
}

}  // namespace

NormalizerSearch find_normalizers(const RoutineView& view) {
  NormalizerSearch out;
  for (int a = 0; a < view.size(); ++a) {
    auto anchor = match_anchor(view, a);
    if (!anchor) continue;
    auto decline = [&](const Fail& f) {
      out.declines.push_back(
          Decline{"online-softmax", kNormalizerScanId, 0, a + 1, view.source_line(a), f.code, f.sentence, ""});
    };
    if (auto* f = std::get_if<Fail>(&*anchor)) {
      decline(*f);
      continue;
    }
    const Anchor& an = std::get<Anchor>(*anchor);
    std::optional<Fail> first;
    bool any = false, done = false;
    for (int np : view.readers(an.m->name)) {
      if (done || !is_sub_of(view.line(np), an.x->name, an.m->name)) continue;
      const std::string& n = view.line(np).nest->store->name;
      for (int ep : view.readers(n)) {
        if (done || !is_exp_of(view.line(ep), n)) continue;
        const std::string& e = view.line(ep).nest->store->name;
        for (int cp : view.readers(e)) {
          if (done || !is_sum_of(view.line(cp), e)) continue;
          any = true;
          auto res = complete(view, an, np, ep, cp);
          if (auto* nz = std::get_if<Normalizer>(&res)) {
            out.found.push_back(std::move(*nz));
            done = true;
          } else if (!first) {
            first = std::get<Fail>(res);
          }
        }
      }
    }
    if (done) continue;
    if (!any)
      decline(Fail{"no-sum-chain",
                   fmt::format("no chain {} - {} -> exp -> sum hangs off the max reduction of {}; {}", an.x->name,
                               an.m->name, an.m->name, inline_shift_text(view, an))});
    else
      decline(*first);
  }
  return out;
}

StmtP emit_normalizer_scan(const Normalizer& nz, NameMinter& names) {
  const Prec sp = state_prec(nz.score_prec);
  const std::string mp = names.mint("os_m_prev_" + nz.m);
  const std::string mn = names.mint("os_m_next_" + nz.m);
  const std::string lp = names.mint("os_l_prev_" + nz.l);
  const std::string ln = names.mint("os_l_next_" + nz.l);
  const std::string xs = names.mint("os_x_" + nz.x);
  auto L = [&](const std::string& n) { return get_local(n, sp); };
  auto floor_at_lowest = [&](ExprP v) {
    return binary(BinOp::Max, std::move(v), constant(lowest_finite(sp), sp), sp);
  };
  ExprP rescale =
      unary(UnOp::Exp, binary(BinOp::Sub, floor_at_lowest(L(mp)), floor_at_lowest(L(mn)), sp), sp);
  ExprP term = unary(UnOp::Exp, binary(BinOp::Sub, L(xs), floor_at_lowest(L(mn)), sp), sp);
  ExprP next_l = binary(BinOp::Add, binary(BinOp::Mul, L(lp), rescale, sp), term, sp);
  ExprP stored_l = ternary(TernOp::Where, binary(BinOp::Eq, L(mn), constant(-INFINITY, sp), sp),
                           constant(NAN, sp), L(ln), sp);
  std::vector<StmtP> body = {
      declare_local(xs, sp),
      set_local(xs, get(nz.x, nz.x_idcs, nz.score_prec)),
      set_local(mn, binary(BinOp::Max, L(mp), L(xs), sp)),
      set_local(ln, next_l),
      set(nz.m, nz.m_idcs, L(mn)),
      set(nz.l, nz.l_idcs, stored_l),
  };
  std::vector<Carried> carried = {Carried{mp, mn, sp, constant(-INFINITY, sp)},
                                  Carried{lp, ln, sp, constant(0.0, sp)}};
  StmtP s = scan_loop(nz.t.sym, nz.t.from, nz.t.to, ScanDir::Forward, std::move(carried), std::move(body));
  for (auto it = nz.rows.rbegin(); it != nz.rows.rend(); ++it) s = for_loop(it->sym, it->from, it->to, {s});
  return s;
}

namespace {
}  // namespace

Application normalizer_application(const Normalizer& nz, const RoutineView& view, const Stmt& emitted) {
  Application app;
  app.member = "online-softmax";
  app.shape = kNormalizerScanId;
  for (int p : {nz.a, nz.a_init, nz.n_pos, nz.e_pos, nz.c_init, nz.c}) {
    app.statements.push_back(p + 1);
    app.lines.push_back(view.source_line(p));
  }
  app.anchor_run = 1;  // the scan replaces the max
  std::string rows;
  std::string row_list;
  for (const auto& r : nz.rows) {
    rows += (rows.empty() ? "" : ",") + r.sym;
    row_list += (row_list.empty() ? "" : ", ") + r.sym;
  }
  app.matched = matched_roles(NormalizerRoles{nz.x, nz.m, nz.n, nz.e, nz.l, rows.empty() ? "-" : rows, nz.t.sym});
  const Prec sp = state_prec(nz.score_prec);
  const Stmt* scan = &emitted;
  while (scan->kind == StmtKind::For) scan = scan->body[0].get();
  app.emitted = fmt::format(
      "{}scan {} in {}..{} carrying ({} -> {}, {} -> {}) at {}, storing {} and {} every step; deleted the "
      "-inf fill "
      "of {} (statement {}), the zero-out of {} (statement {}) and the sum (statement {})",
      rows.empty() ? "" : fmt::format("for {}: ", row_list), nz.t.sym, nz.t.from, nz.t.to,
      scan->carried[0].prev, scan->carried[0].next, scan->carried[1].prev, scan->carried[1].next,
      prec_name(sp), nz.m, nz.l, nz.m, nz.a_init + 1, nz.l, nz.c_init + 1, nz.c + 1);
  std::vector<NestLoop> loops = nz.rows;
  Obligation mx;
  mx.kind = ObligationKind::Exact;
  mx.claim = claim::kNormalizerMax;
  mx.description = fmt::format(
      "{} equals the composed max of {} over {} bitwise: the scan takes the same maxima in the same order",
      nz.m, nz.x, nz.t.sym);
  mx.covers = {Cover{nz.m, cells_text(nz.m, nz.m_idcs, loops)}};
  Obligation sum;
  sum.kind = ObligationKind::Bounded;
  sum.claim = claim::kNormalizerSum;
  sum.description = fmt::format(
      "{} is the composed sum of exp({} - {}) over {} within rounding: reassociated into a running sum "
      "rescaled at "
      "each new maximum, carried at {} for {} scores; NaN exactly where the composed form has NaN",
      nz.l, nz.x, nz.m, nz.t.sym, prec_name(sp), prec_name(nz.score_prec));
  sum.covers = {Cover{nz.l, cells_text(nz.l, nz.l_idcs, loops)}};
  sum.bound = std::make_shared<SumTerms>(nz.t.to - nz.t.from + 1, nz.score_prec, sp);
  app.obligations = {mx, sum};
  return app;
}

}  // namespace fp::osm
