// CUDA code generation (exec/cuda_codegen.h).

#include "exec/cuda_codegen.h"

#include <fmt/format.h>

#include <set>

#include "core/diagnostic.h"
#include "exec/codegen_emitter.h"
#include "exec/cuda_row_kernel.h"
#include "exec/numerics_text.h"

namespace fp {

namespace {

using codegen::Aff;
using codegen::Dialect;
using codegen::Emitter;

constexpr const char* kPrelude = R"(
/* ---- executor support (exec/cuda_codegen.cpp) ------------------------------------------- */
#ifndef FPX_CUDA_SUPPORT_DEFINED
#define FPX_CUDA_SUPPORT_DEFINED
#define FPX_NAN fpc_from_bits(0x7ff8000000000000ull)
#define FPX_INF fpc_from_bits(0x7ff0000000000000ull)
#define FPX_NANF ((float)FPX_NAN)
#define FPX_INFF ((float)FPX_INF)
static __device__ __forceinline__ fpc_i32 fpx_i32_max(fpc_i32 a, fpc_i32 b) { return a > b ? a : b; }
static __device__ __forceinline__ fpc_i32 fpx_i32_min(fpc_i32 a, fpc_i32 b) { return a < b ? a : b; }
#endif
)";

void collect_nodes(const ExprP& e, const ProgramPlan& plan, std::set<std::string>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Get) {
    if (plan.is_virtual(e->name)) {
      const auto& via = plan.replay_reads(e->name);
      out.insert(via.begin(), via.end());
    } else {
      out.insert(e->name);
    }
  }
  for (const auto& a : e->args) collect_nodes(a, plan, out);
}

void collect_nodes(const Stmt& s, const ProgramPlan& plan, std::set<std::string>& out) {
  if (s.kind == StmtKind::Set || s.kind == StmtKind::Zero) out.insert(s.name);
  collect_nodes(s.value, plan, out);
  for (const auto& c : s.carried) collect_nodes(c.init, plan, out);
  for (const auto& b : s.body)
    if (b) collect_nodes(*b, plan, out);
}

class CudaGenerator {
 public:
  CudaGenerator(const ProgramPlan& plan, std::string prefix)
      : plan_(plan), prefix_(std::move(prefix)), em_(plan, Dialect::Cuda) {}

  CudaProgramText run() {
    std::string& o = em_.out();
    o += fmt::format("/* flashproof compiled CUDA: routine '{}' (exec/cuda_codegen.cpp). */\n",
                     sanitize_comment(plan_.placed.name));
    o += numerics_c_text();
    o += kPrelude;
    if (plan_.top_level_locals) {
      whole_routine_kernel();
    } else {
      for (std::size_t p = 0; p < plan_.top.size(); ++p)
        if (!plan_.replayed[p]) position(static_cast<int>(p));
    }
    return CudaProgramText{std::move(o), std::move(launches_), std::move(private_nodes_)};
  }

 private:
  static std::string sanitize_comment(const std::string& s) {
    std::string out;
    for (char c : s) out += (c >= 32 && c < 127 && c != '*' && c != '/' && c != '\\') ? c : '?';
    return out;
  }

  // extern "C" __global__ void NAME(T* __restrict__ n_a, ..., fpc_i64 fpx_total) {
  std::vector<int> open_kernel(const std::string& name, const std::set<std::string>& nodes) {
    std::vector<int> params;
    std::string sig = fmt::format("extern \"C\" __global__ void {}(", name);
    for (const auto& n : nodes) {
      const Node& node = plan_.node(n);
      params.push_back(plan_.node_index.at(n));
      sig += fmt::format("{}* __restrict__ {}, ", codegen::stype(node.prec), em_.buffer(n));
    }
    sig += "fpc_i64 fpx_total)";
    em_.out() += "\n";
    em_.open(sig);
    em_.push_scope();
    return params;
  }

  void close_kernel() {
    em_.pop_scope();
    em_.close();
  }

  void whole_routine_kernel() {
    std::set<std::string> nodes;
    for (std::size_t p = 0; p < plan_.top.size(); ++p)
      if (!plan_.replayed[p]) collect_nodes(*plan_.top[p], plan_, nodes);
    const std::string name = fmt::format("{}_routine", prefix_);
    CudaLaunch l;
    l.kind = CudaLaunch::Kind::Kernel;
    l.position = 0;
    l.kernel = name;
    l.params = open_kernel(name, nodes);
    l.threads = 1;
    em_.open("if (blockIdx.x == 0 && threadIdx.x == 0)");
    body(*plan_.placed.body);
    em_.close();
    close_kernel();
    launches_.push_back(std::move(l));
  }

