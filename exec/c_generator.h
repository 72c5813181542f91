#pragma once
// Internal to exec/: the C code generator behind generate_c (exec/c_codegen.h). Not an interface of
// the library: only exec/c_codegen.cpp and the exec/c_schedule_*.cpp files include it. One
// CGenerator emits the C function of one placed routine; its members are defined by schedule, one
// file per schedule, each file's comment saying what that schedule emits and when it applies:
//
//   exec/c_codegen.cpp                  the driver: the support prelude, the entry function, buffer
//                                       allocation and release per top-level position, the choice of a
//                                       schedule per statement, and the plain schedule (a parallel band, omp
//                                       simd on the innermost loop)
//   exec/c_schedule_lanes.cpp           bands with per-iteration state, run statement by statement across
//                                       blocks of lanes
//   exec/c_schedule_private_tiles.cpp   row-private buffers kept as per-lane-block slices on the stack
//   exec/c_schedule_fission.cpp         a lane loop split into per-iteration locals, then a register-resident
//                                       accumulation
//   exec/c_schedule_paired_exps.cpp     two exponentials of a lane store, one of them usually exp(0)
//   exec/c_schedule_reduction.cpp       reduction nests: lanes, unrolled rows, packed tiles, register blocks
//   exec/c_schedule_zero_fold.cpp       a `zero` folded into the accumulation that follows it
//   exec/c_schedule_row_fusion.cpp      a row reduction and the pointwise statement consuming its rows
//   exec/c_schedule_row_reductions.cpp  row reductions: order-free max/min, rows in panels
//   exec/c_schedule_invariants.cpp      loop-invariant code motion in reduction nests (row-block arrays,
//                                       column panels)
//
// Every schedule changes no value: each file's comments say why.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/access_census.h"
#include "core/ir.h"
#include "exec/c_codegen.h"
#include "exec/codegen_emitter.h"
#include "exec/program_plan.h"

namespace fp::codegen {

using codegen::Aff;
using codegen::Dialect;
using codegen::Emitter;

// A register block's `groups` vectors of `width` lanes: each vector's first cell (start + g·width)
// and its column offset within the block (g·width).
struct LaneGroups {
  std::vector<Aff> bases, cols;
};
inline LaneGroups register_block_groups(const Aff& start, int groups, int width) {
  LaneGroups out;
  for (int g = 0; g < groups; ++g) {
    Aff b = start, c;
    b.off += g * width;
    c.off = g * width;
    out.bases.push_back(b);
    out.cols.push_back(c);
  }
  return out;
}

class CGenerator {
 public:
  CGenerator(const ProgramPlan& plan, const CCodegenOptions& opts)
      : plan_(plan), opts_(opts), em_(plan, Dialect::C) {}

  std::string run();

 private:
  // ---- lanes (c_schedule_lanes.cpp) ---------------------------------------------------------

  // A statement run in lanes (lane_band): its loop chain, the band of independent iterations in
  // it (chain[first .. first + band.size())), the band's widest loop (the lanes) and whether the
  // band runs in parallel.
  struct LanePlan {
    std::vector<const Stmt*> chain;
    std::size_t first = 0;
    std::vector<const Stmt*> band;
    const Stmt* lane = nullptr;
    std::vector<const Stmt*> others;  // the band without the lane loop
    std::int64_t blocks = 0;          // lane blocks of kLaneWidth
    bool parallel = false;
  };
  static constexpr int kLaneWidth = 16;

  // A perfect nest accumulating into cells of the lane's own (`T[j, row] += q[row, d]·k[j, d]`
  // over d, `U[e, row] += T[j, row]·v[j, e]` over j): at most one loop of the nest indexes the
  // store (a plain iterator: the cells), the others are reduced, and the value reads the stored
  // node only at the stored cell (not through a replay either). (The store's other indices use
  // enclosing symbols — the band's, a block's key — so this is not a NestShape.)
  struct LaneReduction {
    const Stmt* set = nullptr;
    const Stmt* cells = nullptr;       // the loop indexing the store, or null (one cell)
    std::vector<const Stmt*> reduced;  // the other loops, outermost first
  };
  static constexpr std::int64_t kLaneCells = 8;  // lane_register_reduction: cells per lane

  // The current lane block: the lane loop, the C variable counting its lanes, the block's width.
  struct LaneCtx {
    const Stmt* lane;
    std::string nl;
    int width;
  };
  // A lane local: the IR local and the C array over the lanes holding it.
  struct LaneLocal {
    std::string name, array;
    Prec prec;
  };
  static constexpr int kChunk = 64;  // panel_loop: iterations per chunk

  // ---- row-private tiles (c_schedule_private_tiles.cpp) -------------------------------------

  struct PrivateTile {
    int node = -1;
    std::vector<bool> row;  // per axis: indexed by a loop of the rows (dropped in the slice)
    std::size_t lane_axis = 0;
    std::int64_t slice_cells = 0;  // kept cells × kLaneWidth
    std::int64_t slice_bytes = 0;
  };
  // One statement's slices and the bytes they hold at once (a C expression: one set per thread
  // running the band).
  struct PrivateTiles {
    std::vector<PrivateTile> tiles;
    std::string bytes;
  };

