// Reduction nests (exec/c_generator.h, exec/program_plan.h NestShape): a statement that is a
// perfect nest accumulating into the cells its target loops index, run with the jam option. The
// cells run in lanes (an omp simd loop around the reduced loops, outer-loop vectorization), rows
// unrolled inside the lanes, strided operands packed into stack tiles, and at f32/f64 several
// vectors of lanes per register block; row reductions and hoisted invariants take the schedules
// of exec/c_schedule_row_reductions.cpp and exec/c_schedule_invariants.cpp. Each cell still
// sees its reduced iterations in the original order (reduction_nest says why).

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "exec/c_generator.h"

namespace fp::codegen {

// A reduction nest (exec/program_plan.h NestShape) — the cell of every target iteration is
// independent and sees its reduced iterations in the original order whatever the schedule, so:
//  - a "lane" target loop L (unit stride in the stored node when one has it) runs in blocks of
//    16 (8 for double-carried values) as an `omp simd` loop around the reduced loops, each lane
//    keeping its cell in a scalar (outer-loop vectorization);
//  - a second target loop U is unrolled by kRowUnroll = 6 (4 when its extent is 4 or 5) inside the
//    lanes (6 independent cells per lane; with 4 vectors of lanes 24 accumulators, the most that
//    stay in the 32 vector registers next to the operands — 8 rows spilled and were slower:
//    latency hidden, operands invariant along U loaded once);
//  - an operand read with a non-unit stride along L and not depending on U is packed once per
//    L block into a stack tile (transposed: lanes contiguous) and reused for every U iteration;
//  - the other target loops stay outside, and the outermost loops run in parallel.
// Values are untouched: each cell's value is the same expression on the same operands in the
// same order (packing copies values; lanes and rows are distinct cells).
void CGenerator::reduction_nest(const NestShape& shape) {
  const Stmt& set = *shape.nest.set;
  const Node& w = plan_.node(set.name);
  // A deferred `zero w` (zero_taken_by_next): the schedules that visit each cell once start its
  // accumulator at +0; the others zero the buffer first.
  const auto taken = std::find(pending_zeros_.begin(), pending_zeros_.end(), w.name);
  zero_start_ = taken != pending_zeros_.end();
  if (zero_start_) pending_zeros_.erase(taken);
  auto extent = [](const Stmt* l) { return l->to - l->from + 1; };
  const ReductionLoops roles = reduction_loops(shape, w);
  const Stmt* const lane = roles.lane;
  const Stmt* const row = roles.row;
  const std::vector<const Stmt*>& outer = roles.outer;
  const char* ct = codegen::ctype(w.prec, Dialect::C);
  em_.open("");
  if (!lane) {
    // Every target loop has one iteration (or there are none): one cell at a time.
    zero_now(w);
    for (const Stmt* l : outer) em_.open(em_.loop_header(*l));
    em_.reduce_cell_in_scalar(shape);
    for (std::size_t i = outer.size(); i-- > 0;) {
      em_.close();
      em_.unbind_sym(outer[i]->sym);
    }
    em_.close();
    return;
  }
  const int width = std::string(ct) == "double" ? 8 : 16;
  if (order_free_rows(shape, w)) {
    em_.close();
    return;
  }
  if (!row && rows_in_panels(shape, w, lane, outer, width)) {
    em_.close();
    return;
  }
  const int unroll = row && extent(row) >= kRowUnroll ? kRowUnroll : (row && extent(row) >= 4 ? 4 : 1);
  // Operands to pack: direct reads with a non-unit stride along the lane loop that do not depend
  // on the row loop, while the tile (lanes x reduced iterations) fits the stack budget.
  std::int64_t reduced_trips = codegen::trip_count(shape.reduced);
  std::vector<const Expr*> reads;
  collect_reads(set.value, reads);
  auto pack_plan = [&](int block) {
    std::vector<const Expr*> out;
    if (!row) return out;
    std::int64_t budget = opts_.stack_limit;
    for (const Expr* g : reads) {
      if (g->name == w.name || plan_.is_virtual(g->name)) continue;
      const Node& x = plan_.node(g->name);
      const std::int64_t st = flat_coefficient(x, g->indices, lane->sym);
      bool on_row = false;
      for (const auto& idx : g->indices) on_row = on_row || idx.mentions(row->sym);
      const std::int64_t bytes = saturating_mul(reduced_trips, block) * 8;
      if (st == 0 || st == 1 || on_row || bytes > budget) continue;
      budget -= bytes;
      out.push_back(g);
    }
    return out;
  };
  // Register blocking: at f32 and f64 (one IEEE operation per operation, nothing rounded by a
  // call) a lane block is `groups` vectors of lanes, so one pass over the reduced loops keeps
  // groups × unroll independent cells in registers and reads each row operand once for all of
  // them. Each cell is still one lane of one accumulator, accumulating in its own order. Not
  // when a read strided along the lanes stays unpacked: 4 vectors of such gathers only touch
  // more lines at once.
  int groups = (w.prec == Prec::F32 || w.prec == Prec::F64) && extent(lane) >= 4 * width ? 4 : 1;
  std::vector<const Expr*> packed = pack_plan(width * groups);
  for (const Expr* g : reads) {
    if (groups == 1 || g->name == w.name) continue;
    const std::int64_t st = flat_coefficient(plan_.node(g->name), g->indices, lane->sym);
    if (st != 0 && st != 1 && std::find(packed.begin(), packed.end(), g) == packed.end()) {
      groups = 1;
      packed = pack_plan(width);
    }
  }
  const int block = width * groups;
  const std::int64_t lane_blocks = (extent(lane) + block - 1) / block;
  const bool lane_first = !packed.empty();  // tiles are reused across the row loop inside
  // Loop-invariant code motion: what the lane loop does not depend on is computed once per row
  // block (hoisted_invariants), not once per lane block.
  const std::vector<const Expr*> hoisted = row && !lane_first
                                               ? hoisted_invariants(set.value, w, lane, unroll, reduced_trips)
                                               : std::vector<const Expr*>{};
  // The same motion into column panels (panel_row_blocks): the reduced loop in chunks, so the
  // budget holds for the smallest chunk.
  const std::vector<const Expr*> panel_hoisted =
      row && !lane_first ? hoisted_invariants(set.value, w, lane, kPanelBlocks * unroll, 16, true)
                         : std::vector<const Expr*>{};
  const std::int64_t row_blocks = row ? extent(row) / unroll : 0;
  const bool has_rest = row && row_blocks * unroll < extent(row);
  // Two passes when the row loop has a remainder and comes first: full row blocks, then the rest.
  for (int pass = 0; pass < (!lane_first && has_rest ? 2 : 1); ++pass) {
    const bool rest_pass = pass == 1;
    const std::int64_t first_trips =
        lane_first || !row ? lane_blocks : (rest_pass ? extent(row) - row_blocks * unroll : row_blocks);
    if (first_trips < 1) continue;
    const bool parallel = opts_.parallel && saturating_mul(codegen::trip_count(outer), first_trips) >= 2;
    if (parallel) em_.line(pragma(static_cast<int>(outer.size()) + 1));
    for (const Stmt* l : outer) em_.line(em_.loop_header(*l));
    if (lane_first || !row) {
      lane_block_loop(lane, block, lane_blocks, [&](const std::string& nl) {
        pack_tiles(packed, shape, lane, block, nl);
        if (row) {
          if (row_blocks > 0) {
            const std::string rb = em_.fresh("rb");
            em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", rb, row_blocks));
            lane_groups(shape, w, lane, nl, width, groups, row, Aff{{{rb, unroll}}, row->from}, unroll,
                        packed);
            em_.close();
          }
          if (has_rest) {
            const std::string rr = em_.fresh("rr");
            em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} <= {2}; ++{0})", rr,
                                 row->from + row_blocks * unroll, row->to));
            lane_groups(shape, w, lane, nl, width, groups, row, Aff{{{rr, 1}}, 0}, 1, packed);
            em_.close();
          }
        } else {
          lane_groups(shape, w, lane, nl, width, groups, nullptr, Aff{}, 1, packed);
        }
      });
    } else if (!rest_pass && column_panels(panel_hoisted, shape, w, row, unroll, row_blocks)) {
      panel_row_blocks(panel_hoisted, shape, w, lane, row, width, groups, unroll, row_blocks, lane_blocks);
    } else {
      const std::string rb = em_.fresh(rest_pass ? "rr" : "rb");
      Aff row_aff =
          rest_pass ? Aff{{{rb, 1}}, row->from + row_blocks * unroll} : Aff{{{rb, unroll}}, row->from};
      em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", rb, first_trips));
      precompute_invariants(hoisted, shape, row, row_aff, rest_pass ? 1 : unroll);
      lane_block_loop(lane, block, lane_blocks, [&](const std::string& nl) {
        lane_groups(shape, w, lane, nl, width, groups, row, row_aff, rest_pass ? 1 : unroll, packed);
      });
      invariants_.clear();
      em_.close();
    }
    for (std::size_t i = outer.size(); i-- > 0;) em_.unbind_sym(outer[i]->sym);
    if (!outer.empty()) {
      // The collapsed headers carry no braces; the block loop's braces closed above.
    }
  }
  em_.close();
}

