// CUDA code generation (exec/cuda_codegen.h).

#include "exec/cuda_codegen.h"

#include <fmt/format.h>

#include <set>

#include "core/diagnostic.h"
#include "exec/codegen_emitter.h"
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
    return CudaProgramText{std::move(o), std::move(launches_)};
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
    l.params = open_kernel(name, nodes);
    std::optional<NestShape> shape = nest_shape(s);
    std::vector<const Stmt*> grid;
    if (shape && !shape->target.empty()) {
      grid = shape->target;
      thread_loop(grid);
      cell(*shape);
    } else {
      std::vector<const Stmt*> chain = codegen::loop_chain(s);
      std::size_t k = 0;
      while (k < chain.size() && codegen::parallel_safe(plan_, *chain[k])) ++k;
      grid.assign(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(k));
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

  // The grid-stride loop over the collapsed iteration space of `loops` (innermost fastest), with
  // each loop symbol bound to its decoded variable. Leaves the loop open.
  void thread_loop(const std::vector<const Stmt*>& loops) {
    const std::string i = em_.fresh("fpx_i");
    em_.open(fmt::format(
        "for (fpc_i64 {0} = (fpc_i64)blockIdx.x * blockDim.x + threadIdx.x; {0} < fpx_total; {0} += "
        "(fpc_i64)gridDim.x * blockDim.x)",
        i));
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
};

}  // namespace

CudaProgramText generate_cuda(const ProgramPlan& plan, const std::string& kernel_prefix) {
  return CudaGenerator(plan, kernel_prefix).run();
}

std::vector<std::string> cuda_semantic_options() {
  return {"-fmad=false", "-prec-div=true", "-prec-sqrt=true", "-ftz=false"};
}

}  // namespace fp
