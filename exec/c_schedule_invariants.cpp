// Loop-invariant code motion in reduction nests (exec/c_generator.h): what the lane loop does
// not depend on — replays of virtual nodes, and with column panels plain reads — is computed once
// per row block into stack arrays (hoisted_invariants, precompute_invariants) instead of once per
// lane block, or, when those reads run down columns, once per panel of kPanelBlocks row blocks and
// chunk of the reduced loop (column panels, below). The same values, read back in the same order.

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/c_generator.h"

namespace fp::codegen {

// Loop-invariant code motion in a reduction nest: the maximal subexpressions of the value that
// replay a virtual node (the costly part: a gradient chain `where(mask, ...)·scale` replayed per
// read) and depend neither on the lane loop nor on the stored node. Each is a pure function of
// the row and reduced iterations — it reads no node the nest writes (the stored node is
// excluded, directly and through replays) — so its value per (row, reduced iteration) can be
// computed ahead into an array at its own C type and read back: the same value, bit for bit,
// computed once per row block instead of once per lane block. Declined (nothing hoisted) when
// the arrays (rows × reduced iterations) would exceed the stack budget.
// With `direct`, a plain read of a node (not the stored one) that does not depend on the lane
// loop counts too (column panels copy it: panel_row_blocks).
std::vector<const Expr*> CGenerator::hoisted_invariants(const ExprP& value, const Node& w, const Stmt* lane,
                                                        int rows, std::int64_t trips, bool direct) const {
  std::vector<const Expr*> out;
  std::int64_t budget = opts_.stack_limit;
  auto direct_read = [&](const Expr& e) {
    if (!direct || e.kind != ExprKind::Get || e.name == w.name || plan_.is_virtual(e.name)) return false;
    for (const auto& idx : e.indices)
      if (idx.canonical().mentions(lane->sym)) return false;
    return true;
  };
  std::function<void(const ExprP&)> visit = [&](const ExprP& e) {
    if (!e) return;
    if (invariant_replay(*e, w, lane) || direct_read(*e)) {
      const std::int64_t cell = std::string(codegen::ctype(e->prec, Dialect::C)) == "double" ? 8 : 4;
      const std::int64_t bytes = saturating_mul(saturating_mul(trips, rows), cell);
      if (bytes <= budget) {
        budget -= bytes;
        out.push_back(e.get());
      }
      return;
    }
    for (const auto& a : e->args) visit(a);
  };
  visit(value);
  return out;
}

// True when `e` reads a virtual node, mentions `lane`'s symbol nowhere and reads `w` nowhere
// (directly or through a replay).
bool CGenerator::invariant_replay(const Expr& e, const Node& w, const Stmt* lane) const {
  bool replays = false, ok = true;
  std::function<void(const Expr&)> scan = [&](const Expr& x) {
    if (x.kind == ExprKind::GetLocal) ok = false;
    if (x.kind == ExprKind::Get || x.kind == ExprKind::EmbedIndex)
      for (const auto& idx : x.indices) ok = ok && !idx.canonical().mentions(lane->sym);
    if (x.kind == ExprKind::Get) {
      if (x.name == w.name) ok = false;
      if (plan_.is_virtual(x.name)) {
        replays = true;
        if (plan_.replay_reads(x.name).count(w.name) > 0) ok = false;
      }
    }
    for (const auto& a : x.args)
      if (a) scan(*a);
  };
  scan(e);
  return ok && replays;
}

// Fills one array per hoisted expression with its value at every (row k, reduced iteration),
// laid out [k][reduced iteration], in the reduced loops' order; lanes() reads them back.
void CGenerator::precompute_invariants(const std::vector<const Expr*>& hoisted, const NestShape& shape,
                                       const Stmt* row, const Aff& row_aff, int rows) {
  invariants_.clear();
  if (hoisted.empty()) return;
  const std::int64_t trips = codegen::trip_count(shape.reduced);
  for (const Expr* h : hoisted) {
    const std::string array = em_.fresh("inv");
    invariants_.emplace_back(h, array);
    em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(h->prec, Dialect::C),
                         array, trips * rows));
  }
  // The rows innermost: one pass over the reduced iterations fills every row, so operands read
  // across the rows (a column of a row-major node) are read one cache line for all rows.
  for (const Stmt* r : shape.reduced) {
    em_.open(em_.loop_header(*r));
    em_.push_scope();
  }
  const std::string at = reduced_linear(shape).str();
  for (int k = 0; k < rows; ++k) {
    Aff ra = row_aff;
    ra.off += k;
    em_.bind_sym(row->sym, ra);
    for (const auto& [h, array] : invariants_) {
      ExprP alias(std::shared_ptr<const Expr>{}, h);  // non-owning: the routine outlives this
      em_.line(fmt::format("{}[{} * {}LL + {}] = {};", array, k, trips, at, em_.expr(alias)));
    }
  }
  for (auto it = shape.reduced.rbegin(); it != shape.reduced.rend(); ++it) {
    em_.pop_scope();
    em_.close();
    em_.unbind_sym((*it)->sym);
  }
  em_.unbind_sym(row->sym);
}

