// Bounds downstream of a bounded node (verify/downstream_bounds.h).

#include "verify/downstream_bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/diagnostic.h"
#include "core/ir_visit.h"
#include "verify/bounds/rounding_model.h"
#include "verify/loop_nest.h"
#include "verify/symbolic/symexec.h"

namespace fp::verify {

namespace {

constexpr const char* kAbsdotPrefix = "__fp_absdot_";

struct Affected {
  double rho = 0;
  bool scaled = false;   // relative to Σ|w·v| (absdot node) instead of |value|
  bool tainted = false;  // perturbed by an unknown amount: no bound, and none downstream of it
  std::string formula;
};

std::optional<double> rel_of(const Expr& e, const std::map<std::string, Affected>& aff) {
  auto conv = [&](const ExprP& a, Prec to) -> std::optional<double> {
    auto r = rel_of(*a, aff);
    if (!r) return r;
    return conversion_perturbation(*r, a->prec, to);
  };
  switch (e.kind) {
    case ExprKind::Get: {
      auto it = aff.find(e.name);
      if (it == aff.end()) return 0.0;
      if (it->second.scaled || it->second.tainted) return std::nullopt;
      return it->second.rho;
    }
    case ExprKind::GetLocal:
    case ExprKind::Const:
    case ExprKind::EmbedIndex:
      return 0.0;
    case ExprKind::Unary: {
      auto r = conv(e.args[0], e.prec);
      if (!r) return r;
      switch (e.unop()) {
        case UnOp::Neg:
        case UnOp::Abs:
        case UnOp::Cast:
          return r;
        default:
          return *r == 0 ? std::optional<double>(0.0) : std::nullopt;
      }
    }
    case ExprKind::Binary: {
      auto a = conv(e.args[0], e.prec), b = conv(e.args[1], e.prec);
      if (!a || !b) return std::nullopt;
      switch (e.binop()) {
        case BinOp::Mul:
          return product_perturbation(*a, *b, e.prec);
        case BinOp::Div:
          return quotient_perturbation(*a, *b, e.prec);
        default:
          return *a == 0 && *b == 0 ? std::optional<double>(0.0) : std::nullopt;
      }
    }
    case ExprKind::Ternary: {
      if (e.ternop() != TernOp::Where) {
        for (const auto& a : e.args) {
          auto r = rel_of(*a, aff);
          if (!r || *r != 0) return std::nullopt;
        }
        return 0.0;
      }
      auto c = rel_of(*e.args[0], aff);
      auto a = conv(e.args[1], e.prec), b = conv(e.args[2], e.prec);
      if (!c || *c != 0 || !a || !b) return std::nullopt;
      return std::max(*a, *b);
    }
  }
  return std::nullopt;
}

// The Σ|a·b| nest of the reduction `st` (under `loops`, at top-level position `pos`, storing
// `out`) in f64, and its node, into `plan`; with `weight` naming one factor's node, that factor
// counts as |w| + kappa (Σ (|w| + kappa)·|b|).
void add_absdot(DownstreamPlan& plan, const Node& out, std::size_t pos, const Stmt& st,
                const std::vector<Loop>& loops, const Expr& prod, const std::string& weight = "",
                double kappa = 0) {
  const std::string absdot = kAbsdotPrefix + st.name;
  Node nd;
  nd.name = absdot;
  nd.dims = out.dims;
  nd.prec = Prec::F64;
  nd.is_output = true;
  plan.absdot_nodes.push_back(nd);
  auto factor = [&](const ExprP& x) {
    ExprP m = unary(UnOp::Abs, x, Prec::F64);
    if (!weight.empty() && x->kind == ExprKind::Get && x->name == weight)
      m = binary(BinOp::Add, m, constant(kappa, Prec::F64), Prec::F64);
    return m;
  };
  ExprP mag = binary(BinOp::Mul, factor(prod.args[0]), factor(prod.args[1]), Prec::F64);
  StmtP nest = set(absdot, st.indices, binary(BinOp::Add, get(absdot, st.indices, Prec::F64), mag, Prec::F64));
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) nest = for_loop(it->sym, it->from, it->to, {nest});
  plan.aux.emplace_back(pos, nest);
}

}  // namespace

