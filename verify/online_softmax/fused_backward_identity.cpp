// The fused backward's term identity (verify/online_softmax/fused_backward_identity.h).

#include "verify/online_softmax/fused_backward_identity.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "verify/bounds/rounding_model.h"
#include "verify/online_softmax/bounds/backward_bound.h"
#include "verify/phase_clock.h"
#include "verify/symbolic/symexec.h"

namespace fp::verify {

namespace {

[[noreturn]] void fail(const std::string& why) {
  throw std::runtime_error(why);
}

bool is_zero(TermP t) {
  return t->op == TermOp::Const && t->value == 0;
}

// q is p or carried wider: its rounding errors are within p's (u_q <= u_p, ω_q <= ω_p).
bool within(Prec q, Prec p) {
  return is_float(q) && unit_roundoff(q) <= unit_roundoff(p) && underflow_error(q) <= underflow_error(p);
}

// A conversion that widens a value exactly (to a precision that holds every value of the source's).
TermP strip_widening(TermP t) {
  while (t->op == TermOp::Cvt && is_float(t->args[0]->prec) &&
         significand_bits(t->prec) >= significand_bits(t->args[0]->prec) && within(t->prec, t->args[0]->prec))
    t = t->args[0];
  return t;
}

// A left-to-right sum from 0: acc_k = acc_{k-1} + y_k, acc_0 the constant 0, every addition at a
// precision `ok` accepts. The y's in order.
std::vector<TermP> summands(TermP t, const std::string& what, const std::function<bool(Prec)>& ok) {
  std::vector<TermP> out;
  while (!is_zero(t)) {
    if (t->op != TermOp::Add) fail(fmt::format("{} is not a sum from 0 (found {})", what, print_term(t, 3)));
    if (!ok(t->prec)) fail(fmt::format("{} adds at {}", what, prec_name(t->prec)));
    out.push_back(t->args[1]);
    t = t->args[0];
  }
  return {out.rbegin(), out.rend()};
}

// 0 + y or y + 0 (exact): y.
TermP strip_zero_adds(TermP t) {
  while (t->op == TermOp::Add && (is_zero(t->args[0]) || is_zero(t->args[1]))) t = is_zero(t->args[0]) ? t->args[1] : t->args[0];
  return t;
}

// The links between a contraction's factor and the score gradient: where's (condition, 0-branch
// position), and the scale constant. `0 + y` links are dropped (exact).
struct Chain {
  std::vector<std::pair<TermP, int>> wheres;
  TermP scale = nullptr;
  Prec scale_prec = Prec::F32;  // the scale product's precision
  TermP leaf = nullptr;
};
Chain chain_of(TermP t) {
  Chain c;
  for (;;) {
    t = strip_zero_adds(t);
    if (t->op == TermOp::Where && (is_zero(t->args[1]) || is_zero(t->args[2])) && !(is_zero(t->args[1]) && is_zero(t->args[2]))) {
      const int zero_at = is_zero(t->args[1]) ? 1 : 2;
      c.wheres.push_back({t->args[0], zero_at});
      t = t->args[3 - zero_at];
      continue;
    }
    if (t->op == TermOp::Mul && !c.scale && (t->args[0]->op == TermOp::Const || t->args[1]->op == TermOp::Const) &&
        !(t->args[0]->op == TermOp::Const && t->args[1]->op == TermOp::Const)) {
      const bool first = t->args[0]->op == TermOp::Const;
      c.scale = t->args[first ? 0 : 1];
      c.scale_prec = t->prec;
      t = t->args[first ? 1 : 0];
      continue;
    }
    c.leaf = t;
    return c;
  }
}

// The cells of a node by term (the first cell holding it).
std::unordered_map<TermP, std::int64_t> cell_index(const std::vector<TermP>& cells) {
  std::unordered_map<TermP, std::int64_t> out;
  for (std::size_t i = 0; i < cells.size(); ++i) out.emplace(cells[i], static_cast<std::int64_t>(i));
  return out;
}

// Either operand order of a binary term: the argument equal to `a` first.
bool split(TermP t, TermOp op, TermP a, TermP& other) {
  if (t->op != op) return false;
  if (t->args[0] == a) {
    other = t->args[1];
    return true;
  }
  if (t->args[1] == a) {
    other = t->args[0];
    return true;
  }
  return false;
}

struct Context {
  const std::vector<TermP>* p = nullptr;      // source probabilities
  const std::vector<TermP>* dp = nullptr;     // source probability gradient
  const std::vector<TermP>* o = nullptr;      // source forward output
  std::unordered_map<TermP, std::int64_t> p_cell, dp_cell;
  // The source's output-gradient cells: an input's variables, or the terms a stacked step's later
  // layer computed them as (its dQ), by value term.
  std::unordered_map<TermP, std::int64_t> dout_cell;
  Prec prec = Prec::F32;  // the covered gradient's precision: the composed form runs at it throughout
  bool at_p(Prec q) const { return q == prec; }
  std::map<std::int64_t, std::shared_ptr<const BackwardPairTerms::Pairs>> rows;  // memo: lg term id -> row
  std::map<std::int64_t, std::shared_ptr<const BackwardPairTerms::Pairs>> dots;  // memo: D term id -> dot
};

// The dO cells one dP reads: dP = Σ_e dO_e·v_e from 0, dO_e the term of a cell of the dout node.
std::vector<TermP> dout_cells_of(TermP dp, const Context& cx, Prec p) {
  std::vector<TermP> out;
  for (TermP y : summands(dp, "a probability gradient", [p](Prec q) { return q == p; })) {
    if (y->op != TermOp::Mul) fail("a probability gradient's summand is not a product");
    TermP v = nullptr;
    for (TermP a : {y->args[0], y->args[1]})
      if (!v && cx.dout_cell.count(a)) v = a;
    if (!v) fail("a probability gradient's product reads no output-gradient cell");
    out.push_back(v);
  }
  return out;
}

// ng = (a + lg)·e on the source side; fills the pair's row.
void check_composed(TermP ng, TermP e, TermP l, TermP dp, Context& cx, BackwardPairTerms& pair) {
  TermP eg = nullptr;
  if (!split(ng, TermOp::Mul, e, eg) || !cx.at_p(ng->prec))
    fail("the source's score gradient is not a product with the pair's exponential at the gradient's precision");
  eg = strip_zero_adds(eg);
  if (eg->op != TermOp::Add || !cx.at_p(eg->prec)) fail("the source's exponential gradient is not a + lg");
  TermP a = strip_zero_adds(eg->args[0]), lg = eg->args[1];
  if (!(a->op == TermOp::Div && a->args[0] == dp && a->args[1] == l)) {
    a = strip_zero_adds(eg->args[1]);
    lg = eg->args[0];
  }
  if (!(a->op == TermOp::Div && a->args[0] == dp && a->args[1] == l) || !cx.at_p(a->prec))
    fail("the source's exponential gradient has no dP / l");
  auto memo = cx.rows.find(static_cast<std::int64_t>(lg->id));
  if (memo == cx.rows.end()) {
    BackwardPairTerms::Pairs row;
    std::set<std::int64_t> seen;
    for (TermP y : summands(lg, "the source's sum gradient", [&](Prec q) { return cx.at_p(q); })) {
      // dP_t·(−e_t / (l·l)), either order, at p.
      if (y->op != TermOp::Mul || !cx.at_p(y->prec)) fail("a summand of the sum gradient is not a product at p");
      TermP d = y->args[0], w = y->args[1];
      if (!cx.dp_cell.count(d)) std::swap(d, w);
      auto dc = cx.dp_cell.find(d);
      if (dc == cx.dp_cell.end()) fail("a summand of the sum gradient reads no probability-gradient cell");
      if (!(w->op == TermOp::Div && w->args[0]->op == TermOp::Neg && w->args[1]->op == TermOp::Mul &&
            w->args[1]->args[0] == l && w->args[1]->args[1] == l && cx.at_p(w->prec) && cx.at_p(w->args[1]->prec)))
        fail("a summand of the sum gradient is not dP·(−e / (l·l)) with the pair's l");
      TermP et = w->args[0]->args[0];
      TermP pt = (*cx.p)[static_cast<std::size_t>(dc->second)];
      if (!(pt->op == TermOp::Div && pt->args[0] == et && pt->args[1] == l))
        fail("a summand of the sum gradient pairs dP with another key's exponential");
      if (!seen.insert(dc->second).second) fail("the sum gradient counts a key twice");
      row.push_back({et, d});
    }
    memo = cx.rows.emplace(static_cast<std::int64_t>(lg->id), std::make_shared<const BackwardPairTerms::Pairs>(std::move(row))).first;
  }
  bool in_row = false;
  for (const auto& [et, d] : *memo->second) in_row = in_row || (et == e && d == dp);
  if (!in_row) fail("the sum gradient's row does not hold the pair");
  pair.row = memo->second;
}

// ds = p·(dP − D) on the target side; fills the pair's terms. The product and the subtraction may
// run at a precision q within p's (the operands widened exactly), ds then rounded once to p; D may
// be summed at such a q and rounded once to p.
void check_fused(TermP ds, Context& cx, BackwardPairTerms& pair) {
  const Prec p = cx.prec;
  auto carried = [p](Prec q) { return within(q, p); };
  if (ds->op == TermOp::Cvt && ds->prec == p && carried(ds->args[0]->prec)) ds = ds->args[0];
  if (ds->op != TermOp::Mul || !carried(ds->prec))
    fail(fmt::format("the target's score gradient is not a product (found {})", print_term(ds, 3)));
  TermP pt = strip_widening(ds->args[0]), diff = strip_widening(ds->args[1]);
  if (!cx.p_cell.count(pt)) {
    pt = strip_widening(ds->args[1]);
    diff = strip_widening(ds->args[0]);
  }
  auto pc = cx.p_cell.find(pt);
  if (pc == cx.p_cell.end()) fail("the target's score gradient does not read the source's probabilities");
  if (!(pt->op == TermOp::Div)) fail("the probabilities are not e / l");
  if (diff->op != TermOp::Sub || !carried(diff->prec)) fail("the target's score gradient is not p·(dP − D)");
  TermP dp = strip_widening(diff->args[0]), D = strip_widening(diff->args[1]);
  if (D->op == TermOp::Cvt && D->prec == p && carried(D->args[0]->prec)) D = D->args[0];
  auto dc = cx.dp_cell.find(dp);
  if (dc == cx.dp_cell.end() || dc->second != pc->second)
    fail("the target's dP is not the source's probability gradient at the pair's cell");
  pair.e = pt->args[0];
  pair.l = pt->args[1];
  pair.dp = dp;
  const std::vector<TermP> douts = dout_cells_of(dp, cx, p);
  std::set<TermP> want(douts.begin(), douts.end()), got;
  auto memo = cx.dots.find(static_cast<std::int64_t>(D->id));
  if (memo != cx.dots.end()) {
    for (const auto& [g, ov] : *memo->second) got.insert(g);
    if (got != want) fail("the row dot is not over the pair's row");
    pair.dot = memo->second;
    return;
  }
  BackwardPairTerms::Pairs dot;
  for (TermP y : summands(D, "the target's row dot", carried)) {
    if (y->op != TermOp::Mul || !carried(y->prec)) fail("a summand of the row dot is not a product");
    TermP g = strip_widening(y->args[0]), ov = strip_widening(y->args[1]);
    if (!want.count(g)) std::swap(g, ov);
    if (!want.count(g)) fail("the row dot reads an output-gradient cell outside the pair's row");
    const std::int64_t cell = cx.dout_cell.at(g);
    if (cell < 0 || static_cast<std::size_t>(cell) >= cx.o->size() || (*cx.o)[static_cast<std::size_t>(cell)] != ov)
      fail("the row dot pairs dO with another cell of O");
    if (!got.insert(g).second) fail("the row dot counts a value column twice");
    dot.push_back({g, ov});
  }
  if (got != want) fail("the row dot misses a value column of the pair's row");
  pair.dot = cx.dots.emplace(static_cast<std::int64_t>(D->id), std::make_shared<const BackwardPairTerms::Pairs>(std::move(dot))).first->second;
}

BackwardPairTerms check_pair(TermP s_prod, TermP t_prod, Context& cx) {
  BackwardPairTerms pair;
  if (s_prod->op != TermOp::Mul || t_prod->op != TermOp::Mul || !cx.at_p(s_prod->prec) || !cx.at_p(t_prod->prec))
    fail("a summand of the gradient is not a product at the gradient's precision");
  if (s_prod == t_prod) {
    // The same product on both sides: only a masked score's 0 times the operand is expected.
    for (int k : {0, 1})
      if (is_zero(s_prod->args[k])) {
        pair.zero = true;
        pair.operand = s_prod->args[1 - k];
        return pair;
      }
    fail("a product is the same on both sides but not a masked score's 0");
  }
  int op_at = -1;
  for (int k : {0, 1})
    if (s_prod->args[k] == t_prod->args[k]) op_at = k;
  if (op_at < 0) fail("the two sides multiply by different operands at one position");
  pair.operand = s_prod->args[op_at];
  const TermP gs = s_prod->args[1 - op_at], gt = t_prod->args[1 - op_at];
  if (is_zero(gs) && is_zero(gt)) {
    pair.zero = true;
    return pair;
  }
  const Chain cs = chain_of(gs), ct = chain_of(gt);
  if (cs.wheres != ct.wheres || cs.scale != ct.scale || (cs.scale && (!cx.at_p(cs.scale_prec) || !cx.at_p(ct.scale_prec))))
    fail("the links between the score gradient and the contraction differ between the two sides");
  pair.scale = cs.scale ? cs.scale->value : 1.0;
  if (!std::isfinite(pair.scale)) fail("the chain's scale is not a finite constant");
  check_fused(ct.leaf, cx, pair);
  check_composed(cs.leaf, pair.e, pair.l, pair.dp, cx, pair);
  return pair;
}

}  // namespace

BackwardIdentity fused_backward_identity(const Routine& src, const Routine& tgt, const BackwardRoles& roles,
                                         TermStore& store) {
  ScopedPhase phase("symbolic execution");
  BackwardIdentity out;
  auto body = [&]() -> std::string {
    const Node *x = src.find_node(roles.x), *p = src.find_node(roles.p), *dp = src.find_node(roles.dp),
               *dout = src.find_node(roles.dout), *o = src.find_node(roles.o);
    if (!x || !p || !dp || !dout || !o || !tgt.find_node(roles.x))
      fail("a node of the backward's roles is missing from the pair");
    if (p->dims != dp->dims || o->dims != dout->dims)
      fail("the probabilities and their gradient, or O and dO, do not have the same cells");
    const SymMemory ms = symexec(src, store);
    const SymMemory mt = symexec(tgt, store);
    Context cx;
    cx.p = &ms.at(roles.p);
    cx.dp = &ms.at(roles.dp);
    cx.o = &ms.at(roles.o);
    cx.p_cell = cell_index(*cx.p);
    cx.dp_cell = cell_index(*cx.dp);
    const std::vector<TermP>& douts = ms.at(roles.dout);
    for (std::size_t c = 0; c < douts.size(); ++c) cx.dout_cell.emplace(douts[c], static_cast<std::int64_t>(c));
    cx.prec = x->prec;
    if (!is_float(cx.prec)) fail("the covered gradient is not a floating-point node");
    const auto at_p = [&cx](Prec q) { return cx.at_p(q); };
    const std::vector<TermP>& xs = ms.at(roles.x);
    const std::vector<TermP>& xt = mt.at(roles.x);
    std::size_t pairs = 0, zeros = 0;
    for (std::size_t c = 0; c < xs.size(); ++c) {
      BackwardCellTerms cell;
      cell.src = xs[c];
      cell.tgt = xt[c];
      const std::vector<TermP> ys = summands(xs[c], "the source's gradient cell", at_p);
      const std::vector<TermP> yt = summands(xt[c], "the target's gradient cell", at_p);
      if (ys.size() != yt.size())
        fail(fmt::format("cell {} of {} sums {} products in the source and {} in the target", c, roles.x, ys.size(),
                         yt.size()));
      for (std::size_t i = 0; i < ys.size(); ++i) {
        try {
          cell.pairs.push_back(check_pair(ys[i], yt[i], cx));
        } catch (const std::runtime_error& e) {
          fail(fmt::format("cell {} of {}, product {}: {}", c, roles.x, i, e.what()));
        }
        zeros += cell.pairs.back().zero;
      }
      pairs += cell.pairs.size();
      out.cells.push_back(std::move(cell));
    }
    return fmt::format(
        "every cell of {} ({} cells, {} products, {} of them 0 on both sides) sums, on both "
        "sides in the same order, the same operands times the same chain of links over the score gradient: the "
        "composed (dP / l + Σ dP·(−e / l²))·e in the source, p·(dP − Σ dO·O) in the target, from the source's p, dP "
        "and O",
        roles.x, xs.size(), pairs, zeros);
  };
  try {
    out.check.detail = body();
    out.check.proved = true;
  } catch (const TermLimitExceeded& e) {
    out.check.detail = e.what();
    out.check.term_limit = true;
    out.cells.clear();
  } catch (const std::runtime_error& e) {
    out.check.detail = e.what();
    out.cells.clear();
  }
  return out;
}

std::vector<BackwardCellValue> evaluate_backward_cells(const BackwardIdentity& id, const TermStore& store,
                                                       const TensorMap& inputs, Prec p) {
  TermEvaluator ev(store, inputs);
  // Per row (its (e, dP) list and its row dot): the pair bounds of every key, and each key's index.
  struct RowBounds {
    BackwardPairBounds bounds;
    std::map<std::pair<TermP, TermP>, std::size_t> key;
  };
  std::map<std::pair<const void*, const void*>, RowBounds> memo;
  auto row_bounds = [&](const BackwardPairTerms& pr) -> const RowBounds& {
    const auto k = std::make_pair(static_cast<const void*>(pr.row.get()), static_cast<const void*>(pr.dot.get()));
    auto it = memo.find(k);
    if (it != memo.end()) return it->second;
    BackwardRow row;
    RowBounds rb;
    for (std::size_t t = 0; t < pr.row->size(); ++t) {
      const auto& [e, dp] = (*pr.row)[t];
      row.e.push_back(ev.eval(e));
      row.dp.push_back(ev.eval(dp));
      rb.key[{e, dp}] = t;
    }
    row.l = ev.eval(pr.l);
    for (const auto& [g, o] : *pr.dot) {
      row.dout.push_back(ev.eval(g));
      row.o.push_back(ev.eval(o));
    }
    rb.bounds = backward_pair_bounds(row, p);
    return memo.emplace(k, std::move(rb)).first->second;
  };
  std::vector<BackwardCellValue> out;
  out.reserve(id.cells.size());
  for (const BackwardCellTerms& cell : id.cells) {
    BackwardCellValue v;
    v.src = ev.eval(cell.src);
    v.tgt = ev.eval(cell.tgt);
    std::vector<double> terms, operand;
    const auto m = static_cast<std::int64_t>(cell.pairs.size());
    for (const BackwardPairTerms& pr : cell.pairs) {
      operand.push_back(ev.eval(pr.operand));
      if (pr.zero) {
        terms.push_back(0);
        continue;
      }
      const RowBounds& rb = row_bounds(pr);
      if (!rb.bounds.finite) {
        v.bounded = false;
        terms.push_back(0);
        continue;
      }
      terms.push_back(backward_pair_term(rb.bounds, rb.key.at({pr.e, pr.dp}), pr.scale, m, p));
    }
    v.bound = v.bounded ? backward_contraction_bound(terms, operand, p) : 0;
    if (!std::isfinite(v.bound)) v.bounded = false;  // γ undefined at these sizes: no bound
    out.push_back(v);
  }
  return out;
}

bool backward_cell_ok(const BackwardCellValue& c) {
  if (std::isnan(c.src) || std::isnan(c.tgt)) return std::isnan(c.src) && std::isnan(c.tgt);
  if (c.src == c.tgt) return true;
  if (!c.bounded) return false;
  return std::nextafter(std::fabs(c.src - c.tgt), std::numeric_limits<double>::infinity()) <= c.bound;
}

}  // namespace fp::verify