// ---- hoisted invariants read down a column: panels of many rows, in chunks -------------------
// precompute_invariants fills a row block's arrays reduced iteration by reduced iteration, the
// block's few rows innermost. When the hoisted expressions read their nodes contiguously along
// the row loop and with a large stride along the reduced loop (the score gradient read down its
// columns by the key gradient), each reduced iteration touches one cache line per node for 6
// values, and the lines of one column (a power-of-two stride apart) fall into a handful of cache
// sets: the fill re-fetched them from memory for every row block (11 of the 14 ms of grad_k at
// seq 2048). Here a panel covers kPanelBlocks row blocks (48 rows) and is filled with the rows
// innermost as a vector loop (whole lines, contiguous), laid out [reduced iteration][row]; the
// reduced loop runs in chunks sized so the panels stay within the stack budget, and each cell's
// accumulator is carried from chunk to chunk through its own cell (stored after a chunk, loaded
// before the next: the same value), so every cell still sees its reduced iterations in order and
// each value is the same expression on the same operands: bitwise the same result.

bool CGenerator::column_panels(const std::vector<const Expr*>& hoisted, const NestShape& shape, const Node& w,
                               const Stmt* row, int unroll, std::int64_t row_blocks) const {
  if (hoisted.empty() || !opts_.jam || shape.reduced.size() != 1 || row_blocks < 2) return false;
  const Stmt* r = shape.reduced[0];
  if (r->kind == StmtKind::Scan && r->dir == ScanDir::Backward) return false;
  // The accumulator travels through the cell between chunks: nothing else may read the cell.
  std::vector<const Expr*> reads;
  collect_reads(shape.nest.set->value, reads);
  for (const Expr* g : reads)
    if (plan_.is_virtual(g->name) && plan_.replay_reads(g->name).count(w.name) > 0) return false;
  for (const Expr* h : hoisted) {
    std::vector<const Expr*> hr;
    ExprP alias(std::shared_ptr<const Expr>{}, h);
    collect_reads(alias, hr);
    for (const Expr* g : hr) {
      const Node& x = plan_.node(g->name);
      if (flat_coefficient(x, g->indices, row->sym) != 1) return false;
      const std::int64_t down = flat_coefficient(x, g->indices, r->sym);
      if (down > -16 && down < 16) return false;  // rows of the panel already share lines
    }
  }
  return unroll >= 1;
}