// The roles of a reduction nest's target loops: the lane loop (unit stride in w, else the largest
// extent; none when every target loop has one iteration), the row loop (the largest other extent of
// at least 2) and the others, outermost first.
CGenerator::ReductionLoops CGenerator::reduction_loops(const NestShape& shape, const Node& w) {
  const Stmt& set = *shape.nest.set;
  auto extent = [](const Stmt* l) { return l->to - l->from + 1; };
  ReductionLoops roles;
  const Stmt*& lane = roles.lane;
  for (const Stmt* t : shape.target) {
    if (extent(t) < 2) continue;
    const std::int64_t st = flat_coefficient(w, set.indices, t->sym);
    if (!lane || (st == 1 && flat_coefficient(w, set.indices, lane->sym) != 1) ||
        (st != 1 && flat_coefficient(w, set.indices, lane->sym) != 1 && extent(t) > extent(lane)))
      lane = t;
  }
  const Stmt*& row = roles.row;
  for (const Stmt* t : shape.target)
    if (t != lane && extent(t) >= 2 && (!row || extent(t) >= extent(row))) row = t;
  for (const Stmt* t : shape.target)
    if (t != lane && t != row) roles.outer.push_back(t);
  return roles;
}

// Copies each packed read, for every lane of the block and every reduced iteration, into a
// stack tile laid out [reduced iteration][lane].
void CGenerator::pack_tiles(const std::vector<const Expr*>& packed, const NestShape& shape, const Stmt* lane,
                            int width, const std::string& nl) {
  tiles_.clear();
  for (const Expr* g : packed) {
    const Node& x = plan_.node(g->name);
    const std::string tile = em_.fresh("tile");
    tiles_[g] = tile;
    const std::int64_t trips = codegen::trip_count(shape.reduced);
    em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(x.prec, Dialect::C), tile,
                         trips * width));
    for (const Stmt* r : shape.reduced) em_.open(em_.loop_header(*r));
    const std::string j = em_.fresh("j");
    em_.bind_sym(lane->sym, Aff{{{lane_block_, width}, {j, 1}}, lane->from});
    Aff at = reduced_linear(shape);
    for (auto& [v, c] : at.terms) c *= width;
    at.off *= width;
    at.terms[j] += 1;
    em_.line(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0}) {2}[{3}] = {4};", j, nl, tile, at.str(),
                         em_.load(x, em_.offset(x, g->indices))));
    em_.unbind_sym(lane->sym);
    for (auto it = shape.reduced.rbegin(); it != shape.reduced.rend(); ++it) {
      em_.close();
      em_.unbind_sym((*it)->sym);
    }
  }
}

