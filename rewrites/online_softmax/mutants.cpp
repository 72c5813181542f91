#include "rewrites/online_softmax/mutants.h"

#include <cmath>
#include <functional>
#include <optional>

#include "core/diagnostic.h"
#include "core/numerics.h"
#include "core/ir_visit.h"
#include "rewrites/online_softmax/ir_map.h"

namespace fp::osm {

namespace {

ExprP retype_local(const ExprP& e, const std::string& name, Prec p) {
  return map_expr(e, [&](const ExprP& x) -> ExprP {
    if (x->kind == ExprKind::GetLocal && x->name == name) return get_local(name, p);
    return x;
  });
}

Index subst(const Index& idx, const std::string& sym, const Index& by) { return idx.substituted({{sym, by}}); }

ExprP subst_expr(const ExprP& e, const std::string& sym, const Index& by) {
  return map_expr(e, [&](const ExprP& x) -> ExprP {
    if (x->kind != ExprKind::Get && x->kind != ExprKind::EmbedIndex) return x;
    auto copy = std::make_shared<Expr>(*x);
    for (auto& i : copy->indices) i = subst(i, sym, by);
    return copy;
  });
}

Routine with_top_level(const Routine& r, std::vector<StmtP> top) {
  Routine out = r;
  out.body = seq(std::move(top));
  return out;
}

// ---- shape 1 ------------------------------------------------------------------------------------

struct ScanParts {
  const Stmt* scan = nullptr;
  std::string mp, mn, lp, ln, xs;
  Prec q = Prec::F32;
  ExprP low;
};

ScanParts find_scan(const Routine& r) {
  ScanParts p;
  std::function<void(const StmtP&)> walk = [&](const StmtP& s) {
    if (p.scan) return;
    if (s->kind == StmtKind::Scan) {
      p.scan = s.get();
      return;
    }
    for (const auto& b : s->body) walk(b);
  };
  walk(r.body);
  FP_INTERNAL_CHECK(p.scan && p.scan->carried.size() == 2 && p.scan->body.size() == 6,
                    "no normalizer scan in the routine");
  p.mp = p.scan->carried[0].prev;
  p.mn = p.scan->carried[0].next;
  p.lp = p.scan->carried[1].prev;
  p.ln = p.scan->carried[1].next;
  p.q = p.scan->carried[1].prec;
  p.xs = p.scan->body[0]->name;
  // ln := add(mul(lp, exp(sub(max(mp, LOW), max(mn, LOW)))), term): LOW is the max's constant.
  p.low = p.scan->body[3]->value->args[0]->args[1]->args[0]->args[0]->args[1];
  return p;
}

// The routine with the scan replaced by f(scan).
Routine mutate_scan(const Routine& r, const ScanParts& sp, const std::function<StmtP(const Stmt&)>& f) {
  Routine out = r;
  out.body = map_stmt(r.body, [&](const StmtP& s) -> StmtP {
    if (s->kind == StmtKind::Scan && s->carried.size() == 2 && s->carried[0].prev == sp.mp) return f(*s);
    return s;
  });
  return out;
}

// Replaces the value of the body statement at `k`.
Routine scan_body_value(const Routine& r, const ScanParts& sp, std::size_t k, ExprP value) {
  return mutate_scan(r, sp, [&](const Stmt& scan) {
    auto copy = std::make_shared<Stmt>(scan);
    auto st = std::make_shared<Stmt>(*copy->body[k]);
    st->value = value;
    copy->body[k] = st;
    return StmtP(copy);
  });
}

}  // namespace

std::vector<Mutant> normalizer_scan_mutants(const Routine& tgt) {
  const ScanParts sp = find_scan(tgt);
  const Prec q = sp.q;
  auto L = [&](const std::string& n) { return get_local(n, q); };
  auto fl = [&](ExprP v) { return binary(BinOp::Max, std::move(v), sp.low, q); };
  auto ex = [&](ExprP v) { return unary(UnOp::Exp, std::move(v), q); };
  auto sub = [&](ExprP a, ExprP b) { return binary(BinOp::Sub, std::move(a), std::move(b), q); };
  auto mul = [&](ExprP a, ExprP b) { return binary(BinOp::Mul, std::move(a), std::move(b), q); };
  auto add = [&](ExprP a, ExprP b) { return binary(BinOp::Add, std::move(a), std::move(b), q); };
  const ExprP resc = ex(sub(fl(L(sp.mp)), fl(L(sp.mn))));
  const ExprP term = ex(sub(L(sp.xs), fl(L(sp.mn))));
  std::vector<Mutant> out;
  auto ln_mutant = [&](std::string id, std::string what, ExprP v) {
    out.push_back(Mutant{std::move(id), std::move(what), scan_body_value(tgt, sp, 3, std::move(v))});
  };
  ln_mutant("rescale-swapped-sub",
            "the rescale exponent subtracts the new maximum from the old (swapped operands)",
            add(mul(L(sp.lp), ex(sub(fl(L(sp.mn)), fl(L(sp.mp))))), term));
  ln_mutant("rescale-dropped", "the running sum is not rescaled at a new maximum", add(L(sp.lp), term));
  ln_mutant("missing-floor-term", "the term's exponent uses the running maximum without the floor at LOWEST",
            add(mul(L(sp.lp), resc), ex(sub(L(sp.xs), L(sp.mn)))));
  ln_mutant("missing-floor-rescale", "the rescale exponent uses both maxima without the floor at LOWEST",
            add(mul(L(sp.lp), ex(sub(L(sp.mp), L(sp.mn)))), term));
  ln_mutant("swapped-term-sub", "the term's exponent is max - x instead of x - max (swapped operands)",
            add(mul(L(sp.lp), resc), ex(sub(fl(L(sp.mn)), L(sp.xs)))));
  ln_mutant("term-uses-previous-max", "the term is shifted by the previous maximum, not the new one",
            add(mul(L(sp.lp), resc), ex(sub(L(sp.xs), fl(L(sp.mp))))));
  ln_mutant("rescale-mul-to-add", "the rescale is added to the running sum instead of multiplying it",
            add(add(L(sp.lp), resc), term));
  out.push_back(Mutant{"dropped-nan-store",
                       "the NaN store of an all -inf row is dropped (l = the carried sum)",
                       scan_body_value(tgt, sp, 5, L(sp.ln))});
  out.push_back(Mutant{"store-previous-max", "the maximum stored is the previous one",
                       scan_body_value(tgt, sp, 4, L(sp.mp))});
  out.push_back(Mutant{"narrowed-state", "the carried sum is narrowed to bf16",
                       mutate_scan(tgt, sp, [&](const Stmt& scan) {
                         auto copy = std::make_shared<Stmt>(scan);
                         copy->carried[1].prec = Prec::BF16;
                         copy->carried[1].init = constant(0.0, Prec::BF16);
                         StmtP body = seq(copy->body);
                         body = map_exprs(body, [&](const ExprP& e) -> ExprP {
                           if (e->kind == ExprKind::GetLocal && (e->name == sp.lp || e->name == sp.ln))
                             return get_local(e->name, Prec::BF16);
                           return e;
                         });
                         copy->body = body->body;
                         return StmtP(copy);
                       })});
  out.push_back(Mutant{"narrowed-score-read", "the score is read into a bf16 local",
                       mutate_scan(tgt, sp, [&](const Stmt& scan) {
                         auto copy = std::make_shared<Stmt>(scan);
                         copy->body[0] = declare_local(sp.xs, Prec::BF16);
                         StmtP body = seq(copy->body);
                         body = map_exprs(body,
                                          [&](const ExprP& e) { return retype_local(e, sp.xs, Prec::BF16); });
                         copy->body = body->body;
                         return StmtP(copy);
                       })});
  out.push_back(Mutant{"wrong-max-init", "the running maximum starts at 0 instead of -inf",
                       mutate_scan(tgt, sp, [&](const Stmt& scan) {
                         auto copy = std::make_shared<Stmt>(scan);
                         copy->carried[0].init = constant(0.0, q);
                         return StmtP(copy);
                       })});
  out.push_back(
      Mutant{"off-by-one-end", "the scan stops one key early", mutate_scan(tgt, sp, [&](const Stmt& scan) {
               auto copy = std::make_shared<Stmt>(scan);
               copy->to -= 1;
               return StmtP(copy);
             })});
  out.push_back(
      Mutant{"off-by-one-start", "the scan skips the first key", mutate_scan(tgt, sp, [&](const Stmt& scan) {
               auto copy = std::make_shared<Stmt>(scan);
               copy->from += 1;
               return StmtP(copy);
             })});
  return out;
}

// ---- shape 2 ------------------------------------------------------------------------------------

namespace {

struct LoopSpec {
  std::string sym;
  std::int64_t from, to;
};

struct Hoisted {
  std::vector<LoopSpec> outer, inner;
  std::string local;
  Prec prec = Prec::F32;
  ExprP read;
  const Stmt* store = nullptr;
};

Hoisted parse_hoisted(const StmtP& s) {
  Hoisted h;
  const Stmt* cur = s.get();
  while (cur->kind == StmtKind::For && cur->body.size() == 1) {
    h.outer.push_back(LoopSpec{cur->sym, cur->from, cur->to});
    cur = cur->body[0].get();
  }
  if (cur->kind == StmtKind::For) h.outer.push_back(LoopSpec{cur->sym, cur->from, cur->to});
  FP_INTERNAL_CHECK(cur->body.size() == 3, "not a hoisted value pass");
  h.local = cur->body[0]->name;
  h.prec = cur->body[0]->prec;
  h.read = cur->body[1]->value;
  cur = cur->body[2].get();
  while (cur->kind == StmtKind::For) {
    h.inner.push_back(LoopSpec{cur->sym, cur->from, cur->to});
    cur = cur->body[0].get();
  }
  h.store = cur;
  return h;
}

StmtP build_hoisted(const Hoisted& h, Prec local_prec, const ExprP& read, const std::string& target,
                    const std::vector<Index>& indices, const ExprP& value) {
  StmtP inner = set(target, indices, value);
  for (auto it = h.inner.rbegin(); it != h.inner.rend(); ++it)
    inner = for_loop(it->sym, it->from, it->to, {inner});
  std::vector<StmtP> body = {declare_local(h.local, local_prec), set_local(h.local, read), inner};
  if (h.outer.empty()) return seq(std::move(body));
  StmtP s = for_loop(h.outer.back().sym, h.outer.back().from, h.outer.back().to, std::move(body));
  for (auto it = h.outer.rbegin() + 1; it != h.outer.rend(); ++it)
    s = for_loop(it->sym, it->from, it->to, {s});
  return s;
}

bool mentions_sym(const std::vector<Index>& idx, const std::string& sym) {
  for (const auto& i : idx)
    if (i.mentions(sym)) return true;
  return false;
}

}  // namespace

std::vector<Mutant> value_pass_mutants(const Routine& tgt, const Application& app) {
  std::vector<StmtP> top = top_level_statements(tgt);
  const std::size_t pos = static_cast<std::size_t>(app.statements.at(0) - 1);
  const Hoisted h = parse_hoisted(top.at(pos));
  const Stmt& st = *h.store;
  const ExprP& v = st.value;  // add(T, mul(p, w)) in some operand order
  const bool self_first = v->args[0]->kind == ExprKind::Get && v->args[0]->name == st.name;
  const ExprP self = v->args[self_first ? 0 : 1];
  const ExprP prod = v->args[self_first ? 1 : 0];
  const Prec p = v->prec;
  // The outer loop that does not index the target (the reduced one) and the innermost loop.
  std::size_t red = h.outer.size();
  for (std::size_t k = 0; k < h.outer.size(); ++k)
    if (!mentions_sym(st.indices, h.outer[k].sym)) red = k;
  FP_INTERNAL_CHECK(red < h.outer.size() && !h.inner.empty(),
                    "no reduced outer loop in the hoisted value pass");
  const LoopSpec t = h.outer[red];

  std::vector<Mutant> out;
  auto with = [&](std::string id, std::string what, StmtP s) {
    std::vector<StmtP> m = top;
    m[pos] = std::move(s);
    out.push_back(Mutant{std::move(id), std::move(what), with_top_level(tgt, std::move(m))});
  };
  {
    Hoisted k = h;
    k.outer.erase(k.outer.begin() + static_cast<std::ptrdiff_t>(red));
    k.inner.insert(k.inner.begin(), t);
    with("hoist-reduced-loop",
         "the reduced loop (which does not index the target) is moved behind the hoisted read, read once at "
         "its "
         "first value",
         build_hoisted(k, h.prec, subst_expr(h.read, t.sym, Index::fixed(t.from)), st.name, st.indices, v));
  }
  {
    Hoisted k = h;
    k.inner.back().to -= 1;
    with("inner-off-by-one", "the innermost moved loop stops one early",
         build_hoisted(k, h.prec, h.read, st.name, st.indices, v));
  }
  {
    Hoisted k = h;
    k.outer[red].from += 1;
    with("outer-off-by-one", "the reduced loop skips its first value",
         build_hoisted(k, h.prec, h.read, st.name, st.indices, v));
  }
  with("local-narrowed", "the hoisted local is bf16, rounding the probability",
       build_hoisted(h, Prec::BF16, h.read, st.name, st.indices, retype_local(v, h.local, Prec::BF16)));
  with("wrong-read-index", "the hoisted read uses a fixed index instead of the reduced loop",
       build_hoisted(h, h.prec, subst_expr(h.read, t.sym, Index::fixed(t.from)), st.name, st.indices, v));
  {
    Index rev{{Index::Term{-1, t.sym}}, t.from + t.to};
    with("reversed-order", "the reduction runs its contributions in reverse order (summation order changed)",
         build_hoisted(h, h.prec, subst_expr(h.read, t.sym, rev), st.name, st.indices,
                       subst_expr(v, t.sym, rev)));
  }
  with("dropped-accumulate", "the store overwrites the target instead of accumulating",
       build_hoisted(h, h.prec, h.read, st.name, st.indices, prod));
  with("mul-to-add", "the contribution adds the factors instead of multiplying them",
       build_hoisted(
           h, h.prec, h.read, st.name, st.indices,
           binary(BinOp::Add, self, binary(BinOp::Add, prod->args[0], prod->args[1], prod->prec), p)));
  with("accumulate-as-sub", "the contribution is subtracted",
       build_hoisted(h, h.prec, h.read, st.name, st.indices, binary(BinOp::Sub, self, prod, p)));
  with("accumulate-sub-swapped", "the accumulation subtracts with swapped operands (non-commutative op)",
       build_hoisted(h, h.prec, h.read, st.name, st.indices, binary(BinOp::Sub, prod, self, p)));
  {
    const std::string e = h.inner.back().sym;
    std::vector<Index> fixed;
    for (const auto& i : st.indices) fixed.push_back(subst(i, e, Index::fixed(h.inner.back().from)));
    with("target-index-fixed", "the store ignores the moved loop in the target index (contributions collide)",
         build_hoisted(h, h.prec, h.read, st.name, fixed,
                       subst_expr(v, e, Index::fixed(h.inner.back().from))));
  }
  {
    // Moves the hoisted nest before the statement that defines the node it reads.
    std::string w = h.read->name;
    std::size_t def = pos;
    for (std::size_t k = 0; k < pos; ++k) {
      bool writes = false;
      std::function<void(const StmtP&)> walk = [&](const StmtP& s) {
        if ((s->kind == StmtKind::Set || s->kind == StmtKind::Zero) && s->name == w) writes = true;
        for (const auto& b : s->body) walk(b);
      };
      walk(top[k]);
      if (writes) def = k;
    }
    if (def < pos) {
      std::vector<StmtP> m = top;
      StmtP moved = m[pos];
      m.erase(m.begin() + static_cast<std::ptrdiff_t>(pos));
      m.insert(m.begin() + static_cast<std::ptrdiff_t>(def), moved);
      out.push_back(Mutant{"hoisted-before-definition",
                           "the hoisted nest runs before the probabilities are computed",
                           with_top_level(tgt, std::move(m))});
    }
  }
  return out;
}

}  // namespace fp::osm

