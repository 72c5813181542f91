// The fused backward's gradients in `diff --rewrite` (verify/online_softmax/fused_backward_diff_plan.h,
// docs/bounds.md §8.1).

#include "verify/online_softmax/fused_backward_diff_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>

#include "core/access_census.h"
#include "core/ir_visit.h"
#include "rewrites/online_softmax/claims.h"
#include "verify/bounds/rounding_model.h"
#include "verify/loop_nest.h"
#include "verify/online_softmax/bounds/backward_bound.h"
#include "verify/plan_decline.h"

namespace fp::verify {

namespace {

constexpr const char* kPairPrefix = "__fp_pair_";
constexpr const char* kBoundPrefix = "__fp_gradbound_";

// The one top-level perfect nest that sets `node` (zero-outs aside), its loops and its Set.
struct NestSet {
  std::vector<Loop> loops;
  const Stmt* set = nullptr;
};

// The original routine the plan reads, with its access census (who writes what, where).
struct Source {
  explicit Source(const Routine& r) : routine(r), census(r) {}
  const Routine& routine;
  AccessCensus census;
};

NestSet only_writer(const Source& src, const std::string& node) {
  std::set<std::size_t> tops;
  for (const Access* a : src.census.writes_of(node))
    if (a->kind == AccessKind::Write) tops.insert(a->top);
  if (tops.empty()) decline("no statement sets {}", node);
  if (tops.size() > 1) decline("{} is set by more than one statement", node);
  NestSet ns;
  ns.set = peel(src.census.top_level()[*tops.begin()], ns.loops);
  if (ns.set->kind != StmtKind::Set || ns.set->name != node) decline("{} is not set by one perfect loop nest", node);
  return ns;
}

std::vector<std::string> plain_symbols(const std::vector<Index>& idx, const std::string& node) {
  std::vector<std::string> out;
  for (const Index& i : idx) {
    if (!i.is_plain_iterator()) decline("{} is not read or written with plain loop symbols", node);
    out.push_back(i.terms[0].sym);
  }
  return out;
}

bool is_get(const ExprP& e, const std::string& node) {
  return e->kind == ExprKind::Get && e->name == node;
}

bool is_binary(const ExprP& e, BinOp op) {
  return e->kind == ExprKind::Binary && e->binop() == op;
}

// The product of `set`, an accumulation X = X + a·b; its factors reading `first` and then the other.
std::pair<ExprP, ExprP> accumulated_product(const Stmt& set, const std::string& first) {
  const ExprP prod = reduction_product(set);
  if (!prod) decline("{} is not accumulated as {} = {} + a·b", set.name, set.name, set.name);
  const ExprP &a = prod->args[0], &b = prod->args[1];
  if (is_get(a, first)) return {a, b};
  if (is_get(b, first)) return {b, a};
  decline("the accumulation of {} reads no factor {}", set.name, first);
}

// The position of the one symbol `with` has where `base` has another, all others equal; or -1.
int replaced_axis(const std::vector<std::string>& base, const std::vector<std::string>& with) {
  if (base.size() != with.size()) return -1;
  int at = -1;
  for (std::size_t a = 0; a < base.size(); ++a) {
    if (base[a] == with[a]) continue;
    if (at >= 0 || std::find(base.begin(), base.end(), with[a]) != base.end()) return -1;
    at = static_cast<int>(a);
  }
  return at;
}

const Node& node_of(const Source& src, const std::string& name) {
  const Node* n = src.routine.find_node(name);
  if (!n) decline("the routine has no node {}", name);
  return *n;
}

// One gradient's contraction X += pair·operand, as the bound routine evaluates it.
struct Contraction {
  std::string gradient, pair, operand;  // nodes
  std::int64_t terms = 0;               // m: the trips of the loops X's index does not mention
  Routine routine;                      // Σ pair-term·|operand| per cell, in f64
  enum class Term : std::uint8_t { ScoreGradient, Probabilities } term = Term::ScoreGradient;
};

Contraction contraction_of(const Source& src, const std::string& gradient, const std::string& pair,
                           const std::string& operand, const std::vector<std::int64_t>& pair_dims) {
  const NestSet w = only_writer(src, gradient);
  const auto [pf, of] = accumulated_product(*w.set, pair);
  if (!is_get(of, operand))
    decline("{} accumulates {} times something other than {}", gradient, pair, operand);
  Contraction c;
  c.gradient = gradient;
  c.pair = pair;
  c.operand = operand;
  c.terms = 1;
  for (const Loop& l : w.loops)
    if (!mentions(w.set->indices, l.sym)) c.terms *= trips(l);
  const Node& x = node_of(src, gradient);
  Routine& r = c.routine;
  r.name = "gradient_bound_" + gradient;
  Node pn = make_node(kPairPrefix + gradient, pair_dims, Prec::F64, true);
  Node on = node_of(src, operand);
  on.is_input = true;
  on.is_output = false;
  on.mode = MemMode::Materialized;
  Node bn = make_node(kBoundPrefix + gradient, x.dims, Prec::F64, false, true);
  r.nodes = {pn, on, bn};
  const std::vector<Index>& at = w.set->indices;
  ExprP term =
      binary(BinOp::Mul, get(pn.name, pf->indices, Prec::F64), unary(UnOp::Abs, of, Prec::F64), Prec::F64);
  StmtP nest = set(bn.name, at, binary(BinOp::Add, get(bn.name, at, Prec::F64), term, Prec::F64));
  for (auto it = w.loops.rbegin(); it != w.loops.rend(); ++it)
    nest = for_loop(it->sym, it->from, it->to, {nest});
  r.body = seq({zero(bn.name), nest});
  return c;
}

// The pair layout: p[S] = e[S] / l[S - t]; O and dO in S with the key axis holding the value width.
struct Layout {
  std::vector<std::int64_t> pair_dims, o_dims;
  std::size_t key = 0;
};

Layout read_layout(const Source& src, const std::string& p, const std::string& e, const std::string& l,
                   const std::string& o, const std::string& v, const std::string& dout,
                   const std::string& dp) {
  Layout lay;
  const NestSet ps = only_writer(src, p);
  const ExprP& q = ps.set->value;
  if (!is_binary(q, BinOp::Div) || !is_get(q->args[0], e) || q->args[0]->indices != ps.set->indices ||
      !is_get(q->args[1], l))
    decline("{} is not computed as {} / {} at the same cell", p, e, l);
  const std::vector<std::string> S = plain_symbols(ps.set->indices, p),
                                 L = plain_symbols(q->args[1]->indices, l);
  if (L.size() + 1 != S.size()) decline("{} is not indexed by {}'s symbols less one", l, p);
  std::size_t k = 0;
  while (k < L.size() && L[k] == S[k]) ++k;
  if (!std::equal(L.begin() + static_cast<std::ptrdiff_t>(k), L.end(),
                  S.begin() + static_cast<std::ptrdiff_t>(k) + 1))
    decline("{} is not indexed by {}'s symbols less one", l, p);
  lay.key = k;
  lay.pair_dims = node_of(src, p).dims;
  // O = Σ p·v and dP = Σ dO·v: O and dO indexed like p with the key replaced.
  for (const auto& [x, pair, by] : {std::tuple{o, p, v}, std::tuple{dp, dout, v}}) {
    const NestSet ws = only_writer(src, x);
    const auto [pf, of] = accumulated_product(*ws.set, pair);
    if (!is_get(of, by)) decline("{} is not accumulated from {}·{}", x, pair, by);
    const std::vector<std::string> out = plain_symbols(ws.set->indices, x),
                                   in = plain_symbols(pf->indices, pair);
    const std::vector<std::string>& rows = x == o ? in : out;   // indexed like p
    const std::vector<std::string>& width = x == o ? out : in;  // the key replaced by the value width
    if (replaced_axis(rows, width) != static_cast<int>(k))
      decline("{} and {} do not share the pair's rows with the key axis replaced", x == o ? o : dout,
              x == o ? p : dp);
  }
  lay.o_dims = node_of(src, o).dims;
  std::vector<std::int64_t> row_dims = lay.pair_dims;
  row_dims.erase(row_dims.begin() + static_cast<std::ptrdiff_t>(k));
  std::vector<std::int64_t> o_rows = lay.o_dims;
  if (o_rows.size() != lay.pair_dims.size()) decline("{} does not have the pair's rank", o);
  o_rows.erase(o_rows.begin() + static_cast<std::ptrdiff_t>(k));
  if (node_of(src, l).dims != row_dims || o_rows != row_dims || node_of(src, dout).dims != lay.o_dims ||
      node_of(src, e).dims != lay.pair_dims || node_of(src, dp).dims != lay.pair_dims)
    decline("the shapes of {}, {}, {}, {} and {} do not follow the pair layout of {}", e, l, o, dout, dp, p);
  return lay;
}

// |c| of the chain from dS back to ng: links 0 + y, where(c, y, 0) and at most one product by a
// constant, each at the same cell.
double chain_scale(const Source& src, const std::string& ds, const std::string& ng, const std::string& e,
                   const std::vector<std::int64_t>& pair_dims) {
  double scale = 1;
  int products = 0;
  std::string node = ds;
  for (int link = 0; node != ng; ++link) {
    if (link > 16) decline("the chain from {} does not reach {}", ds, ng);
    const NestSet w = only_writer(src, node);
    ExprP f = w.set->value;
    auto here = [&](const ExprP& x) { return x->kind == ExprKind::Get && x->indices == w.set->indices; };
    if (is_binary(f, BinOp::Add) && is_get(f->args[0], node) && here(f->args[0])) f = f->args[1];
    if (f->kind == ExprKind::Ternary && f->ternop() == TernOp::Where && f->args[2]->kind == ExprKind::Const &&
        f->args[2]->value == 0)
      f = f->args[1];
    if (is_binary(f, BinOp::Mul)) {
      const bool left = f->args[0]->kind == ExprKind::Const;
      if (!left && f->args[1]->kind != ExprKind::Const)
        decline("{} is not a link of the gradient chain", node);
      scale *= std::fabs(f->args[left ? 0 : 1]->value);
      ++products;
      f = f->args[left ? 1 : 0];
    }
    if (!here(f) || node_of(src, f->name).dims != pair_dims)
      decline("{} is not a link of the gradient chain", node);
    node = f->name;
  }
  if (products > 1)
    decline("the chain from {} to {} holds {} products by a constant (the bound counts one)", ng, ds,
            products);
  // ng = (…)·e at the pair's own cell.
  const NestSet w = only_writer(src, ng);
  bool reads_e = false;
  for_each_expr(w.set->value, [&](const Expr& x) {
    reads_e = reads_e || (x.kind == ExprKind::Get && x.name == e && x.indices == w.set->indices);
  });
  if (!reads_e) decline("{} does not read {} at its own cell", ng, e);
  return scale;
}

// |X_tgt - X_src| per cell of a perturbed forward node X within `c` (0 where the node is not
// perturbed; +inf where the check bounds nothing: compare.h's certified_cell_error).
double allowed_error(const std::optional<NodeCheck>& c, double src, const TensorMap& run, std::int64_t cell) {
  if (!c) return 0;
  if (c->kind == NodeCheck::Kind::Bitwise) return 0;
  const double scale = c->kind == NodeCheck::Kind::Scaled ? run.at(c->scale_node).data[static_cast<std::size_t>(cell)] : 0;
  return certified_cell_error(*c, src, scale);
}

// Everything the completion needs, shared by the plan's closure.
struct GradientPlan {
  std::string e, l, dp, ds, o, dout;
  Layout layout;
  double scale = 1;
  Prec prec = Prec::F32;
  std::optional<NodeCheck> l_check, o_check;  // the forward's perturbation of l and O
  std::vector<Contraction> contractions;