// Σ (r - from) · (product of the later reduced extents): the reduced iteration's tile row.
Aff CGenerator::reduced_linear(const NestShape& shape) const {
  Aff a;
  std::int64_t mult = 1;
  for (std::size_t k = shape.reduced.size(); k-- > 0;) {
    const Stmt* r = shape.reduced[k];
    Aff v = em_.index_aff(Index::iter(r->sym));
    for (const auto& [var, c] : v.terms) a.terms[var] += c * mult;
    a.off += (v.off - r->from) * mult;
    mult *= r->to - r->from + 1;
  }
  return a;
}

// A lane block of `groups` vectors of `width` lanes: a full block runs all groups in one lane
// loop (groups × rows accumulators per lane); a partial one (the lane loop's last block) runs
// group by group, each a lane loop over what is left of it.
void CGenerator::lane_groups(const NestShape& shape, const Node& w, const Stmt* lane, const std::string& nl,
                             int width, int groups, const Stmt* row, const Aff& row_aff, int rows,
                             const std::vector<const Expr*>& packed) {
  const int block = width * groups;
  const Aff start{{{lane_block_, block}}, lane->from};
  if (groups == 1) {
    lanes(shape, w, lane, nl, block, {start}, {Aff{}}, row, row_aff, rows, packed);
    return;
  }
  const LaneGroups lg = register_block_groups(start, groups, width);
  em_.open(fmt::format("if ({} == {})", nl, block));
  em_.line(fmt::format("/* register block: {} vectors of {} lanes x {} rows */", groups, width, rows));
  lanes(shape, w, lane, std::to_string(width), block, lg.bases, lg.cols, row, row_aff, rows, packed);
  em_.close();
  const std::string g = em_.fresh("g"), ng = em_.fresh("ng");
  em_.open(fmt::format("else for (fpc_i64 {0} = 0; {0} * {1} < {2}; ++{0})", g, width, nl));
  em_.line(
      fmt::format("const fpc_i64 {0} = {1} - {2} * {3} < {2} ? {1} - {2} * {3} : {2};", ng, nl, width, g));
  Aff b = start, c;
  b.terms[g] += width;
  c.terms[g] += width;
  lanes(shape, w, lane, ng, block, {b}, {c}, row, row_aff, rows, packed);
  em_.close();
}