// ---- shape 4 ------------------------------------------------------------------------------------

namespace fp::osm {

namespace {

// The fold's scan (carried running max first) and the names its body uses.
struct FoldParts {
  std::string mp, mn, ln, tile, m;
  std::string rmax;  // the block max local
};

std::optional<FoldParts> find_fold(const Routine& r, const Application& app) {
  std::optional<FoldParts> out;
  const std::string m = matched_node(app, "m");
  std::function<void(const StmtP&)> walk = [&](const StmtP& s) {
    if (out) return;
    if (s->kind == StmtKind::Scan && s->carried.size() == 2 && s->carried[0].prev.rfind("os_m_prev_", 0) == 0) {
      FoldParts p;
      p.mp = s->carried[0].prev;
      p.mn = s->carried[0].next;
      p.ln = s->carried[1].next;
      p.m = m;
      for_each_stmt(seq(s->body), [&](const Stmt& st) {
        if (p.tile.empty() && st.kind == StmtKind::Set && st.name.rfind("os_block_scores_", 0) == 0) p.tile = st.name;
        if (p.rmax.empty() && st.kind == StmtKind::DeclareLocal && st.name.rfind("os_block_max_", 0) == 0)
          p.rmax = st.name;
      });
      out = p;
      return;
    }
    for (const auto& b : s->body) walk(b);
  };
  walk(r.body);
  return out;
}

// The routine with the fold's scan replaced by f(scan).
Routine mutate_fold(const Routine& r, const FoldParts& fp, const std::function<StmtP(const Stmt&)>& f) {
  Routine out = r;
  out.body = map_stmt(r.body, [&](const StmtP& s) -> StmtP {
    if (s->kind == StmtKind::Scan && s->carried.size() == 2 && s->carried[0].prev == fp.mp) return f(*s);
    return s;
  });
  return out;
}

// The scan with every statement of its body mapped by g (nested statements included).
Routine map_fold_body(const Routine& r, const FoldParts& fp, const std::function<StmtP(const StmtP&)>& g) {
  return mutate_fold(r, fp, [&](const Stmt& scan) {
    auto copy = std::make_shared<Stmt>(scan);
    copy->body = map_stmt(seq(copy->body), g)->body;
    return StmtP(copy);
  });
}

bool is_block_max_loop(const Stmt& s, const FoldParts& fp) {
  return s.kind == StmtKind::For && s.body.size() == 1 && s.body[0]->kind == StmtKind::SetLocal &&
         s.body[0]->name == fp.rmax;
}

}  // namespace

std::vector<Mutant> block_fold_mutants(const Routine& tgt, const Application& app) {
  std::vector<Mutant> out;
  const std::optional<FoldParts> found = find_fold(tgt, app);
  if (!found || found->tile.empty() || found->rmax.empty()) return out;
  const FoldParts& fp = *found;
  const Prec sp = [&] {
    for (const Node& n : tgt.nodes)
      if (n.name == fp.tile) return n.prec;
    return Prec::F32;
  }();
  auto add = [&](std::string id, std::string what, Routine r) {
    out.push_back(Mutant{std::move(id), std::move(what), std::move(r)});
  };
  add("block-max-skips-last-key", "the block's maximum skips the block's last key",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (!is_block_max_loop(*s, fp) || s->to <= s->from) return s;
        auto c = std::make_shared<Stmt>(*s);
        c->to -= 1;
        return c;
      }));
  add("block-max-is-min", "the block's maximum takes min instead of max",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (!is_block_max_loop(*s, fp)) return s;
        auto c = std::make_shared<Stmt>(*s);
        const ExprP& v = s->body[0]->value;
        c->body = {set_local(fp.rmax, binary(BinOp::Min, v->args[0], v->args[1], v->prec))};
        return c;
      }));
  add("block-max-reads-first-cell", "the block's maximum reads the block's first score at every key",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (!is_block_max_loop(*s, fp)) return s;
        auto c = std::make_shared<Stmt>(*s);
        c->body = {set_local(fp.rmax, map_expr(s->body[0]->value, [&](const ExprP& x) -> ExprP {
                               if (x->kind != ExprKind::Get || x->name != fp.tile) return x;
                               auto g = std::make_shared<Expr>(*x);
                               g->indices[0] = subst(g->indices[0], s->sym, Index::fixed(0));
                               return g;
                             }))};
        return c;
      }));
  add("running-max-reset-per-block", "each block's maximum starts at -inf instead of the running maximum",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::SetLocal || s->name != fp.rmax || !s->value ||
            s->value->kind != ExprKind::GetLocal)
          return s;
        return set_local(fp.rmax, constant(-INFINITY, sp));
      }));
  add("wrong-max-init", "the running maximum starts at 0 instead of -inf", mutate_fold(tgt, fp, [&](const Stmt& scan) {
        auto c = std::make_shared<Stmt>(scan);
        c->carried[0].init = constant(0.0, sp);
        return StmtP(c);
      }));
  add("store-previous-max", "the maximum stored is the previous block's",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::Set || s->name != fp.m) return s;
        return set(s->name, s->indices, get_local(fp.mp, sp));
      }));
  add("max-stored-on-first-block-only", "the maximum is stored on the first block only",
      mutate_fold(tgt, fp, [&](const Stmt& scan) {
        auto c = std::make_shared<Stmt>(scan);
        const ExprP first = binary(BinOp::Eq, embed_index(Index::iter(scan.sym), Prec::I32),
                                   constant(static_cast<double>(scan.from), Prec::I32), Prec::I32);
        for (auto& st : c->body)
          if (st->kind == StmtKind::Set && st->name == fp.m) st = if_(first, {st});
        return StmtP(c);
      }));
  add("scores-not-reset", "the block's score cells are not cleared before the contraction",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind == StmtKind::Set && s->name == fp.tile && s->value && s->value->kind == ExprKind::Const &&
            s->value->value == 0.0)
          return noop();
        return s;
      }));
  add("scale-dropped", "the scores' chain drops its multiplication by a constant (the scale)",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::Set || s->name != fp.tile || !s->value) return s;
        bool changed = false;
        ExprP v = map_expr(s->value, [&](const ExprP& x) -> ExprP {
          if (changed || x->kind != ExprKind::Binary || x->binop() != BinOp::Mul) return x;
          for (int k = 0; k < 2; ++k)
            if (x->args[k]->kind == ExprKind::Const) {
              changed = true;
              return x->args[1 - k];
            }
          return x;
        });
        return changed ? set(s->name, s->indices, v) : s;
      }));
  add("padding-zero", "the tail's padded score cells are 0 instead of -inf (a zero score, not zero weight)",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind == StmtKind::Set && s->name == fp.tile && s->value && s->value->kind == ExprKind::Const &&
            std::isinf(s->value->value) && s->value->value < 0)
          return set(s->name, s->indices, constant(0.0, sp));
        return s;
      }));
  add("block-stride", "the key of a block's cell advances by one key less per block",
      mutate_fold(tgt, fp, [&](const Stmt& scan) {
        auto c = std::make_shared<Stmt>(scan);
        auto narrower = [&](Index i) {
          for (auto& t : i.terms)
            if (t.sym == scan.sym && t.coef >= 2) t.coef -= 1;
          return i;
        };
        c->body = map_exprs(seq(c->body), [&](const ExprP& x) -> ExprP {
                    if (x->kind != ExprKind::Get && x->kind != ExprKind::EmbedIndex) return x;
                    auto g = std::make_shared<Expr>(*x);
                    for (auto& i : g->indices) i = narrower(i);
                    return g;
                  })->body;
        return StmtP(c);
      }));
  // The sum (l, refuted through `fold-sum`'s search where l is read later).
  const std::string& ln = fp.ln;
  add("sum-not-rescaled", "the running sum is not rescaled when the maximum rises (l' = l + block sum)",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        // l' = l·α + block sum, into the carried sum (or, with skipping, the block's local).
        const bool sum = s->kind == StmtKind::SetLocal && (s->name == ln || s->name.rfind("os_block_next_", 0) == 0);
        if (!sum || s->value->kind != ExprKind::Binary) return s;
        const ExprP& v = s->value;
        const ExprP& prod = v->args[0];
        if (prod->kind != ExprKind::Binary || prod->binop() != BinOp::Mul) return s;
        return set_local(s->name, binary(BinOp::Add, prod->args[0], v->args[1], v->prec));
      }));
  add("rescale-swapped", "the rescale exponent subtracts the old floored maximum from the new one",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::SetLocal || s->name.rfind("os_rescale_", 0) != 0) return s;
        const ExprP& e = s->value;  // exp(sub(a, b))
        const ExprP& d = e->args[0];
        return set_local(s->name, unary(UnOp::Exp, binary(BinOp::Sub, d->args[1], d->args[0], d->prec), e->prec));
      }));
  add("block-sum-skips-last-key", "the block's sum skips the block's last key",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::For || s->body.size() != 1 || s->body[0]->kind != StmtKind::SetLocal ||
            s->body[0]->name.rfind("os_block_sum_", 0) != 0 || s->to <= s->from)
          return s;
        auto c = std::make_shared<Stmt>(*s);
        c->to -= 1;
        return c;
      }));
  add("exps-shifted-by-previous-max", "the block's exponentials are shifted by the previous floored maximum",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::Set || s->name != fp.tile || !s->value || s->value->kind != ExprKind::Unary ||
            s->value->unop() != UnOp::Exp)
          return s;
        const ExprP& d = s->value->args[0];
        ExprP prev = binary(BinOp::Max, get_local(fp.mp, sp), constant(-max_finite(sp), sp), sp);
        return set(s->name, s->indices,
                   unary(UnOp::Exp, binary(BinOp::Sub, d->args[0], prev, d->prec), s->value->prec));
      }));
  add("contraction-short", "the score contraction stops one step early",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::For || s->body.size() != 1 || s->body[0]->kind != StmtKind::Set ||
            s->body[0]->name != fp.tile || s->to <= s->from)
          return s;
        bool accumulates = false;
        for_each_expr(s->body[0]->value, [&](const Expr& x) {
          if (x.kind == ExprKind::Get && x.name == fp.tile) accumulates = true;
        });
        bool over_keys = false;
        for (const Index& i : s->body[0]->indices) over_keys = over_keys || i.mentions(s->sym);
        if (!accumulates || over_keys) return s;
        auto c = std::make_shared<Stmt>(*s);
        c->to -= 1;
        return c;
      }));
  // The output alone (refuted through `fold-output`'s certified check). (A numerator
  // tile not cleared per row is no mutant: each row has its own cells, zero from the start.)
  auto numerator = [](const Stmt& st) {
    return st.kind == StmtKind::Set && st.name.rfind("os_block_numerator_", 0) == 0 && st.value;
  };
  add("numerator-not-rescaled", "the numerator tile is not rescaled when the maximum rises",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (!numerator(*s) || s->value->kind != ExprKind::Binary || s->value->binop() != BinOp::Mul) return s;
        return noop();
      }));
  add("output-on-first-block", "O = U / l is written after the first block instead of the last",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::If || !s->value || s->value->kind != ExprKind::Binary ||
            s->value->binop() != BinOp::Eq || s->value->args[1]->kind != ExprKind::Const)
          return s;
        auto c = std::make_shared<Stmt>(*s);
        c->value = binary(BinOp::Eq, s->value->args[0], constant(0.0, Prec::I32), Prec::I32);
        return StmtP(c);
      }));
  add("numerator-reads-first-value", "the numerator accumulates every key's weight times the block's first value",
      map_fold_body(tgt, fp, [&](const StmtP& s) -> StmtP {
        if (s->kind != StmtKind::For || s->body.size() != 1) return s;
        const bool guarded = s->body[0]->kind == StmtKind::If && s->body[0]->body.size() == 1;
        const StmtP& acc = guarded ? s->body[0]->body[0] : s->body[0];
        if (!numerator(*acc) || acc->value->kind != ExprKind::Binary || acc->value->binop() != BinOp::Add) return s;
        ExprP v = map_expr(acc->value, [&](const ExprP& x) -> ExprP {
          if (x->kind != ExprKind::Get || x->name == fp.tile || x->name == acc->name) return x;
          auto g = std::make_shared<Expr>(*x);
          for (auto& i : g->indices) i = subst(i, s->sym, Index::fixed(0));
          return g;
        });
        StmtP mutated = set(acc->name, acc->indices, v);
        if (guarded) {
          auto g = std::make_shared<Stmt>(*s->body[0]);
          g->body = {mutated};
          mutated = g;
        }
        auto c = std::make_shared<Stmt>(*s);
        c->body = {mutated};
        return StmtP(c);
      }));
  // The skip of fully masked blocks (block_fold.h, "SKIPS"), when the fold has one: the live
  // condition is `if c` before `if c == 0`.
  auto skip_pair = [](const std::vector<StmtP>& body) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i + 1 < body.size(); ++i)
      if (body[i]->kind == StmtKind::If && body[i + 1]->kind == StmtKind::If &&
          equal(body[i + 1]->value, binary(BinOp::Eq, body[i]->value, constant(0.0, Prec::I32), Prec::I32)))
        return i;
    return std::nullopt;
  };
  auto mutate_skip = [&](const std::function<void(std::vector<StmtP>&, std::size_t)>& g) {
    return mutate_fold(tgt, fp, [&](const Stmt& scan) {
      auto c = std::make_shared<Stmt>(scan);
      if (auto at = skip_pair(c->body)) g(c->body, *at);
      return StmtP(c);
    });
  };
  std::vector<StmtP> scan_body;
  mutate_fold(tgt, fp, [&](const Stmt& scan) {
    scan_body = scan.body;
    return std::make_shared<Stmt>(scan);
  });
  if (skip_pair(scan_body)) {
    add("skip-live-block", "the live condition tests the block's second key: a block whose first key alone is live is "
                           "skipped",
        mutate_skip([&](std::vector<StmtP>& body, std::size_t at) {
          const ExprP c = map_expr(body[at]->value, [&](const ExprP& x) -> ExprP {
            if (x->kind != ExprKind::EmbedIndex || x->indices[0].terms.empty()) return x;
            bool keyed = false;  // the block's first key: a multiple of the block symbol
            for (const auto& t : x->indices[0].terms) keyed = keyed || t.sym.rfind("os_block_", 0) == 0;
            if (!keyed || x->indices[0].terms.size() != 1) return x;
            Index i = x->indices[0];
            i.offset += 1;
            return embed_index(i, x->prec);
          });
          for (std::size_t k : {at, at + 1}) {
            auto g = std::make_shared<Stmt>(*body[k]);
            g->value = k == at ? c : binary(BinOp::Eq, c, constant(0.0, Prec::I32), Prec::I32);
            body[k] = g;
          }
        }));
    add("skip-without-zero-sum", "a skipped block rescales the numerator but drops its zero sum (-0 + 0·v: NaN from "
                                 "an infinite or NaN value of a masked key)",
        mutate_skip([&](std::vector<StmtP>& body, std::size_t at) {
          auto g = std::make_shared<Stmt>(*body[at + 1]);
          g->body = map_stmt(seq(g->body), [&](const StmtP& s) -> StmtP {
                      if (!numerator(*s) || s->value->kind != ExprKind::Binary || s->value->binop() != BinOp::Add)
                        return s;
                      return set(s->name, s->indices, s->value->args[0]);
                    })->body;
          body[at + 1] = g;
        }));
    add("skip-resets-max", "a skipped block resets the running maximum to -inf",
        mutate_skip([&](std::vector<StmtP>& body, std::size_t at) {
          auto g = std::make_shared<Stmt>(*body[at + 1]);
          g->body = map_stmt(seq(g->body), [&](const StmtP& s) -> StmtP {
                      if (s->kind != StmtKind::SetLocal || s->name != fp.rmax) return s;
                      return set_local(fp.rmax, constant(-INFINITY, sp));
                    })->body;
          body[at + 1] = g;
        }));
  }
  return out;
}

}  // namespace fp::osm