  // ---- loop fission (c_schedule_fission.cpp) ------------------------------------------------

  // A lane loop split in two phases (fission_of).
  struct Fission {
    std::vector<const Stmt*> a;      // phase A statements
    const Stmt* b = nullptr;         // the store nest
    std::vector<const Stmt*> loops;  // its loops, outermost first
    const Stmt* set = nullptr;       // its store
  };
  static constexpr std::int64_t kMaxFissionCells = 256;  // the innermost loop's cells kept in registers

  // ---- reduction nests (c_schedule_reduction.cpp) -------------------------------------------

  static constexpr int kRowUnroll = 6;  // reduction_nest: rows per lane
  // The roles of a reduction nest's target loops (reduction_loops).
  struct ReductionLoops {
    const Stmt* lane = nullptr;
    const Stmt* row = nullptr;
    std::vector<const Stmt*> outer;
  };

  // ---- row fusion (c_schedule_row_fusion.cpp) -----------------------------------------------

  // A row reduction R and the pointwise statement P that runs row by row inside it (row_fusion).
  struct RowFusion {
    int position = -1;                                      // P's top-level position
    std::string w;                                          // R's stored node
    std::vector<Index> w_indices;                           // R's store indices (in R's target symbols)
    NestShape p;                                            // P's shape
    std::vector<std::pair<std::string, std::string>> rows;  // (T's symbol, L's symbol)
  };

  // ---- row reductions (c_schedule_row_reductions.cpp) ---------------------------------------

  static constexpr int kOrderFreeLanes = 64;  // order_free_rows: partial results per row

  // ---- column panels (c_schedule_invariants.cpp) --------------------------------------------

  static constexpr int kPanelBlocks = 8;  // row blocks per column panel
  // The reduced loop's chunk that lanes() runs inside a column panel (panel_chunk).
  struct ChunkState {
    std::string first, starts, row_block;  // C: the chunk's first iteration, "it is the first chunk", block
    std::int64_t count = 0, panel_rows = 0;
  };

  // ---- the driver (c_codegen.cpp) -----------------------------------------------------------
  static std::string sanitize_comment(const std::string& s);
  std::int64_t pool_limit() const;
  bool stack_buffer(int i) const;
  void allocate(const std::vector<int>& nodes);
  void release(const std::vector<int>& nodes);
  void body(const Stmt& seq);
  void position(const Stmt& s);
  std::string pragma(int collapse) const;
  void top_statement(const Stmt& s);
  static bool perfect_chain(const std::vector<const Stmt*>& chain);
  std::pair<int, int> parallel_run(const std::vector<const Stmt*>& chain) const;
  void loops(const std::vector<const Stmt*>& chain, std::size_t k, int first, int count);
  // Helpers several schedules share.
  void lane_block_loop(const Stmt* lane, int width, std::int64_t blocks,
                       const std::function<void(const std::string&)>& body);
  static void collect_reads(const ExprP& e, std::vector<const Expr*>& out);
  static std::int64_t flat_coefficient(const Node& n, const std::vector<Index>& indices,
                                       const std::string& sym);
  const Node& node_at(int i) const { return plan_.placed.nodes[static_cast<std::size_t>(i)]; }

  // ---- lanes (c_schedule_lanes.cpp) ---------------------------------------------------------
  std::optional<LanePlan> lane_plan(const Stmt& s) const;
  static bool several_statements(const std::vector<StmtP>& body);
  static bool has_state(const std::vector<StmtP>& body);
  static bool whole_per_lane(const Stmt& s);
  std::optional<LaneReduction> lane_reduction(const Stmt& s) const;
  void lane_register_reduction(const LaneReduction& lr);
  void agreeing_lanes_guard(const Stmt& s);
  bool uniform_guard(const Stmt& s) const;
  void lane_band(const LanePlan& lp);
  std::string open_lanes(bool simd);
  void close_lanes();
  void panel_loop(const Stmt& loop, const std::function<void()>& body,
                  const std::function<void(const std::string&, const std::string&)>& after_chunk = {});
  void lane_list(const std::vector<StmtP>& body);
  void lane_stmt(const Stmt& s);
  void lane_scan(const Stmt& s);

  // ---- row-private tiles (c_schedule_private_tiles.cpp) -------------------------------------
  bool private_tile(int i) const { return private_nodes_.count(i) > 0; }
  void plan_private_tiles();
  void open_private_tiles(const std::vector<PrivateTile>& tiles, const LanePlan& lp);

  // ---- loop fission (c_schedule_fission.cpp) ------------------------------------------------
  std::optional<Fission> fission_of(const Stmt& loop) const;
  void fissioned_loop(const Stmt& loop, const Fission& f);

  // ---- paired exponentials (c_schedule_paired_exps.cpp) -------------------------------------
  static std::vector<const Expr*> exps_of(const Stmt& s);
  std::vector<std::string> paired_exps(const Stmt& s);

