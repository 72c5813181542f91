// Row reductions (exec/c_generator.h): reduction nests with one reduced loop whose lanes are rows.
// An order-free max or min at f32/f64 runs each row contiguous and vectorized in partial results
// (order_free_rows); otherwise operands read along the rows are copied into panels per chunk of
// the reduced loop, so the lanes read them contiguously instead of gathering (rows_in_panels).
// Both finish rows one or one block at a time, running a fused pointwise statement per finished
// row (exec/c_schedule_row_fusion.cpp).

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/ir_visit.h"
#include "exec/c_generator.h"

namespace fp::codegen {

// Order-free row reductions (a row max or min: `W[J] = max(W[J], x)` or `min`, at f32 or f64, one
// reduced loop along which every operand is contiguous or invariant, x not reading W directly or
// through a replay): max and min select one of their operands, and on non-NaN values they are
// the maximum (minimum) of a total order in which -0 < +0 (core/numerics_c.h fpc_fmax_nan: a tie
// of equal values returns the one with the sign bit clear for max, set for min), so their result
// over a set of values is the same in any order and any grouping. So each cell runs its reduced
// loop along the row, contiguous, vectorized: kOrderFreeLanes partial results (lane j sees the
// iterations j, j + kOrderFreeLanes, ... in order, starting from -inf for max, +inf for min: the
// identities of the order), combined with the cell's initial value. A NaN anywhere makes the
// combination NaN; then the cell is recomputed in the original order, so even which NaN it holds is
// the sequential loop's. Not for sums (their rounding depends on the order), not at f16/bf16.
bool CGenerator::order_free_rows(const NestShape& shape, const Node& w) {
  if (shape.reduced.size() != 1 || (w.prec != Prec::F32 && w.prec != Prec::F64)) return false;
  const Stmt& set = *shape.nest.set;
  const Expr& v = *set.value;
  if (v.kind != ExprKind::Binary || (v.binop() != BinOp::Max && v.binop() != BinOp::Min) || v.prec != w.prec)
    return false;
  auto is_cell = [&](const ExprP& a) {
    return a->kind == ExprKind::Get && a->name == w.name && a->indices == set.indices;
  };
  if (is_cell(v.args[0]) == is_cell(v.args[1])) return false;
  const ExprP& x = is_cell(v.args[0]) ? v.args[1] : v.args[0];
  const Stmt* red = shape.reduced[0];
  if (red->to - red->from + 1 < kOrderFreeLanes) return false;
  bool ok = true;
  for_each_expr(x, [&](const Expr& e) {
    if (e.kind == ExprKind::GetLocal) ok = false;
    if (e.kind != ExprKind::Get) return;
    if (e.name == w.name) ok = false;
    if (plan_.is_virtual(e.name) && plan_.replay_reads(e.name).count(w.name) > 0) ok = false;
    const std::int64_t st = flat_coefficient(plan_.node(e.name), e.indices, red->sym);
    if (st != 0 && st != 1) ok = false;
  });
  if (!ok) return false;
  const bool max = v.binop() == BinOp::Max;
  const bool f32 = w.prec == Prec::F32;
  const char* ct = codegen::ctype(w.prec, Dialect::C);
  const std::string ident = fmt::format("({}{})", max ? "-" : "", f32 ? "FPX_INFF" : "FPX_INF");
  const std::string combine = fmt::format("fpc_f{}{}_nan", max ? "max" : "min", f32 ? "f" : "");
  const std::int64_t extent = red->to - red->from + 1;
  if (opts_.parallel && codegen::trip_count(shape.target) >= 2)
    em_.line(pragma(static_cast<int>(shape.target.size())));
  for (std::size_t i = 0; i + 1 < shape.target.size(); ++i) em_.line(em_.loop_header(*shape.target[i]));
  if (shape.target.empty())
    em_.open("");
  else
    em_.open(em_.loop_header(*shape.target.back()));
  em_.line(fmt::format("/* order-free row reduction: {} lanes along the row, NaN rows redone in order */",
                       kOrderFreeLanes));
  const Aff cell = em_.offset(w, set.indices);
  const std::string init = em_.fresh("init"), pv = em_.fresh("pv"), c0 = em_.fresh("c"), r = em_.fresh("r");
  em_.line(
      fmt::format("const {} {} = {};", ct, init, zero_start_ ? em_.literal(0.0, w.prec) : em_.load(w, cell)));
  em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", ct, pv, kOrderFreeLanes));
  // One step of the original expression with the cell replaced by `acc`, the reduced symbol at `at`.
  auto step = [&](const std::string& acc, const Aff& at) {
    em_.bind_sym(red->sym, at);
    em_.push_scope();
    em_.substitute(w.name, acc);
    em_.line(fmt::format("{} = {};", acc, em_.convert(em_.expr(set.value), set.value->prec, w.prec)));
    em_.unsubstitute(w.name);
    em_.pop_scope();
    em_.unbind_sym(red->sym);
  };
  {
    const std::string j = em_.fresh("j");
    em_.line(
        fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2}[{0}] = {3};", j, kOrderFreeLanes, pv, ident));
  }
  em_.line(fmt::format("fpc_i64 {} = 0;", c0));
  em_.open(fmt::format("for (; {0} + {1} <= {2}LL; {0} += {1})", c0, kOrderFreeLanes, extent));
  {
    // The operand first, into a chunk array (its own loop: GCC vectorized the combined loop only
    // for operands without a mask), then the max over the array.
    const std::string xv = em_.fresh("xv"), tt = em_.fresh("tt");
    em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(x->prec, Dialect::C), xv,
                         kOrderFreeLanes));
    if (opts_.parallel) em_.line("#pragma omp simd");
    em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} < {1} + {2}; ++{0})", tt, c0, kOrderFreeLanes));
    em_.bind_sym(red->sym, Aff{{{tt, 1}}, red->from});
    em_.push_scope();
    em_.line(fmt::format("{}[{} - {}] = {};", xv, tt, c0, em_.expr(x)));
    em_.pop_scope();
    em_.unbind_sym(red->sym);
    em_.close();
    const std::string j = em_.fresh("j");
    if (opts_.parallel) em_.line("#pragma omp simd");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, kOrderFreeLanes));
    em_.substitute_expr(x.get(), fmt::format("{}[{}]", xv, j));
    step(fmt::format("{}[{}]", pv, j), Aff{{{c0, 1}, {j, 1}}, red->from});
    em_.clear_expr_substitutions();
    em_.close();
  }
  em_.close();
  {
    const std::string j = em_.fresh("j");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {1} + {0} < {2}LL; ++{0})", j, c0, extent));
    step(fmt::format("{}[{}]", pv, j), Aff{{{c0, 1}, {j, 1}}, red->from});
    em_.close();
  }
  em_.line(fmt::format("{} {} = {};", ct, r, init));
  {
    const std::string j = em_.fresh("j");
    em_.line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2} = {3}({2}, {4}[{0}]);", j, kOrderFreeLanes,
                         r, combine, pv));
  }
  em_.open(fmt::format("if ({0} != {0})", r));
  em_.line(fmt::format("{} = {};", r, init));
  {
    const std::string tq = em_.fresh("tq");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", tq, extent));
    step(r, Aff{{{tq, 1}}, red->from});
    em_.close();
  }
  em_.close();
  em_.line(em_.store(w, cell, r));
  if (epilogue_) row_epilogue();  // the row is final: the fused pointwise statement for it
  em_.close();
  for (std::size_t i = shape.target.size(); i-- > 0;) em_.unbind_sym(shape.target[i]->sym);
  return true;
}

