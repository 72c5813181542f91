// Mutants of an online-softmax.fused-backward target (mutants.h): planted bugs of the emitted row
// dot D and the three gradient nests, each refuted through the exact `backward-dv` (bitwise) or
// through `backward-dq` / `backward-dk` (the f64 shadows computing another function).

#include <cmath>
#include <optional>

#include "rewrites/online_softmax/ir_map.h"
#include "rewrites/online_softmax/mutants.h"
#include "rewrites/online_softmax/routine_view.h"

namespace fp::osm {

namespace {

bool starts(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

Routine with_body(const Routine& r, StmtP body) {
  Routine out = r;
  out.body = std::move(body);
  return out;
}

// ds lives in dp's tile when both are at one precision, else in its own.
bool ds_tile(const std::string& n, const std::string& nest) {
  return starts(n, "os_bwd_dscore_" + nest) || starts(n, "os_bwd_dprob_" + nest);
}

// Every Set of a node named with `prefix` (or, for "ds:<nest>", ds's tile) gets its value rewritten
// by `f` (bottom-up).
Routine map_sets(const Routine& r, const std::string& prefix, const ExprMap& f) {
  return with_body(r, map_stmt(r.body, [&](const StmtP& s) -> StmtP {
                     const bool hit =
                         starts(prefix, "ds:") ? ds_tile(s->name, prefix.substr(3)) : starts(s->name, prefix);
                     if (s->kind != StmtKind::Set || !hit) return s;
                     auto c = std::make_shared<Stmt>(*s);
                     c->value = map_expr(s->value, f);
                     return c;
                   }));
}

// Every loop whose single statement is a Set of a node named with `prefix` (and whose value
// satisfies `value_ok`) rewritten by `f`.
Routine map_loops_over(const Routine& r, const std::string& prefix,
                       const std::function<bool(const Stmt&)>& pick,
                       const std::function<StmtP(const Stmt&)>& f) {
  return with_body(r, map_stmt(r.body, [&](const StmtP& s) -> StmtP {
                     if (s->kind != StmtKind::For || s->body.size() != 1 || !s->body[0]) return s;
                     const Stmt& inner = *s->body[0];
                     if (inner.kind != StmtKind::Set || !starts(inner.name, prefix) || !pick(inner)) return s;
                     return f(*s);
                   }));
}

}  // namespace

std::vector<Mutant> fused_backward_mutants(const Routine& tgt, const Application& app) {
  std::vector<Mutant> out;
  const std::string o = matched_node(app, "o"), v = matched_node(app, "v"), q = matched_node(app, "q"), k = matched_node(app, "k"),
                    dout = matched_node(app, "dO"), dq = matched_node(app, "dQ");
  if (o.empty() || v.empty() || q.empty() || k.empty()) return out;
  auto add = [&](std::string id, std::string what, Routine r) {
    out.push_back(Mutant{std::move(id), std::move(what), std::move(r)});
  };
  auto rename = [](const std::string& from, const std::string& to) {
    return [from, to](const ExprP& x) -> ExprP {
      if (x->kind != ExprKind::Get || x->name != from) return x;
      auto c = std::make_shared<Expr>(*x);
      c->name = to;
      return c;
    };
  };
  // D.
  add("rowdot-reads-v", "D = Σ dO·v instead of Σ dO·O",
      with_body(tgt, map_stmt(tgt.body, [&](const StmtP& s) -> StmtP {
                  if (s->kind != StmtKind::SetLocal || !starts(s->name, "bw_rowdot_acc")) return s;
                  auto c = std::make_shared<Stmt>(*s);
                  c->value = map_expr(s->value, rename(o, v));
                  return c;
                })));
  add("rowdot-half-width", "D sums only the first half of the value width",
      with_body(tgt, map_stmt(tgt.body, [&](const StmtP& s) -> StmtP {
                  if (s->kind != StmtKind::For || s->body.size() != 1 ||
                      s->body[0]->kind != StmtKind::SetLocal || !starts(s->body[0]->name, "bw_rowdot_acc") ||
                      s->to <= s->from)
                    return s;
                  auto c = std::make_shared<Stmt>(*s);
                  c->to = s->from + (s->to - s->from + 1) / 2 - 1;
                  return c;
                })));
  // p.
  add("p-not-normalized", "p recomputed as exp(x - m) without dividing by l, in every nest",
      map_sets(tgt, "os_bwd_probs_", [&](const ExprP& x) -> ExprP {
        // p = e / l: the one division of the line, by l's node.
        const bool over_l =
            is_binary(x, BinOp::Div) && x->args[1]->kind == ExprKind::Get && !starts(x->args[1]->name, "os_bwd_");
        return over_l ? x->args[0] : x;
      }));
  add("p-unmasked-in-dv", "dV's p recomputed without the mask's where",
      map_sets(tgt, "os_bwd_probs_dv", [&](const ExprP& x) -> ExprP {
        return x->kind == ExprKind::Ternary && x->ternop() == TernOp::Where ? x->args[1] : x;
      }));
  add("shift-sign-in-dk", "dK's p recomputed from exp(m - x) instead of exp(x - m)",
      map_sets(tgt, "os_bwd_probs_dk", [&](const ExprP& x) -> ExprP {
        // n = x - m: the one subtraction of the line, of m's node.
        if (!is_binary(x, BinOp::Sub) || x->args[1]->kind != ExprKind::Get || starts(x->args[1]->name, "os_bwd_"))
          return x;
        return binary(BinOp::Sub, x->args[1], x->args[0], x->prec);
      }));
  // dp and ds.
  add("dp-short-channel", "dQ's dp sums one value-width cell less",
      map_loops_over(
          tgt, "os_bwd_dprob_dq", [](const Stmt& s) { return s.value && s.value->kind == ExprKind::Binary; },
          [](const Stmt& loop) -> StmtP {
            auto c = std::make_shared<Stmt>(loop);
            if (c->to > c->from) c->to -= 1;
            return c;
          }));
  add("dp-reads-dout-for-v", "dK's dp reads the key's row of dO instead of v",
      map_sets(tgt, "os_bwd_rows_" + v + "_dk", rename(v, dout)));
  add("ds-sign", "ds = p·(D - dp) instead of p·(dp - D)", map_sets(tgt, "ds:", [&](const ExprP& x) -> ExprP {
        if (!is_binary(x, BinOp::Sub) || x->args[0]->kind != ExprKind::Get ||
            !starts(x->args[0]->name, "os_bwd_dprob_"))
          return x;
        return binary(BinOp::Sub, x->args[1], x->args[0], x->prec);
      }));
  add("ds-mask-dropped", "the mask's where dropped from ds (a masked cell's score gradient not 0)",
      map_sets(tgt, "ds:", [&](const ExprP& x) -> ExprP {
        return x->kind == ExprKind::Ternary && x->ternop() == TernOp::Where ? x->args[1] : x;
      }));
  add("ds-scale-dropped-in-dq", "dQ's ds without the score scale",
      map_sets(tgt, "ds:dq", [&](const ExprP& x) -> ExprP {
        // The scale link: ds times a constant (the only such product in ds's expression).
        if (!is_binary(x, BinOp::Mul) || x->args[1]->kind != ExprKind::Const) return x;
        return x->args[0];
      }));
  // The skips of fully masked blocks.
  add("skip-guard-off-by-one",
      "a block's live condition tested one pair inward (a block whose only live pair is its first key, or "
      "its last query row, is skipped)",
      with_body(tgt, map_stmt(tgt.body, [&](const StmtP& s) -> StmtP {
                  if (s->kind != StmtKind::If || !s->value) return s;
                  auto c = std::make_shared<Stmt>(*s);
                  bool shifted = false;
                  c->value = map_expr(s->value, [&](const ExprP& x) -> ExprP {
                    if (shifted || !is_binary(x, BinOp::Lt) || x->args[0]->kind != ExprKind::EmbedIndex) return x;
                    shifted = true;
                    auto a = std::make_shared<Expr>(*x->args[0]);
                    a->indices[0].offset += 1;
                    return binary(BinOp::Lt, a, x->args[1], x->prec);
                  });
                  return c;
                })));
  // The gradients.
  add("dk-contracts-k", "dK accumulates k·ds instead of q·ds", map_sets(tgt, "os_bwd_grad_dk", rename(q, k)));
  add("dv-skips-first-query", "dV's contraction skips each block's first query row",
      map_loops_over(
          tgt, "os_bwd_grad_dv", [](const Stmt& s) { return s.value && s.value->kind == ExprKind::Binary; },
          [](const Stmt& loop) -> StmtP {
            auto c = std::make_shared<Stmt>(loop);
            c->from = std::min(loop.from + 1, loop.to);
            return c;
          }));
  add("dq-not-written-back", "dQ's row tile is never copied back into dQ",
      with_body(tgt, map_stmt(tgt.body, [&](const StmtP& s) -> StmtP {
                  if (s->kind != StmtKind::For || s->body.size() != 1 || s->body[0]->kind != StmtKind::Set ||
                      s->body[0]->name != dq || !s->body[0]->value ||
                      s->body[0]->value->kind != ExprKind::Get ||
                      !starts(s->body[0]->value->name, "os_bwd_grad_dq"))
                    return s;
                  return noop();
                })));
  return out;
}

}  // namespace fp::osm
