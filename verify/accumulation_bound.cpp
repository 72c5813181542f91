// Certified bounds of outputs that only accumulate products (verify/accumulation_bound.h).

#include "verify/accumulation_bound.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "core/access_census.h"
#include "verify/bounds/rounding_model.h"
#include "verify/loop_nest.h"
#include "verify/plan_decline.h"

namespace fp::verify {

namespace {

constexpr const char* kErrPrefix = "__fp_err_";
constexpr const char* kBoundPrefix = "__fp_accbound_";


// One accumulating statement Y[W] = Y[W] + a·b.
struct Accumulation {
  std::vector<Loop> loops;
  const Stmt* set = nullptr;
  ExprP a, b;  // a is the perturbed factor when there is one
  bool perturbed = false;
};

// What the completion needs.
struct Plan {
  std::string y;
  Prec prec = Prec::F32;
  std::int64_t terms = 0;  // M
  std::vector<std::string> factors;                   // every factor node (inputs of the routine)
  std::map<std::string, NodeCheck> perturbed_factors;  // node -> its check
  Routine routine;                                    // Σ |Δy| and Σ (|y| + |y'|) per cell, in f64

  std::vector<Uncertified> complete(TensorMap& run_out, const RunRoutine& run) const;
};

std::string err_node(const std::string& f) { return kErrPrefix + f; }
std::string e_node(const std::string& y) { return "__fp_acc_e_" + y; }
std::string g_node(const std::string& y) { return "__fp_acc_g_" + y; }

std::vector<Accumulation> read_accumulations(const AccessCensus& census, const std::vector<std::size_t>& at,
                                             const Node& y, const PerturbedNodes& perturbed) {
  std::vector<Accumulation> out;
  bool accumulated = false;
  for (std::size_t pos : at) {
    const Stmt* top = census.top_level()[pos];
    if (top->kind == StmtKind::Zero) {
      if (accumulated) decline("{} is zeroed again after it accumulates", y.name);
      continue;
    }
    Accumulation acc;
    acc.set = peel(top, acc.loops);
    const ExprP prod = reduction_product(*acc.set);
    if (acc.set->name != y.name || !prod || acc.set->value->prec != y.prec || prod->prec != y.prec)
      decline("statement {} is not one perfect nest {} = {} + a·b at {}'s precision", pos + 1, y.name, y.name,
              y.name);
    acc.a = prod->args[0];
    acc.b = prod->args[1];
    for (const ExprP& f : {acc.a, acc.b})
      if (f->kind != ExprKind::Get || f->prec != y.prec)
        decline("a factor of statement {} is not a read of a node at {}'s precision", pos + 1, y.name);
    const bool pa = perturbed.reached.count(acc.a->name) > 0, pb = perturbed.reached.count(acc.b->name) > 0;
    if (pa && pb) decline("both factors of statement {} are perturbed", pos + 1);
    if (pb) std::swap(acc.a, acc.b);
    acc.perturbed = pa || pb;
    if (acc.perturbed && !perturbed.checks.count(acc.a->name))
      decline("{} is perturbed without a certified check", acc.a->name);
    accumulated = true;
    out.push_back(acc);
  }
  return out;
}

// The factors' last writers come before each statement that reads them, in both routines.
void require_final_reads(const AccessCensus& census, const std::vector<std::size_t>& at,
                         const std::vector<Accumulation>& accs, const char* which) {
  std::size_t k = 0;
  for (std::size_t pos : at) {
    if (census.top_level()[pos]->kind == StmtKind::Zero) continue;
    const Accumulation& acc = accs[k++];
    for (const ExprP& f : {acc.a, acc.b}) {
      const std::vector<std::size_t> w = census.writer_positions(f->name);
      if (!w.empty() && w.back() >= pos)
        decline("{} is written at or after statement {} of the {}, which reads it", f->name, pos + 1, which);
    }
  }
}

Routine bound_routine(const Routine& original, const Node& y, const std::vector<Accumulation>& accs) {
  Routine r;
  r.name = "accumulation_bound_" + y.name;
  std::set<std::string> seen;
  const ExprP u = constant(unit_roundoff(y.prec), Prec::F64), w2 = constant(2 * underflow_error(y.prec), Prec::F64),
              two = constant(2, Prec::F64), one_u = constant(1 + unit_roundoff(y.prec), Prec::F64);
  auto f64 = [](BinOp op, ExprP x, ExprP z) { return binary(op, std::move(x), std::move(z), Prec::F64); };
  std::vector<StmtP> body{zero(e_node(y.name)), zero(g_node(y.name))};
  for (const Accumulation& acc : accs) {
    for (const ExprP& f : {acc.a, acc.b})
      if (seen.insert(f->name).second) {
        Node n = *original.find_node(f->name);
        n.is_input = true;
        n.is_output = false;
        n.mode = MemMode::Materialized;
        r.nodes.push_back(n);
      }
    const ExprP abs_a = unary(UnOp::Abs, acc.a, Prec::F64), abs_b = unary(UnOp::Abs, acc.b, Prec::F64);
    ExprP err = constant(0, Prec::F64);
    if (acc.perturbed) {
      if (seen.insert(err_node(acc.a->name)).second) {
        Node n = *original.find_node(acc.a->name);
        n.name = err_node(acc.a->name);
        n.prec = Prec::F64;
        n.is_input = true;
        n.is_output = false;
        n.mode = MemMode::Materialized;
        r.nodes.push_back(n);
      }
      err = get(err_node(acc.a->name), acc.a->indices, Prec::F64);
    }
    const ExprP span = f64(BinOp::Add, f64(BinOp::Mul, two, abs_a), err);  // 2|a| + E_a
    // |Δy| <= |b|·E_a + u·|b|(2|a| + E_a) + 2ω (0 for an unperturbed product: the same operation
    // on the same values); |y| + |y'| <= |b|(2|a| + E_a)(1 + u) + 2ω.
    const ExprP dy = acc.perturbed ? f64(BinOp::Add, f64(BinOp::Add, f64(BinOp::Mul, abs_b, err),
                                                         f64(BinOp::Mul, u, f64(BinOp::Mul, abs_b, span))),
                                         w2)
                                   : constant(0, Prec::F64);
    const ExprP mag = f64(BinOp::Add, f64(BinOp::Mul, f64(BinOp::Mul, abs_b, span), one_u), w2);
    const std::vector<Index>& at = acc.set->indices;
    std::vector<StmtP> sets = {set(e_node(y.name), at, f64(BinOp::Add, get(e_node(y.name), at, Prec::F64), dy)),
                               set(g_node(y.name), at, f64(BinOp::Add, get(g_node(y.name), at, Prec::F64), mag))};
    for (StmtP st : sets) {
      for (auto it = acc.loops.rbegin(); it != acc.loops.rend(); ++it)
        st = for_loop(it->sym, it->from, it->to, {st});
      body.push_back(st);
    }
  }
  for (const std::string& n : {e_node(y.name), g_node(y.name)}) r.nodes.push_back(make_node(n, y.dims, Prec::F64, false, true));
  r.body = seq(std::move(body));
  return r;
}

std::vector<Uncertified> Plan::complete(TensorMap& run_out, const RunRoutine& run) const {
  auto outside = [&](std::string why) { return std::vector<Uncertified>{Uncertified{y, std::move(why)}}; };
  TensorMap in;
  for (const std::string& f : factors) in[f] = run_out.at(f);
  for (const auto& [f, c] : perturbed_factors) {
    if (c.kind == NodeCheck::Kind::Scaled && !run_out.count(c.scale_node))
      return outside(fmt::format("{}'s own bound has no statement on these inputs", f));
    const Tensor& src = run_out.at(f);
    Tensor e = Tensor::zeros(Prec::F64, src.dims);
    for (std::size_t i = 0; i < e.data.size(); ++i) {
      e.data[i] = certified_cell_error(c, src.data[i],
                                       c.kind == NodeCheck::Kind::Scaled ? run_out.at(c.scale_node).data[i] : 0);
      if (!std::isfinite(e.data[i]))
        return outside(fmt::format("{} is not bounded at every cell on these inputs (a non-finite value, or one its "
                                   "check excuses as an overflow): no certified statement",
                                   f));
    }
    in[err_node(f)] = std::move(e);
  }
  const TensorMap out = run(routine, in);
  const Tensor &E = out.at(e_node(y)), &G = out.at(g_node(y));
  // Each f64 sum holds M terms of a few operations each on nonnegative values: within γ_{M+8}(2⁻⁵³)
  // relatively and 8M subnormal units absolutely of the exact one.
  const double g53 = gamma_bound(terms + 8, 0x1p-53), gm = gamma_bound(terms, unit_roundoff(prec));
  const double sub = 8 * static_cast<double>(terms) * std::numeric_limits<double>::denorm_min();
  Tensor bound = Tensor::zeros(Prec::F64, E.dims);
  for (std::size_t i = 0; i < bound.data.size(); ++i) {
    const double e = (E.data[i] + sub) * (1 + 2 * g53), g = (G.data[i] + sub) * (1 + 2 * g53);
    const double b = std::nextafter(std::nextafter(e + gm * g, INFINITY), INFINITY);
    if (!std::isfinite(b))
      return outside("a factor holds non-finite values, outside the hypotheses of its bound: no certified statement "
                     "on these inputs");
    bound.data[i] = b;
  }
  run_out[kBoundPrefix + y] = std::move(bound);
  return {};
}

std::optional<DownstreamPlan> plan(const Routine& original, const Routine& rewritten, const std::string& y,
                                   const PerturbedNodes& perturbed) {
  const Node* yn = original.find_node(y);
  const Node* yr = rewritten.find_node(y);
  if (!yn || !yr || !(*yn == *yr)) decline("{} is not declared alike in both routines", y);
  const AccessCensus So(original), Sr(rewritten);
  const std::vector<std::size_t> wo = So.writer_positions(y), wr = Sr.writer_positions(y);
  if (wo.size() != wr.size()) decline("{} is written by other statements in the rewrite", y);
  for (std::size_t i = 0; i < wo.size(); ++i)
    if (!equal(*So.top_level()[wo[i]], *Sr.top_level()[wr[i]])) decline("the rewrite changes statement {}, which writes {}", wo[i] + 1, y);
  const std::vector<Accumulation> accs = read_accumulations(So, wo, *yn, perturbed);
  if (accs.empty()) decline("{} accumulates nothing", y);
  require_final_reads(So, wo, accs, "original");
  require_final_reads(Sr, wr, read_accumulations(Sr, wr, *yn, perturbed), "rewrite");
  auto g = std::make_shared<Plan>();
  g->y = y;
  g->prec = yn->prec;
  for (const Accumulation& acc : accs) {
    std::int64_t m = 1;
    for (const Loop& l : acc.loops)
      if (!mentions(acc.set->indices, l.sym)) m *= trips(l);
    g->terms += m;
    for (const ExprP& f : {acc.a, acc.b})
      if (std::find(g->factors.begin(), g->factors.end(), f->name) == g->factors.end()) g->factors.push_back(f->name);
    if (acc.perturbed) g->perturbed_factors[acc.a->name] = perturbed.checks.at(acc.a->name);
  }
  g->routine = bound_routine(original, *yn, accs);
  DownstreamPlan out;
  NodeCheck c;
  c.node = y;
  c.kind = NodeCheck::Kind::Scaled;
  c.rel = 1;
  c.scale_node = kBoundPrefix + y;
  c.prec = yn->prec;
  c.overflow_tolerant = true;  // the bound holds without overflow (compare.h: one side's infinity)
  out.checks.push_back(c);
  std::string from;
  for (const auto& [f, _] : g->perturbed_factors) from += (from.empty() ? "" : ", ") + f;
  out.bounds.push_back(DownstreamBound{
      y,
      fmt::format("|{0}_tgt - {0}_src| <= Σ|Δy| + γ_M·Σ(|y| + |y'|) per cell over its M = {1} products, "
                  "carried from the certified bounds of {2} (verify/accumulation_bound.h)",
                  y, g->terms, from),
      0, "", 0});
  out.watched = g->factors;
  out.complete = [g](TensorMap& run_out, const RunRoutine& run) { return g->complete(run_out, run); };
  return out;
}

}  // namespace

std::optional<DownstreamPlan> accumulation_plan(const Routine& original, const Routine& rewritten,
                                                const std::string& y, const PerturbedNodes& perturbed,
                                                std::string* why) {
  return plan_or_why([&] { return plan(original, rewritten, y, perturbed); }, why);
}

}  // namespace fp::verify