// A panel operand that is a direct read of a stored f32 node (a row of it contiguous along the
// reduced loop, the rows `lds` apart) is copied by fpx_transpose_f32 (16 x 16 blocks transposed in
// registers) instead of a loop of strided stores: the same copy. Returns false, emitting nothing,
// for any other operand.
bool CGenerator::transposing_copy(const Expr* g, const std::string& panel, const Stmt* lane, const Stmt* red,
                                  int block, const std::string& nl, const std::string& c0,
                                  const std::string& cn) {
  if (g->kind != ExprKind::Get || plan_.is_virtual(g->name)) return false;
  const Node& x = plan_.node(g->name);
  if (x.prec != Prec::F32) return false;
  const std::int64_t lds = flat_coefficient(x, g->indices, lane->sym);
  if (lds <= 1 || flat_coefficient(x, g->indices, red->sym) != 1) return false;
  em_.bind_sym(lane->sym, Aff{{{lane_block_, block}}, lane->from});
  em_.bind_sym(red->sym, Aff{{{c0, 1}}, red->from});
  const Aff at = em_.offset(x, g->indices);
  em_.unbind_sym(red->sym);
  em_.unbind_sym(lane->sym);
  em_.line(fmt::format("fpx_transpose_f32({} + {}, {}LL, {}, {}, {}, {});", em_.buffer(x.name), at.str(), lds,
                       nl, cn, panel, block));
  return true;
}