  // The routine body, statements that only define virtual nodes skipped (one thread).
  void body(const Stmt& seq) {
    em_.walk_blocks(seq, [&](const Stmt& s) {
      const int p = plan_.position_of(&s);
      if (p >= 0 && !plan_.replayed[static_cast<std::size_t>(p)]) em_.stmt(s);
    });
  }

  void position(int p) {
    const Stmt& s = *plan_.top[static_cast<std::size_t>(p)];
    if (s.kind == StmtKind::Comment || s.kind == StmtKind::Noop) return;
    if (s.kind == StmtKind::Zero) {
      CudaLaunch l;
      l.kind = CudaLaunch::Kind::Memset;
      l.position = p;
      l.node = plan_.node_index.at(s.name);
      launches_.push_back(l);
      return;
    }
    std::set<std::string> nodes;
    collect_nodes(s, plan_, nodes);
    const std::string name = fmt::format("{}_{}", prefix_, p);
    CudaLaunch l;
    l.kind = CudaLaunch::Kind::Kernel;
    l.position = p;
    l.kernel = name;
    std::optional<NestShape> shape = nest_shape(s);
    if (!shape || shape->target.empty()) {
      if (std::optional<codegen::RowKernelPlan> k = codegen::plan_row_kernel(plan_, p, parallel_rows(s))) {
        for (const codegen::RowPrivateNode& t : k->tiles) {
          nodes.erase(node_at(t.node).name);
          private_nodes_.push_back(t.node);
        }
        l.params = open_kernel(name, nodes);
        row_kernel(*k, l);
        close_kernel();
        launches_.push_back(std::move(l));
        return;
      }
    }
    l.params = open_kernel(name, nodes);
    std::vector<const Stmt*> grid;
    if (shape && !shape->target.empty()) {
      grid = shape->target;
      thread_loop(grid);
      cell(*shape);
    } else {
      grid = parallel_rows(s);
      if (grid.empty()) {
        em_.open("if (blockIdx.x == 0 && threadIdx.x == 0)");
        em_.stmt(s);
        em_.close();
      } else {
        thread_loop(grid);
        em_.stmt_list(grid.back()->body);
      }
    }
    if (!grid.empty()) {
      em_.close();  // the grid-stride loop
      for (const Stmt* g : grid) em_.unbind_sym(g->sym);
    }
    l.threads = grid.empty() ? 1 : codegen::trip_count(grid);
    close_kernel();
    launches_.push_back(std::move(l));
  }

  // The longest parallel-safe prefix of the statement's loop chain.
  std::vector<const Stmt*> parallel_rows(const Stmt& s) const {
    std::vector<const Stmt*> chain = codegen::loop_chain(s);
    std::size_t k = 0;
    while (k < chain.size() && codegen::parallel_safe(plan_, *chain[k])) ++k;
    chain.resize(k);
    return chain;
  }

  const Node& node_at(int i) const { return plan_.placed.nodes[static_cast<std::size_t>(i)]; }

  // The grid-stride loop over the collapsed iteration space of `loops` (innermost fastest), with
  // each loop symbol bound to its decoded variable. Leaves the loop open.
  void thread_loop(const std::vector<const Stmt*>& loops) {
    const std::string i = em_.fresh("fpx_i");
    em_.open(fmt::format(
        "for (fpc_i64 {0} = (fpc_i64)blockIdx.x * blockDim.x + threadIdx.x; {0} < fpx_total; {0} += "
        "(fpc_i64)gridDim.x * blockDim.x)",
        i));
    decode(i, loops);
  }

  // Binds each of `loops` to its digit of the collapsed index `i` (innermost fastest).
  void decode(const std::string& i, const std::vector<const Stmt*>& loops) {
    const std::string rest = em_.fresh("fpx_r");
    em_.line(fmt::format("fpc_i64 {} = {};", rest, i));
    for (std::size_t k = loops.size(); k-- > 0;) {
      const Stmt* l = loops[k];
      const std::int64_t extent = l->to - l->from + 1;
      const std::string v = em_.fresh_named('s', l->sym);
      em_.line(fmt::format("const fpc_i64 {} = {}LL + {} % {}LL;", v, l->from, rest, extent));
      em_.line(fmt::format("{} /= {}LL;", rest, extent));
      em_.bind_sym(l->sym, Aff{{{v, 1}}, 0});
    }
    em_.line(fmt::format("(void){};", rest));
  }