  // ---- reduction nests (c_schedule_reduction.cpp) -------------------------------------------
  void reduction_nest(const NestShape& shape);
  static ReductionLoops reduction_loops(const NestShape& shape, const Node& w);
  void pack_tiles(const std::vector<const Expr*>& packed, const NestShape& shape, const Stmt* lane, int width,
                  const std::string& nl);
  Aff reduced_linear(const NestShape& shape) const;
  void lane_groups(const NestShape& shape, const Node& w, const Stmt* lane, const std::string& nl, int width,
                   int groups, const Stmt* row, const Aff& row_aff, int rows,
                   const std::vector<const Expr*>& packed);
  void lanes(const NestShape& shape, const Node& w, const Stmt* lane, const std::string& count, int block,
             const std::vector<Aff>& bases, const std::vector<Aff>& cols, const Stmt* row, const Aff& row_aff,
             int rows, const std::vector<const Expr*>& packed);

  // ---- a zero folded into the accumulation (c_schedule_zero_fold.cpp) -----------------------
  bool zero_taken_by_next(int p) const;
  void emit_pending_zero(const Stmt& s);
  void zero_now(const Node& w);

  // ---- row fusion (c_schedule_row_fusion.cpp) -----------------------------------------------
  std::optional<RowFusion> row_fusion(int p);
  void row_epilogue();

  // ---- row reductions (c_schedule_row_reductions.cpp) ---------------------------------------
  bool order_free_rows(const NestShape& shape, const Node& w);
  bool transposing_copy(const Expr* g, const std::string& panel, const Stmt* lane, const Stmt* red, int block,
                        const std::string& nl, const std::string& c0, const std::string& cn);
  bool rows_in_panels(const NestShape& shape, const Node& w, const Stmt* lane,
                      const std::vector<const Stmt*>& outer, int width);

  // ---- loop-invariant code motion and column panels (c_schedule_invariants.cpp) -------------
  std::vector<const Expr*> hoisted_invariants(const ExprP& value, const Node& w, const Stmt* lane, int rows,
                                              std::int64_t trips, bool direct = false) const;
  bool invariant_replay(const Expr& e, const Node& w, const Stmt* lane) const;
  void precompute_invariants(const std::vector<const Expr*>& hoisted, const NestShape& shape, const Stmt* row,
                             const Aff& row_aff, int rows);
  bool column_panels(const std::vector<const Expr*>& hoisted, const NestShape& shape, const Node& w,
                     const Stmt* row, int unroll, std::int64_t row_blocks) const;
  void panel_row_blocks(const std::vector<const Expr*>& hoisted, const NestShape& shape, const Node& w,
                        const Stmt* lane, const Stmt* row, int width, int groups, int unroll,
                        std::int64_t row_blocks, std::int64_t lane_blocks);
  void panel_chunk(const NestShape& shape, const Node& w, const Stmt* lane, const Stmt* row, int width,
                   int groups, int unroll, std::int64_t lane_blocks, const std::string& pb,
                   const std::string& nb, std::int64_t panel_rows, const std::string& first,
                   std::int64_t count);

  // ---- state --------------------------------------------------------------------------------
  const ProgramPlan& plan_;
  CCodegenOptions opts_;
  Emitter em_;
  std::string lane_block_;                     // the current lane block's loop variable
  std::optional<LaneCtx> lane_;                // inside lane_band
  int split_guards_ = 0;                       // agreeing_lanes_guard: split guards around the code now
  std::map<int, PrivateTiles> private_tiles_;  // per position (plan_private_tiles)
  std::set<int> private_nodes_;                // the nodes kept in them
  std::vector<LaneLocal> lane_locals_;         // lane locals in scope, in declaration order
  std::vector<bool> lane_simd_;                // open lane loops: simd (with gathers hoisted)?
  std::vector<std::string> held_;              // output held while a lane loop's body is emitted
  std::vector<std::string> carried_prev_;      // the enclosing lane scans' carried `prev` names
  std::string panel_t0_;                       // the innermost panel loop's chunk start
  std::set<std::string> band_writes_;          // nodes the current lane band writes (never panelled)
  bool simd_innermost_ = false;                // loops(): omp simd on the innermost loop
  std::optional<RowFusion> epilogue_;          // the pointwise statement to run per finished row
  bool epilogue_used_ = false;                 // row_epilogue() emitted epilogue_
  std::vector<std::string> pending_zeros_;     // `zero`s deferred to the next statement that is not a zero
  bool zero_start_ = false;                    // reduction_nest: cells start at +0, not loaded
  std::set<int> fused_;                        // positions already run inside a row reduction
  std::map<const Expr*, std::string> tiles_;   // packed reads of the current block
  std::optional<ChunkState> chunk_;            // inside panel_chunk
  std::vector<std::pair<const Expr*, std::string>> invariants_;  // hoisted expressions -> their arrays
};

}  // namespace fp::codegen