std::optional<DownstreamPlan> scaled_reduction_plan(const Routine& src, std::size_t pos, double rel, double abs,
                                                    std::string* why, const std::string& weight, double kappa) {
  const std::vector<StmtP> S = top_level_statements(src);
  auto fail = [&](std::string w) -> std::optional<DownstreamPlan> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (pos >= S.size()) return fail("the reduction's statement is out of range");
  std::vector<Loop> loops;
  const Stmt* st = peel(S[pos].get(), loops);
  const Node* out = st->kind == StmtKind::Set ? src.find_node(st->name) : nullptr;
  const ExprP product = reduction_product(*st);
  if (!out || !product)
    return fail(fmt::format("statement {} is not a loop nest around one reduction O += a·b", pos + 1));
  DownstreamPlan plan;
  const Expr& prod = *product;
  if (!weight.empty()) {
    bool found = false;
    for (const auto& f : prod.args) found = found || (f->kind == ExprKind::Get && f->name == weight);
    if (!found) return fail(fmt::format("the reduction at statement {} reads no factor {}", pos + 1, weight));
  }
  add_absdot(plan, *out, pos, *st, loops, prod, weight, kappa);
  NodeCheck c;
  c.node = st->name;
  c.kind = NodeCheck::Kind::Scaled;
  c.scale_node = kAbsdotPrefix + st->name;
  c.rel = rel;
  c.abs = abs;
  c.prec = out->prec;
  c.overflow_tolerant = true;
  plan.checks.push_back(c);
  return plan;
}