  // ---- the row kernel (exec/cuda_row_kernel.h) --------------------------------------------------
  //
  // Every thread of a block runs the same outer rows and the same scan iterations, so the
  // __syncthreads around the staging are reached by all of them: a thread past the last row
  // (`live` false) takes a valid row index for its addresses, stages with the others, and runs
  // nothing else. Each live thread runs its row's statements in program order, exactly as the
  // grid-stride kernel would; a staged load reads the cell the global load would have read (the
  // box holds it: plan_row_kernel), copied in the scan iteration that reads it, after every
  // read of the previous iteration's copy (the first __syncthreads).
  void row_kernel(const codegen::RowKernelPlan& k, CudaLaunch& l) {
    const Stmt& spread = *k.rows[k.spread];
    std::vector<const Stmt*> outer = k.rows;
    outer.erase(outer.begin() + static_cast<std::ptrdiff_t>(k.spread));
    std::vector<std::string> boxes;
    for (const codegen::StagedNode& st : k.staged) {
      const Node& n = node_at(st.node);
      boxes.push_back(em_.fresh("fpx_box"));
      em_.line(fmt::format("__shared__ {} {}[{}];  /* staged block of '{}' */", codegen::stype(n.prec),
                           boxes.back(), st.cells(), sanitize_comment(n.name)));
    }
    const std::string o = em_.fresh("fpx_o");
    em_.open(fmt::format("for (fpc_i64 {0} = blockIdx.y; {0} < fpx_total; {0} += gridDim.y)", o));
    decode(o, outer);
    const std::int64_t extent = spread.to - spread.from + 1;
    const std::string row = em_.fresh("fpx_row"), live = em_.fresh("fpx_live");
    em_.line(fmt::format("const fpc_i64 {} = (fpc_i64)blockIdx.x * blockDim.x + threadIdx.x;", row));
    em_.line(fmt::format("const int {} = {} < {}LL;", live, row, extent));
    const std::string v = em_.fresh_named('s', spread.sym);
    em_.line(fmt::format("const fpc_i64 {} = {}LL + ({} ? {} : 0);", v, spread.from, live, row));
    em_.bind_sym(spread.sym, Aff{{{v, 1}}, 0});
    em_.push_scope();
    for (const codegen::RowPrivateNode& t : k.tiles) open_tile(t, k.spread, v);
    em_.hook_scan(k.scan, codegen::Emitter::ScanHook{[&] { stage(k, boxes); }, live});
    for (const auto& b : *k.body) {
      if (!b || b->kind == StmtKind::Comment || b->kind == StmtKind::Noop) continue;
      if (b.get() == k.scan || b->kind == StmtKind::DeclareLocal) {
        em_.stmt(*b);
        continue;
      }
      em_.open(fmt::format("if ({})", live));
      em_.stmt(*b);
      em_.close();
    }
    em_.unhook_scan(k.scan);
    for (const codegen::StagedNode& st : k.staged) em_.unstage(node_at(st.node).name);
    for (const codegen::RowPrivateNode& t : k.tiles) em_.unprivatize(node_at(t.node).name);
    em_.pop_scope();
    em_.close();
    for (const Stmt* r : k.rows) em_.unbind_sym(r->sym);
    std::int64_t outer_rows = 1;
    for (const Stmt* r : outer) outer_rows *= r->to - r->from + 1;
    l.threads = outer_rows;
    l.rows = extent;
    l.block = static_cast<unsigned>(std::min<std::int64_t>(128, (extent + 31) / 32 * 32));
  }