// The omp-simd lane loop (j < count): for each group g the lane symbol is bases[g] + j, and
// `rows` cells per lane and group (row symbol = row_aff + k), each loaded, carried through the
// reduced loops in a scalar, stored. Packed tiles are [reduced iteration][block], the group's
// column cols[g] + j.
void CGenerator::lanes(const NestShape& shape, const Node& w, const Stmt* lane, const std::string& count,
                       int block, const std::vector<Aff>& bases, const std::vector<Aff>& cols,
                       const Stmt* row, const Aff& row_aff, int rows,
                       const std::vector<const Expr*>& packed) {
  const Stmt& set = *shape.nest.set;
  const std::string j = em_.fresh("j");
  if (opts_.parallel) em_.line("#pragma omp simd");
  em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, count));
  const std::size_t ng = bases.size();
  auto bind_lane = [&](std::size_t g) {
    Aff a = bases[g];
    a.terms[j] += 1;
    em_.bind_sym(lane->sym, a);
  };
  auto bind_row = [&](int k) {
    if (!row) return;
    Aff ra = row_aff;
    ra.off += k;
    em_.bind_sym(row->sym, ra);
  };
  std::vector<std::string> acc;
  std::vector<Aff> offs;
  const char* ct = codegen::ctype(w.prec, Dialect::C);
  for (std::size_t g = 0; g < ng; ++g) {
    bind_lane(g);
    for (int k = 0; k < rows; ++k) {
      bind_row(k);
      acc.push_back(em_.fresh("a"));
      offs.push_back(em_.offset(w, set.indices));
      std::string init = zero_start_ ? em_.literal(0.0, w.prec) : em_.load(w, offs.back());
      if (chunk_ && zero_start_)  // only the first chunk starts at +0; later ones carry the cell on
        init = fmt::format("{} ? {} : {}", chunk_->starts, init, em_.load(w, offs.back()));
      em_.line(fmt::format("{} {} = {};", ct, acc.back(), init));
    }
  }
  std::string reduced_var;
  for (const Stmt* r : shape.reduced) {
    if (chunk_) {
      reduced_var = em_.fresh_named('s', r->sym);
      em_.bind_sym(r->sym, Aff{{{reduced_var, 1}}, 0});
      em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} < {1} + {2}LL; ++{0})", reduced_var, chunk_->first,
                           chunk_->count));
    } else {
      em_.open(em_.loop_header(*r));
    }
    em_.push_scope();
  }
  const std::int64_t trips = codegen::trip_count(shape.reduced);
  for (std::size_t g = 0; g < ng; ++g) {
    bind_lane(g);
    if (!packed.empty()) {
      Aff at = reduced_linear(shape);
      for (auto& [v, c] : at.terms) c *= block;
      at.off *= block;
      for (const auto& [v, c] : cols[g].terms) at.terms[v] += c;
      at.off += cols[g].off;
      at.terms[j] += 1;
      for (const Expr* p : packed) em_.substitute_expr(p, fmt::format("{}[{}]", tiles_.at(p), at.str()));
    }
    for (int k = 0; k < rows; ++k) {
      bind_row(k);
      const std::string& a = acc[g * static_cast<std::size_t>(rows) + static_cast<std::size_t>(k)];
      em_.substitute(w.name, a);
      if (!invariants_.empty()) {
        const std::string at = reduced_linear(shape).str();
        for (const auto& [h, array] : invariants_)
          em_.substitute_expr(
              h, chunk_ ? fmt::format("{}[({} - {}) * {}LL + {} * {} + {}]", array, reduced_var,
                                      chunk_->first, chunk_->panel_rows, chunk_->row_block, rows, k)
                        : fmt::format("{}[{} * {}LL + {}]", array, k, trips, at));
      }
      const std::string v = em_.convert(em_.expr(set.value), set.value->prec, w.prec);
      em_.line(fmt::format("{} = {};", a, v));
      for (const auto& [h, array] : invariants_) em_.unsubstitute_expr(h);
      em_.unsubstitute(w.name);
    }
    em_.clear_expr_substitutions();
  }
  for (auto it = shape.reduced.rbegin(); it != shape.reduced.rend(); ++it) {
    em_.pop_scope();
    em_.close();
    em_.unbind_sym((*it)->sym);
  }
  for (std::size_t i = 0; i < acc.size(); ++i) em_.line(em_.store(w, offs[i], acc[i]));
  if (row) em_.unbind_sym(row->sym);
  em_.unbind_sym(lane->sym);
  em_.close();
}

}  // namespace fp::codegen