DownstreamPlan plan_downstream(const Routine& src, const std::vector<int>& matched, std::size_t anchor_pos,
                               const std::string& l, double rel_l, const std::vector<std::string>& co_perturbed) {
  DownstreamPlan plan;
  std::map<std::string, Affected> aff{{l, Affected{rel_l, false, false, "REL"}}};
  std::vector<std::string>& notes = plan.notes;
  for (const std::string& n : co_perturbed) {
    if (n == l) continue;
    aff[n] = Affected{0, false, true, "another claim's"};
    notes.push_back(fmt::format("{} is changed by the same rewrite under another claim: nothing computed from it is "
                                "bounded by this one",
                                n));
    plan.note_nodes.push_back(n);
  }
  const std::vector<StmtP> S = top_level_statements(src);
  for (std::size_t pos = anchor_pos + 1; pos < S.size(); ++pos) {
    bool part_of_match = std::find(matched.begin(), matched.end(), static_cast<int>(pos + 1)) != matched.end();
    if (part_of_match) continue;
    std::set<std::string> reads, writes;
    for_each_stmt(S[pos], [&](const Stmt& st) {
      if (st.kind == StmtKind::Set || st.kind == StmtKind::Zero) writes.insert(st.name);
      for_each_own_expr(st, [&](const ExprP& e) {
        for_each_expr(e, [&](const Expr& x) {
          if (x.kind == ExprKind::Get) reads.insert(x.name);
        });
      });
    });
    bool reads_aff = false;
    for (const auto& r : reads) reads_aff = reads_aff || aff.count(r);
    for (const auto& w : writes)
      if (aff.count(w) && !aff.at(w).tainted && w != l) {
        aff[w].tainted = true;
        notes.push_back(fmt::format("{} is written again by statement {}: no downstream bound", w, pos + 1));
        plan.note_nodes.push_back(w);
      }
    if (!reads_aff) continue;
    std::vector<Loop> loops;
    const Stmt* st = peel(S[pos].get(), loops);
    // Everything a statement without a derived bound writes is perturbed by an unknown amount,
    // and so is everything computed from it: it must never count as unperturbed further down.
    auto no_bound = [&] {
      for (const auto& w : writes) {
        if (!aff.count(w) || !aff.at(w).tainted) {
          notes.push_back(fmt::format("no bound derived for {} (statement {})", w, pos + 1));
          plan.note_nodes.push_back(w);
        }
        Affected t;
        t.tainted = true;
        aff[w] = t;
      }
    };
    if (st->kind != StmtKind::Set || writes.size() != 1) {
      no_bound();
      continue;
    }
    const Node* out = src.find_node(st->name);
    bool self = reads.count(st->name) > 0;
    if (!self) {
      auto r = rel_of(*st->value, aff);
      if (!r || !std::isfinite(*r)) {
        no_bound();
        continue;
      }
      double rho = conversion_perturbation(*r, st->value->prec, out->prec);
      aff[st->name] = Affected{rho, false, false, "pointwise"};
      continue;
    }
    // A reduction T[ti] = add(T[ti], mul(a, b)) with one perturbed factor.
    const ExprP prod = reduction_product(*st);
    if (!prod) {
      no_bound();
      continue;
    }
    auto ra = rel_of(*prod->args[0], aff), rb = rel_of(*prod->args[1], aff);
    if (!ra || !rb || (*ra != 0 && *rb != 0)) {
      no_bound();
      continue;
    }
    std::int64_t n_red = 1;
    for (const auto& lp : loops)
      if (!mentions(st->indices, lp.sym)) n_red *= trips(lp);
    double rw = conversion_perturbation(std::max(*ra, *rb), (*ra != 0 ? prod->args[0] : prod->args[1])->prec,
                                        prod->prec);
    double rho = dot_perturbation(rw, n_red, out->prec) * (1 + static_cast<double>(n_red) * 0x1p-50);
    if (!std::isfinite(rho)) {
      no_bound();
      continue;
    }
    aff[st->name] = Affected{rho, true, false, "dot"};
    add_absdot(plan, *out, pos, *st, loops, *prod);
  }
  std::vector<std::string> order{l};
  for (const auto& [node, a] : aff) {
    if (node == l || std::find(co_perturbed.begin(), co_perturbed.end(), node) != co_perturbed.end()) continue;
    if (a.tainted)
      plan.unbounded.push_back(node);
    else
      order.push_back(node);
  }
  for (const auto& node : order) {
    const Affected& a = aff.at(node);
    NodeCheck c;
    c.node = node;
    c.rel = a.rho;
    const Node* nd = src.find_node(node);
    c.prec = nd->prec;
    c.overflow_tolerant = node != l;  // l <= n never overflows; downstream values may
    if (a.scaled) {
      c.kind = NodeCheck::Kind::Scaled;
      c.scale_node = kAbsdotPrefix + node;
      c.abs = 4 * static_cast<double>(nd->cell_count()) * underflow_error(nd->prec);
    } else {
      c.kind = NodeCheck::Kind::Relative;
      c.abs = node == l ? 0 : 4 * underflow_error(nd->prec);
    }
    plan.checks.push_back(c);
    if (node != l)
      plan.bounds.push_back(DownstreamBound{
          node,
          a.scaled
              ? fmt::format("|{0}_tgt - {0}_src| <= rho·Σ|w·v| + abs, rho = REL_w + γ_n(u)(2 + REL_w)", node)
              : fmt::format("|{0}_tgt - {0}_src| <= rho·|{0}_src| + abs (propagated through mul/div/where)",
                            node),
          a.rho, a.scaled ? "Σ|w·v|" : "|" + node + "_src|", 0});
  }
  return plan;
}

Routine instrument_source(const Routine& src, const std::vector<const DownstreamPlan*>& plans,
                          const std::vector<std::string>& watched, bool keep_outputs) {
  Routine out = with_outputs(src, watched, keep_outputs);
  const std::vector<StmtP> S = top_level_statements(src);
  std::vector<StmtP> body;
  for (std::size_t pos = 0; pos < S.size(); ++pos) {
    body.push_back(S[pos]);
    for (const DownstreamPlan* p : plans)
      for (const auto& [at, st] : p->aux)
        if (at == pos) body.push_back(st);
  }
  out.body = seq(std::move(body));
  for (const DownstreamPlan* p : plans)
    for (const Node& n : p->absdot_nodes)
      if (!out.find_node(n.name)) out.nodes.push_back(n);
  return out;
}

}  // namespace fp::verify