  // A row-private tile as a per-thread array named like its buffer, zeroed (the lemma's fresh
  // slice), its row axes dropped: exec/row_private.h.
  void open_tile(const codegen::RowPrivateNode& t, std::size_t spread, const std::string& row_var) {
    const Node& n = node_at(t.node);
    codegen::Emitter::PrivateSlice slice;
    slice.row.assign(n.dims.size(), false);
    for (std::size_t a : t.axis) slice.row[a] = true;
    slice.lane_axis = t.axis[spread];
    slice.origin = Aff{{{row_var, 1}}, 0};
    slice.width = 1;
    const std::int64_t cells = codegen::slice_cells(n, t);
    const std::string b = em_.buffer(n.name);
    em_.line(fmt::format("{} {}[{}];  /* row-private tile of '{}' */", codegen::stype(n.prec), b, cells,
                         sanitize_comment(n.name)));
    const std::string z = em_.fresh("z");
    em_.line(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0}) {2}[{0}] = 0;", z, cells, b));
    em_.privatize(n.name, std::move(slice));
  }

  // The top of a scan iteration: the block copies each staged box (the scan's symbol is bound).
  void stage(const codegen::RowKernelPlan& k, const std::vector<std::string>& boxes) {
    em_.line("__syncthreads();");
    for (std::size_t i = 0; i < k.staged.size(); ++i) {
      const codegen::StagedNode& st = k.staged[i];
      const Node& n = node_at(st.node);
      std::vector<Aff> base;
      for (const Index& b : st.base) base.push_back(em_.index_aff(b));
      const std::string c = em_.fresh("fpx_c"), rest = em_.fresh("fpx_r");
      em_.open(fmt::format("for (fpc_i64 {0} = threadIdx.x; {0} < {1}LL; {0} += blockDim.x)", c, st.cells()));
      em_.line(fmt::format("fpc_i64 {} = {};", rest, c));
      std::vector<std::string> g(n.dims.size());
      std::string in_range, flat;
      std::int64_t stride = 1;
      for (std::size_t a = n.dims.size(); a-- > 0;) {
        g[a] = em_.fresh("fpx_g");
        em_.line(fmt::format("const fpc_i64 {} = {} + {} % {}LL;", g[a], base[a].str(), rest, st.extent[a]));
        em_.line(fmt::format("{} /= {}LL;", rest, st.extent[a]));
        in_range += fmt::format("{}{} >= 0 && {} < {}LL", in_range.empty() ? "" : " && ", g[a], g[a], n.dims[a]);
        flat += fmt::format("{}{} * {}LL", flat.empty() ? "" : " + ", g[a], stride);
        stride *= n.dims[a];
      }
      em_.line(fmt::format("(void){};", rest));
      em_.line(fmt::format("if ({}) {}[{}] = {}[{}];", in_range, boxes[i], c, em_.buffer(n.name), flat));
      em_.close();
      em_.stage(n.name, codegen::Emitter::StagedBox{boxes[i], std::move(base), st.extent});
    }
    em_.line("__syncthreads();");
  }

  // One cell of a nest: load (when the value reads it), the reduced loops on a scalar, store.
  void cell(const NestShape& shape) {
    const Stmt& set = *shape.nest.set;
    const Node& w = plan_.node(set.name);
    const Aff off = em_.offset(w, set.indices);
    if (shape.reduced.empty() && !shape.self_read) {
      em_.line(em_.store(w, off, em_.convert(em_.expr(set.value), set.value->prec, w.prec)));
      return;
    }
    em_.reduce_cell_in_scalar(shape);
  }

  const ProgramPlan& plan_;
  std::string prefix_;
  Emitter em_;
  std::vector<CudaLaunch> launches_;
  std::vector<int> private_nodes_;
};

}  // namespace

CudaProgramText generate_cuda(const ProgramPlan& plan, const std::string& kernel_prefix) {
  return CudaGenerator(plan, kernel_prefix).run();
}

CudaGeometry cuda_geometry(const CudaLaunch& l) {
  CudaGeometry g;
  g.total = l.threads;
  if (l.rows > 0) {
    g.block = l.block;
    g.grid_x = static_cast<unsigned>((l.rows + l.block - 1) / l.block);
    g.grid_y = static_cast<unsigned>(std::min<std::int64_t>(l.threads, 65535));
    return g;
  }
  g.block = l.threads > 1 ? 128u : 1u;
  const long long blocks_needed = (l.threads + g.block - 1) / g.block;
  g.grid_x = static_cast<unsigned>(std::max<long long>(1, std::min<long long>(blocks_needed, 1 << 20)));
  return g;
}

std::vector<std::string> cuda_semantic_options() {
  return {"-fmad=false", "-prec-div=true", "-prec-sqrt=true", "-ftz=false"};
}

}  // namespace fp