void CGenerator::panel_row_blocks(const std::vector<const Expr*>& hoisted, const NestShape& shape,
                                  const Node& w, const Stmt* lane, const Stmt* row, int width, int groups,
                                  int unroll, std::int64_t row_blocks, std::int64_t lane_blocks) {
  const Stmt* r = shape.reduced[0];
  const std::int64_t blocks_per_panel = std::min<std::int64_t>(kPanelBlocks, row_blocks);
  const std::int64_t panel_rows = blocks_per_panel * unroll;
  std::int64_t cell_bytes = 0;
  for (const Expr* h : hoisted)
    cell_bytes += std::string(codegen::ctype(h->prec, Dialect::C)) == "double" ? 8 : 4;
  const std::int64_t trips = r->to - r->from + 1;
  std::int64_t chunk = std::max<std::int64_t>(16, opts_.stack_limit / (panel_rows * cell_bytes) / 16 * 16);
  chunk = std::min(chunk, trips);
  const std::int64_t panels = (row_blocks + blocks_per_panel - 1) / blocks_per_panel;
  const std::string pb = em_.fresh("pb"), nb = em_.fresh("nb");
  em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", pb, panels));
  em_.line(fmt::format("const fpc_i64 {0} = {1}LL - {2}LL * {3} < {2}LL ? {1}LL - {2}LL * {3} : {2}LL;", nb,
                       row_blocks, blocks_per_panel, pb));
  invariants_.clear();
  for (const Expr* h : hoisted) {
    const std::string array = em_.fresh("inv");
    invariants_.emplace_back(h, array);
    em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(h->prec, Dialect::C),
                         array, chunk * panel_rows));
  }
  // Full chunks in a loop, then the tail chunk: each with a constant trip count, so the lane
  // loop around the reduced loop still vectorizes (GCC's outer-loop vectorization needs it).
  const std::int64_t full = trips / chunk, tail = trips % chunk;
  if (full > 0) {
    const std::string ch = em_.fresh("ch");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", ch, full));
    panel_chunk(shape, w, lane, row, width, groups, unroll, lane_blocks, pb, nb, panel_rows,
                fmt::format("{}LL + {}LL * {}", r->from, chunk, ch), chunk);
    em_.close();
  }
  if (tail > 0)
    panel_chunk(shape, w, lane, row, width, groups, unroll, lane_blocks, pb, nb, panel_rows,
                fmt::format("{}LL", r->from + full * chunk), tail);
  invariants_.clear();
  em_.close();
}

// One chunk of `count` reduced iterations from the C expression `first`: the panel's fill, then
// its row blocks over the chunk.
void CGenerator::panel_chunk(const NestShape& shape, const Node& w, const Stmt* lane, const Stmt* row,
                             int width, int groups, int unroll, std::int64_t lane_blocks,
                             const std::string& pb, const std::string& nb, std::int64_t panel_rows,
                             const std::string& first, std::int64_t count) {
  const Stmt* r = shape.reduced[0];
  em_.open("");
  ChunkState cs;
  cs.first = em_.fresh("c0");
  cs.count = count;
  cs.panel_rows = panel_rows;
  em_.line(fmt::format("const fpc_i64 {} = {};", cs.first, first));
  cs.starts = fmt::format("{} == {}LL", cs.first, r->from);
  // The fill: rows innermost, contiguous in the panel and in the nodes read.
  const std::string v = em_.fresh_named('s', r->sym);
  em_.bind_sym(r->sym, Aff{{{v, 1}}, 0});
  em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} < {1} + {2}LL; ++{0})", v, cs.first, count));
  em_.push_scope();
  const std::string k = em_.fresh("k");
  if (opts_.parallel) em_.line("#pragma omp simd");
  em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1} * {2}; ++{0})", k, nb, unroll));
  em_.push_scope();
  em_.bind_sym(row->sym, Aff{{{pb, panel_rows}, {k, 1}}, row->from});
  for (const auto& [h, array] : invariants_) {
    ExprP alias(std::shared_ptr<const Expr>{}, h);  // non-owning: the routine outlives this
    em_.line(
        fmt::format("{}[({} - {}) * {}LL + {}] = {};", array, v, cs.first, panel_rows, k, em_.expr(alias)));
  }
  em_.pop_scope();
  em_.close();
  em_.unbind_sym(row->sym);
  em_.pop_scope();
  em_.close();
  em_.unbind_sym(r->sym);
  // The row blocks of the panel, each over this chunk of the reduced loop.
  cs.row_block = em_.fresh("rb");
  em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", cs.row_block, nb));
  chunk_ = cs;
  const Aff row_aff{{{pb, panel_rows}, {cs.row_block, unroll}}, row->from};
  lane_block_loop(lane, width * groups, lane_blocks, [&](const std::string& nl) {
    lane_groups(shape, w, lane, nl, width, groups, row, row_aff, unroll, {});
  });
  chunk_.reset();
  em_.close();
  em_.close();
}

}  // namespace fp::codegen