  std::vector<Uncertified> complete(TensorMap& run_out, const RunRoutine& run) const;
};

std::vector<Uncertified> GradientPlan::complete(TensorMap& run_out, const RunRoutine& run) const {
  const Tensor &E = run_out.at(e), &Lt = run_out.at(l), &DP = run_out.at(dp), &DS = run_out.at(ds),
               &O = run_out.at(o), &DO = run_out.at(dout);
  const std::vector<std::int64_t>& X = layout.pair_dims;
  const std::size_t k = layout.key;
  const std::int64_t keys = X[k], width = layout.o_dims[k];
  auto strides = [](const std::vector<std::int64_t>& d) {
    std::vector<std::int64_t> s(d.size(), 1);
    for (std::size_t a = d.size(); a-- > 1;) s[a - 1] = s[a] * d[a];
    return s;
  };
  const std::vector<std::int64_t> xs = strides(X), os = strides(layout.o_dims);
  std::map<std::string, Tensor> pair_terms;
  for (const Contraction& c : contractions) pair_terms[c.gradient] = Tensor::zeros(Prec::F64, X);
  const std::int64_t rows = Lt.size();
  std::int64_t outside = 0;  // rows outside the hypotheses that a mask does not account for
  for (std::int64_t r = 0; r < rows; ++r) {
    // The row's offsets in the pair and the O layouts (the l layout is the pair's less the key).
    std::int64_t rest = r, xo = 0, oo = 0;
    for (std::size_t a = X.size(); a-- > 0;) {
      if (a == k) continue;
      const std::int64_t i = rest % X[a];
      rest /= X[a];
      xo += i * xs[a];
      oo += i * os[a];
    }
    BackwardRow row;
    bool all_zero = true;
    for (std::int64_t t = 0; t < keys; ++t) {
      const auto at = static_cast<std::size_t>(xo + t * xs[k]);
      row.e.push_back(E.data[at]);
      row.dp.push_back(DP.data[at]);
      all_zero = all_zero && DS.data[at] == 0;
    }
    row.l = Lt.data[static_cast<std::size_t>(r)];
    row.l_err = allowed_error(l_check, row.l, run_out, r);
    double o_err = 0;
    for (std::int64_t c = 0; c < width; ++c) {
      const std::int64_t at = oo + c * os[k];
      row.o.push_back(O.data[static_cast<std::size_t>(at)]);
      row.dout.push_back(DO.data[static_cast<std::size_t>(at)]);
      o_err += std::fabs(row.dout.back()) * allowed_error(o_check, row.o.back(), run_out, at);
    }
    row.o_err = std::nextafter(o_err * (1 + static_cast<double>(width + 2) * 0x1p-52), INFINITY);
    const BackwardPairBounds pb = backward_pair_bounds(row, prec);
    outside += !pb.finite && !all_zero;
    for (const Contraction& c : contractions) {
      Tensor& out = pair_terms.at(c.gradient);
      std::vector<double> dv;
      if (pb.finite && c.term == Contraction::Term::Probabilities)
        dv = backward_dv_coefficients(pb, row, c.terms, prec);
      for (std::int64_t t = 0; t < keys; ++t) {
        double v =
            std::numeric_limits<double>::quiet_NaN();  // outside the hypotheses: the cell must be equal
        if (c.term == Contraction::Term::Probabilities) {
          if (pb.finite) v = dv[static_cast<std::size_t>(t)];
        } else if (pb.finite) {
          v = backward_pair_term(pb, static_cast<std::size_t>(t), scale, c.terms, prec);
        } else if (all_zero) {
          v = 0;  // fully masked: the same where gives 0 on both sides
        }
        out.data[static_cast<std::size_t>(xo + t * xs[k])] = v;
      }
    }
  }
  // A row with non-finite values (a non-finite input, an overflow) is outside every statement of
  // §8: the composed and the fused forms need not even agree on where NaN appears there.
  if (outside > 0) {
    std::vector<Uncertified> out;
    for (const Contraction& c : contractions)
      out.push_back(Uncertified{
          c.gradient, fmt::format("{} of {} query rows hold non-finite values, outside the hypotheses of its bound "
                                  "(docs/bounds.md §8): no certified statement on these inputs",
                                  outside, rows)});
    return out;
  }
  for (const Contraction& c : contractions) {
    TensorMap in{{kPairPrefix + c.gradient, pair_terms.at(c.gradient)}, {c.operand, run_out.at(c.operand)}};
    Tensor bound = run(c.routine, in).at(kBoundPrefix + c.gradient);
    // The f64 sum of m nonnegative products is within γ_{m+1}(2⁻⁵³) relatively and m subnormal
    // units absolutely of the exact one; then the contraction's tail.
    const double g = gamma_bound(c.terms + 1, 0x1p-53);
    const double sub = static_cast<double>(c.terms) * std::numeric_limits<double>::denorm_min();
    const double tail = c.term == Contraction::Term::Probabilities ? backward_dv_tail(c.terms, prec)
                                                                   : backward_contraction_tail(c.terms, prec);
    for (double& b : bound.data) {
      if (std::isnan(b)) {
        b = 0;
        continue;
      }
      b = std::nextafter(std::nextafter((b + sub) * (1 + 2 * g) + tail, INFINITY), INFINITY);
    }
    run_out[kBoundPrefix + c.gradient] = std::move(bound);
  }
  return {};
}

NodeCheck bound_check(const Source& src, const std::string& gradient) {
  NodeCheck c;
  c.node = gradient;
  c.kind = NodeCheck::Kind::Scaled;
  c.rel = 1;
  c.scale_node = kBoundPrefix + gradient;
  c.prec = node_of(src, gradient).prec;
  // The bound holds in the absence of overflow: one side's infinity is outside it (not a
  // counterexample) where the other side plus the bound reaches the overflow threshold (an f16 ds·q
  // whose exact value exceeds 65504 while the composed one cancels to 0).
  c.overflow_tolerant = true;
  return c;
}

DownstreamBound bound_statement(const std::string& gradient, const GradientPlan& g) {
  DownstreamBound b;
  b.node = gradient;
  b.formula = fmt::format(
      "|{0}_tgt - {0}_src| <= Σ |x|·T per cell (docs/bounds.md §8{1}, evaluated from the original's "
      "values{2})",
      gradient, g.l_check || g.o_check ? ".1" : "",
      g.l_check || g.o_check ? ", with the forward's certified l and O perturbation" : "");
  return b;
}

std::optional<DownstreamPlan> plan(const Routine& original, const Application& app, const Obligation& ob,
                                   const UpstreamOf& upstream) {
  const Source src(original);
  const osm::BackwardRoles roles = osm::backward_roles(app);
  auto role = [&](const std::string& node, const char* name) {
    if (node.empty()) decline("the application records no {} role", name);
    return node;
  };
  for (const auto& [node, name] : {std::pair{roles.x, "x"}, {roles.q, "q"}, {roles.k, "k"}, {roles.v, "v"},
                                   {roles.d_out, "dO"}, {roles.m, "m"}})
    if (upstream(role(node, name)).kind != Upstream::Kind::None)
      decline("{} ({}) is perturbed by another rewrite: only l and O carry a forward's perturbation", node, name);
  GradientPlan g;
  for (const auto& [node, name, into] :
       {std::tuple{roles.l, "l", &g.l_check}, std::tuple{roles.o, "o", &g.o_check}}) {
    const Upstream u = upstream(role(node, name));
    if (u.kind == Upstream::Kind::Unknown) decline("{} is perturbed by another rewrite without a certified bound", node);
    if (u.kind == Upstream::Kind::Certified) *into = u.check;
  }
  g.e = role(roles.e, "e");
  g.l = role(roles.l, "l");
  g.dp = role(roles.d_p, "dP");
  g.ds = role(roles.d_s, "dS");
  g.o = role(roles.o, "o");
  g.dout = role(roles.d_out, "dO");
  g.layout = read_layout(src, role(roles.p, "p"), g.e, g.l, g.o, role(roles.v, "v"), g.dout, g.dp);
  g.scale = chain_scale(src, g.ds, role(roles.ng, "ng"), g.e, g.layout.pair_dims);
  const bool dk = ob.claim == osm::claim::kBackwardDk;
  const std::string x = dk ? role(roles.d_k, "dK") : role(roles.d_q, "dQ");
  g.prec = node_of(src, x).prec;
  g.contractions.push_back(
      contraction_of(src, x, g.ds, dk ? role(roles.q, "q") : role(roles.k, "k"), g.layout.pair_dims));
  // dV is exact unless the forward perturbs l; then dQ's plan states its bound too.
  if (ob.claim == osm::claim::kBackwardDq && g.l_check) {
    Contraction dv = contraction_of(src, role(roles.d_v, "dV"), role(roles.p, "p"), g.dout, g.layout.pair_dims);
    dv.term = Contraction::Term::Probabilities;
    g.contractions.push_back(std::move(dv));
  }
  DownstreamPlan out;
  for (const Contraction& c : g.contractions) {
    out.checks.push_back(bound_check(src, c.gradient));
    out.bounds.push_back(bound_statement(c.gradient, g));
    out.watched.push_back(c.operand);
  }
  for (const std::string& n : {g.e, g.l, g.dp, g.ds, g.o, g.dout}) out.watched.push_back(n);
  auto shared = std::make_shared<const GradientPlan>(std::move(g));
  out.complete = [shared](TensorMap& run_out, const RunRoutine& run) { return shared->complete(run_out, run); };
  return out;
}

}  // namespace

std::optional<DownstreamPlan> plan_fused_backward_gradients(const Routine& src, const Application& app,
                                                            const Obligation& ob, const UpstreamOf& upstream,
                                                            double exp_ulp, std::string* why) {
  (void)exp_ulp;  // the bound reads no exponential's error: e is shared bit for bit
  return plan_or_why([&] { return plan(src, app, ob, upstream); }, why);
}

}  // namespace fp::verify
