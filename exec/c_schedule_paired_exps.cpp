// Paired exponentials (exec/c_generator.h): a lane store in a scan whose value holds two
// exponentials of one precision, one of them following a carried value (a rescale by its change),
// computes both arguments ahead and, per lane, one vectorized exponential of the argument that is
// not zero (the other is exp(0) = 1 exactly), the second exponential only in the lanes that need it.
// lane_stmt substitutes the two values into the store.

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/ir_visit.h"
#include "exec/c_generator.h"

namespace fp::codegen {

// The exps in a store's value (not inside another exp's argument), in evaluation order.
std::vector<const Expr*> CGenerator::exps_of(const Stmt& s) {
  std::vector<const Expr*> out;
  std::function<void(const ExprP&)> walk = [&](const ExprP& e) {
    if (e->kind == ExprKind::Unary && e->unop() == UnOp::Exp) {
      out.push_back(e.get());
      return;
    }
    for (const auto& a : e->args) walk(a);
  };
  if (s.value) walk(s.value);
  return out;
}

// A lane store in a scan with exactly two exps of one precision, one of them reading a carried
// previous value — such as a scan carrying a running max m and a rescaled sum l, whose step is
// l' = l·exp(m - m') + exp(x - m') — where in every lane at least one argument is usually exactly
// zero (no new maximum: m = m'; a new maximum: x = m'): computes both arguments ahead, one
// vectorized exponential per lane of the first non-zero argument, and the other only in the
// lanes where both are non-zero (a scalar fix-up loop, taken only when a lane needs it). Exact:
// exp(±0) is 1 at every precision (the exp of core/numerics_c.h, rounded), and exps are pure.
// Returns the lane arrays holding the two values (empty: no pairing).
std::vector<std::string> CGenerator::paired_exps(const Stmt& s) {
  if (s.kind != StmtKind::Set && s.kind != StmtKind::SetLocal) return {};
  const std::vector<const Expr*> exps = exps_of(s);
  if (exps.size() != 2 || exps[0]->prec != exps[1]->prec || exps[0]->prec == Prec::I32) return {};
  // Only where an argument follows a carried value (a rescale by its change), the case that
  // makes a zero argument likely; elsewhere the fix-up loop could run in every lane.
  bool reads_carried = false;
  for (const Expr* e : exps)
    for_each_expr(e->args[0], [&](const Expr& x) {
      if (x.kind == ExprKind::GetLocal &&
          std::find(carried_prev_.begin(), carried_prev_.end(), x.name) != carried_prev_.end())
        reads_carried = true;
    });
  if (!reads_carried) return {};
  const Prec p = exps[0]->prec;
  const char* ct = codegen::ctype(p, Dialect::C);
  auto exp_of = [&](const std::string& a) { return codegen::exp_call(p, a); };
  const int w = lane_->width;
  std::string arg[2], val[2];
  for (int i = 0; i < 2; ++i) {
    arg[i] = em_.fresh("ea");
    val[i] = em_.fresh("ev");
    em_.line(fmt::format("double {}[{}];", arg[i], w));
    em_.line(fmt::format("{} {}[{}];", ct, val[i], w));
  }
  {
    const std::string j = open_lanes(true);
    for (int i = 0; i < 2; ++i) {
      const Expr& e = *exps[static_cast<std::size_t>(i)];
      const std::string a = em_.convert(em_.expr(e.args[0]), e.args[0]->prec, p);
      em_.line(fmt::format("{}[{}] = (double)({});", arg[i], j, a));
    }
    close_lanes();
  }
  {
    const std::string j = open_lanes(true);
    em_.line(fmt::format("const int z = {}[{}] == 0.0;", arg[0], j));
    em_.line(fmt::format("const {} e = {};", ct,
                         exp_of(fmt::format("z ? {1}[{0}] : {2}[{0}]", j, arg[1], arg[0]))));
    em_.line(fmt::format("{}[{}] = z ? ({})1 : e;", val[0], j, ct));
    em_.line(fmt::format("{0}[{1}] = z ? e : ({2}[{1}] == 0.0 ? ({3})1 : ({3})0);", val[1], j, arg[1], ct));
    close_lanes();
  }
  // The lanes where both arguments are non-zero (a NaN or an infinity in the row): the second
  // exponential too. A plain reduction first, so the fix-up loop is not if-converted into a
  // vector exp over every lane.
  const std::string any = em_.fresh("eb"), q = em_.fresh("q");
  em_.line(fmt::format("int {} = 0;", any));
  em_.line(
      fmt::format("for (fpc_i64 {4} = 0; {4} < {0}; ++{4}) {1} |= ({2}[{4}] != 0.0) & ({3}[{4}] != 0.0);",
                  lane_->nl, any, arg[0], arg[1], q));
  em_.open(fmt::format("if ({})", any));
  em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", q, lane_->nl));
  em_.line(fmt::format("if ({0}[{4}] != 0.0 && {1}[{4}] != 0.0) {2}[{4}] = {3};", arg[0], arg[1], val[1],
                       exp_of(arg[1] + "[" + q + "]"), q));
  em_.close();
  em_.close();
  return {val[0], val[1]};
}

}  // namespace fp::codegen