// Row reductions (one target loop, e.g. a row max or sum `m[s] = max(m[s], x[s, t])`): the lanes
// are rows, so an operand read along the rows (stride 1 in the one reduced loop, another stride
// across the lanes) would be a gather per iteration, `lanes` lines at once, all in one cache set
// when the row stride is a multiple of 4 KiB. Instead the reduced loop runs in chunks (the panels
// 16 KiB in all): per chunk
// each such operand is copied row by row (contiguous reads) into a panel [chunk][lanes], then
// the lanes accumulate over the chunk from the panel. A cell's accumulator is stored after each
// chunk and loaded before the next (exact at its precision), so every cell still sees its
// iterations in order. A virtual operand is replayed into the panel (its value at its own C
// type, a pure function of the row and the iteration: declined when its replay reads the stored
// node). Returns false, emitting nothing, when the nest has no such operand.
bool CGenerator::rows_in_panels(const NestShape& shape, const Node& w, const Stmt* lane,
                                const std::vector<const Stmt*>& outer, int width) {
  if (shape.reduced.size() != 1) return false;
  const Stmt& set = *shape.nest.set;
  const Stmt* red = shape.reduced[0];
  std::vector<const Expr*> reads, panel;
  collect_reads(set.value, reads);
  std::int64_t cells = 0;
  for (const Expr* g : reads) {
    if (g->name == w.name) continue;
    const Node& x = plan_.node(g->name);
    const std::int64_t st = flat_coefficient(x, g->indices, lane->sym);
    if (st == 0 || st == 1 || flat_coefficient(x, g->indices, red->sym) != 1) continue;
    if (plan_.is_virtual(g->name) && plan_.replay_reads(g->name).count(w.name) > 0) continue;
    panel.push_back(g);
    cells += std::string(codegen::ctype(g->prec, Dialect::C)) == "double" ? 8 : 4;
  }
  if (panel.empty()) return false;
  const std::int64_t extent = red->to - red->from + 1;
  // Several vectors of rows at f32 and f64: independent accumulator chains (a row max is a chain
  // of dependent max operations per cell; contiguous panels make the extra rows cheap).
  const int groups =
      (w.prec == Prec::F32 || w.prec == Prec::F64) && lane->to - lane->from + 1 >= 4 * width ? 4 : 1;
  const int block = width * groups;
  // Panels of 16 KiB in all: they are written with a stride and read back at once, so they
  // must stay in L1 (a 64 KiB panel made the row max slower than the gathers it replaces).
  const std::int64_t chunk = std::clamp<std::int64_t>(
      std::min<std::int64_t>(opts_.stack_limit, 16 * 1024) / (cells * block), 8, 256);
  const std::int64_t lane_blocks = (lane->to - lane->from + 1 + block - 1) / block;
  zero_now(w);  // the cells are reloaded per chunk: the buffer holds the zeros
  if (opts_.parallel && saturating_mul(codegen::trip_count(outer), lane_blocks) >= 2)
    em_.line(pragma(static_cast<int>(outer.size()) + 1));
  for (const Stmt* l : outer) em_.line(em_.loop_header(*l));
  lane_block_loop(lane, block, lane_blocks, [&](const std::string& nl) {
    std::map<const Expr*, std::string> tiles;
    for (const Expr* g : panel) {
      tiles[g] = em_.fresh("panel");
      em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(g->prec, Dialect::C),
                           tiles[g], chunk * block));
    }
    const std::string c0 = em_.fresh("c"), cn = em_.fresh("cn");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; {0} += {2})", c0, extent, chunk));
    em_.line(
        fmt::format("const fpc_i64 {0} = {1}LL - {2} < {3} ? {1}LL - {2} : {3};", cn, extent, c0, chunk));
    for (const Expr* g : panel) {
      if (transposing_copy(g, tiles[g], lane, red, block, nl, c0, cn)) continue;
      const std::string j = em_.fresh("j"), tt = em_.fresh("tt");
      em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, nl));
      em_.bind_sym(lane->sym, Aff{{{lane_block_, block}, {j, 1}}, lane->from});
      em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", tt, cn));
      em_.bind_sym(red->sym, Aff{{{c0, 1}, {tt, 1}}, red->from});
      em_.push_scope();
      ExprP alias(std::shared_ptr<const Expr>{}, g);  // non-owning: the routine outlives this
      em_.line(fmt::format("{}[{} * {} + {}] = {};", tiles[g], tt, block, j, em_.expr(alias)));
      em_.pop_scope();
      em_.close();
      em_.unbind_sym(red->sym);
      em_.close();
      em_.unbind_sym(lane->sym);
    }
    // The accumulation over the chunk: lanes j < count, group g's lane at bases[g] + j and its
    // panel column cols[g] + j; several groups are independent accumulator chains.
    auto accumulate = [&](const std::string& count, const std::vector<Aff>& bases,
                          const std::vector<Aff>& cols) {
      const std::string j = em_.fresh("j"), tt = em_.fresh("tt");
      if (opts_.parallel) em_.line("#pragma omp simd");
      em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, count));
      std::vector<std::string> acc;
      std::vector<Aff> at;
      for (const Aff& b : bases) {
        Aff l = b;
        l.terms[j] += 1;
        em_.bind_sym(lane->sym, l);
        acc.push_back(em_.fresh("a"));
        at.push_back(em_.offset(w, set.indices));
        em_.line(fmt::format("{} {} = {};", codegen::ctype(w.prec, Dialect::C), acc.back(),
                             em_.load(w, at.back())));
      }
      em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", tt, cn));
      em_.bind_sym(red->sym, Aff{{{c0, 1}, {tt, 1}}, red->from});
      em_.push_scope();
      for (std::size_t g = 0; g < bases.size(); ++g) {
        Aff l = bases[g];
        l.terms[j] += 1;
        em_.bind_sym(lane->sym, l);
        Aff col = cols[g];
        col.terms[j] += 1;
        for (const Expr* p : panel)
          em_.substitute_expr(p, fmt::format("{}[{} * {} + {}]", tiles[p], tt, block, col.str()));
        em_.substitute(w.name, acc[g]);
        em_.line(fmt::format("{} = {};", acc[g], em_.convert(em_.expr(set.value), set.value->prec, w.prec)));
        em_.unsubstitute(w.name);
        em_.clear_expr_substitutions();
      }
      em_.pop_scope();
      em_.close();
      em_.unbind_sym(red->sym);
      for (std::size_t g = 0; g < bases.size(); ++g) em_.line(em_.store(w, at[g], acc[g]));
      em_.close();
      em_.unbind_sym(lane->sym);
    };
    const Aff start{{{lane_block_, block}}, lane->from};
    if (groups == 1) {
      accumulate(nl, {start}, {Aff{}});
    } else {
      const LaneGroups lg = register_block_groups(start, groups, width);
      em_.open(fmt::format("if ({} == {})", nl, block));
      em_.line(fmt::format("/* register block: {} vectors of {} lanes, rows in panels */", groups, width));
      accumulate(std::to_string(width), lg.bases, lg.cols);
      em_.close();
      const std::string g = em_.fresh("g"), ng = em_.fresh("ng");
      em_.open(fmt::format("else for (fpc_i64 {0} = 0; {0} * {1} < {2}; ++{0})", g, width, nl));
      em_.line(fmt::format("const fpc_i64 {0} = {1} - {2} * {3} < {2} ? {1} - {2} * {3} : {2};", ng, nl,
                           width, g));
      Aff b = start, c;
      b.terms[g] += width;
      c.terms[g] += width;
      accumulate(ng, {b}, {c});
      em_.close();
    }
    em_.close();
    if (epilogue_) {
      // The block's rows are final: the fused pointwise statement for each of them.
      const std::string j = em_.fresh("j");
      em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, nl));
      em_.bind_sym(lane->sym, Aff{{{lane_block_, block}, {j, 1}}, lane->from});
      row_epilogue();
      em_.unbind_sym(lane->sym);
      em_.close();
    }
  });
  for (std::size_t i = outer.size(); i-- > 0;) em_.unbind_sym(outer[i]->sym);
  return true;
}

}  // namespace fp::codegen
