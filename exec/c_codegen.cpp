// C code generation (exec/c_codegen.h): the top-level driver around the shared emitter — buffer
// lifetimes per the plan, and the schedules docs/executors.md describes: OpenMP on parallel-safe
// bands, reduction nests in lanes and rows (with packed tiles), bands with per-iteration state in
// lanes (with gathers and panels), omp simd on pointwise nests. Each schedule's comment says why it
// changes no value.

#include "exec/c_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/access_census.h"
#include "core/diagnostic.h"
#include "core/ir_visit.h"
#include "exec/codegen_emitter.h"
#include "exec/numerics_text.h"
#include "exec/row_private.h"

namespace fp {

namespace {

using codegen::Aff;
using codegen::Dialect;
using codegen::Emitter;

constexpr const char* kPrelude = R"(
/* ---- executor support (exec/c_codegen.cpp) ---------------------------------------------- */
#ifndef FPX_SUPPORT_DEFINED
#define FPX_SUPPORT_DEFINED
#define FPX_NAN fpc_from_bits(0x7ff8000000000000ull)
#define FPX_INF fpc_from_bits(0x7ff0000000000000ull)
#define FPX_NANF ((float)FPX_NAN)
#define FPX_INFF ((float)FPX_INF)

typedef struct fpx_ctx {
  int64_t live;         /* bytes of node buffers live now (memory-report accounting) */
  int64_t peak;         /* most bytes live at once */
  int64_t failed_bytes; /* size of an allocation that failed */
  int64_t threads;      /* worker threads for parallel loops */
} fpx_ctx;

static void fpx_account(fpx_ctx* ctx, int64_t bytes) {
  ctx->live += bytes;
  if (ctx->live > ctx->peak) ctx->peak = ctx->live;
}
/* Buffers are 64-byte aligned; from 4 MiB on, 2 MiB aligned and backed by transparent huge pages
 * where the kernel offers them (a fresh buffer's page faults are otherwise a large part of its
 * cost: the memory report's buffers are allocated on every run). A released buffer of 1 MiB or more
 * is kept in a small pool (at most FPX_POOL buffers, FPX_POOL_BYTES in all, shared by the programs
 * of this object, emptied when it is unloaded) and handed to the next allocation of the same
 * rounded size and alignment: a program run again reuses its buffers instead of faulting fresh
 * pages in. `limit` is the running program's memory-report peak plus 2 MiB (pool_limit()): the
 * pool keeps a buffer only while the buffers in use plus the pool stay within it, and is emptied
 * before a fresh allocation would take them above it, so the pool never raises the memory a run
 * holds more than 2 MiB above the report's peak (it is memory kept between runs). The counts (live, peak) count buffers in use, as the
 * report does, never the pool. */
#define FPX_POOL 16
#define FPX_POOL_BYTES ((size_t)2 << 30)
static void* fpx_pool_ptr[FPX_POOL];
static size_t fpx_pool_size[FPX_POOL];
static size_t fpx_pool_align[FPX_POOL];
static size_t fpx_pool_total;
static char fpx_pool_lock;
static void fpx_pool_acquire(void) {
  while (__atomic_test_and_set(&fpx_pool_lock, __ATOMIC_ACQUIRE)) {
  }
}
static void fpx_pool_unlock(void) { __atomic_clear(&fpx_pool_lock, __ATOMIC_RELEASE); }
static void* fpx_pool_take(size_t rounded, size_t align) {
  void* p = 0;
  fpx_pool_acquire();
  for (int i = 0; i < FPX_POOL && !p; ++i)
    if (fpx_pool_ptr[i] && fpx_pool_size[i] == rounded && fpx_pool_align[i] == align) {
      p = fpx_pool_ptr[i];
      fpx_pool_ptr[i] = 0;
      fpx_pool_total -= rounded;
    }
  fpx_pool_unlock();
  return p;
}
static int fpx_pool_give(void* p, size_t rounded, size_t align, size_t in_use, size_t limit) {
  int kept = 0;
  if (rounded < ((size_t)1 << 20)) return 0;
  fpx_pool_acquire();
  for (int i = 0; i < FPX_POOL && !kept; ++i)
    if (!fpx_pool_ptr[i] && fpx_pool_total + rounded <= FPX_POOL_BYTES &&
        in_use + fpx_pool_total + rounded <= limit) {
      fpx_pool_ptr[i] = p;
      fpx_pool_size[i] = rounded;
      fpx_pool_align[i] = align;
      fpx_pool_total += rounded;
      kept = 1;
    }
  fpx_pool_unlock();
  return kept;
}
static void fpx_pool_empty(void) {
  fpx_pool_acquire();
  for (int i = 0; i < FPX_POOL; ++i) {
    free(fpx_pool_ptr[i]);
    fpx_pool_ptr[i] = 0;
  }
  fpx_pool_total = 0;
  fpx_pool_unlock();
}
__attribute__((destructor)) static void fpx_pool_drain(void) { fpx_pool_empty(); }
/* Empties the pool when it and `rounded` fresh bytes would take the buffers in use over `limit`. */
static void fpx_pool_fit(size_t in_use, size_t rounded, size_t limit) {
  fpx_pool_acquire();
  if (fpx_pool_total > 0 && in_use + fpx_pool_total + rounded > limit) {
    for (int i = 0; i < FPX_POOL; ++i) {
      free(fpx_pool_ptr[i]);
      fpx_pool_ptr[i] = 0;
    }
    fpx_pool_total = 0;
  }
  fpx_pool_unlock();
}
static size_t fpx_align_of(size_t n) { return n >= ((size_t)4 << 20) ? ((size_t)2 << 20) : 64; }
static void* fpx_alloc(fpx_ctx* ctx, int64_t bytes, int zero, int64_t limit) {
  void* p = 0;
  size_t n = (size_t)(bytes > 0 ? bytes : 1);
  size_t align = fpx_align_of(n);
  size_t rounded = (n + align - 1) / align * align;
  p = fpx_pool_take(rounded, align);
  if (!p) {
    fpx_pool_fit((size_t)ctx->live, rounded, (size_t)limit);
    if (posix_memalign(&p, align, rounded) != 0) {
      ctx->failed_bytes = bytes;
      return 0;
    }
#ifdef MADV_HUGEPAGE
    if (align > 64) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  }
  if (zero) memset(p, 0, n);
  fpx_account(ctx, bytes);
  return p;
}
static void fpx_release(fpx_ctx* ctx, void* p, int64_t bytes, int64_t limit) {
  size_t n = (size_t)(bytes > 0 ? bytes : 1);
  size_t align = fpx_align_of(n);
  fpx_account(ctx, -bytes);
  if (!fpx_pool_give(p, (n + align - 1) / align * align, align, (size_t)ctx->live, (size_t)limit)) free(p);
}
/* The row panels' transposing copy (rows_in_panels in exec/c_codegen.cpp): dst[t * ldd + j] =
 * src[j * lds + t] for j < rows, t < cols. A copy, so it changes no value; with AVX-512, 16 x 16
 * blocks are transposed in registers (16 contiguous loads, 64 shuffles, 16 contiguous stores) instead
 * of one strided store per value. */
static inline void fpx_transpose_f32(const float* restrict src, fpc_i64 lds, fpc_i64 rows, fpc_i64 cols,
                                     float* restrict dst, fpc_i64 ldd) {
  fpc_i64 j0 = 0;
#if defined(__AVX512F__)
  for (; j0 + 16 <= rows; j0 += 16) {
    fpc_i64 t0 = 0;
    for (; t0 + 16 <= cols; t0 += 16) {
      __m512 r[16], u[16];
      int i;
      for (i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + (j0 + i) * lds + t0);
      for (i = 0; i < 16; i += 2) {
        u[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        u[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
      }
      for (i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(u[i]), _mm512_castps_pd(u[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(u[i]), _mm512_castps_pd(u[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(u[i + 1]), _mm512_castps_pd(u[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(u[i + 1]), _mm512_castps_pd(u[i + 3])));
      }
      for (i = 0; i < 4; ++i) {
        u[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        u[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        u[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        u[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
      }
      for (i = 0; i < 4; ++i) {
        r[i] = _mm512_shuffle_f32x4(u[i], u[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(u[i], u[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_f32x4(u[i + 4], u[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(u[i + 4], u[i + 12], 0xdd);
      }
      for (i = 0; i < 16; ++i) _mm512_storeu_ps(dst + (t0 + i) * ldd + j0, r[i]);
    }
    for (; t0 < cols; ++t0)
      for (fpc_i64 j = j0; j < j0 + 16; ++j) dst[t0 * ldd + j] = src[j * lds + t0];
  }
#endif
  for (; j0 < rows; ++j0)
    for (fpc_i64 t = 0; t < cols; ++t) dst[t * ldd + j0] = src[j0 * lds + t];
}
static inline fpc_i32 fpx_i32_max(fpc_i32 a, fpc_i32 b) { return a > b ? a : b; }
static inline fpc_i32 fpx_i32_min(fpc_i32 a, fpc_i32 b) { return a < b ? a : b; }

int fpx_abi_version(void) { return 1; }
#endif /* FPX_SUPPORT_DEFINED */
)";

// A register block's `groups` vectors of `width` lanes: each vector's first cell (start + g·width)
// and its column offset within the block (g·width).
struct LaneGroups {
  std::vector<Aff> bases, cols;
};
LaneGroups register_block_groups(const Aff& start, int groups, int width) {
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

  std::string run() {
    std::string& o = em_.out();
    o += fmt::format("/* flashproof compiled C: routine '{}' (exec/c_codegen.cpp). */\n",
                     sanitize_comment(plan_.placed.name));
    o += "#ifndef _GNU_SOURCE\n#define _GNU_SOURCE\n#endif\n#include <stdint.h>\n#include <stdlib.h>\n"
         "#include <string.h>\n#include <math.h>\n#include <sys/mman.h>\n"
         "#if defined(__AVX512F__)\n#include <immintrin.h>\n#endif\n\n";
    o += numerics_c_text();
    o += kPrelude;
    o += "\n";
    plan_private_tiles();
    em_.open(fmt::format("int {}(fpx_ctx* ctx, void** bufs)", opts_.entry));
    em_.line("const int fpx_nt = (int)ctx->threads;");
    em_.line("(void)fpx_nt;");
    const auto& nodes = plan_.placed.nodes;
    std::int64_t input_bytes = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (plan_.is_virtual(n.name) || (plan_.span[i].first < 0 && !n.is_output)) continue;
      if (stack_buffer(static_cast<int>(i)) || private_tile(static_cast<int>(i))) continue;
      if (n.is_input) {
        em_.line(fmt::format("{}* restrict {} = ({}*)bufs[{}];", codegen::stype(n.prec), em_.buffer(n.name),
                             codegen::stype(n.prec), i));
        input_bytes += em_.node_bytes(n);
      } else {
        em_.line(fmt::format("{}* restrict {} = 0;", codegen::stype(n.prec), em_.buffer(n.name)));
      }
    }
    if (input_bytes > 0) em_.line(fmt::format("fpx_account(ctx, {}LL);", input_bytes));
    em_.push_scope();
    if (plan_.top.empty()) {
      // No statement: inputs and outputs are live at one position (the memory report's rule).
      allocate(plan_.starting_at(0));
    } else {
      body(*plan_.placed.body);
    }
    em_.pop_scope();
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].is_output) em_.line(fmt::format("bufs[{}] = {};", i, em_.buffer(nodes[i].name)));
    em_.line("return 0;");
    // Allocation failure: free what this call allocated (outputs included) and report.
    o += "fpx_fail:\n";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (plan_.is_virtual(n.name) || n.is_input || plan_.span[i].first < 0 ||
          stack_buffer(static_cast<int>(i)) || private_tile(static_cast<int>(i)))
        continue;
      em_.line(fmt::format("if ({0}) fpx_release(ctx, {0}, {1}LL, {2}LL);", em_.buffer(n.name),
                           em_.node_bytes(n), pool_limit()));
    }
    em_.line("return 1;");
    em_.close();
    return o;
  }

 private:
  static std::string sanitize_comment(const std::string& s) {
    std::string out;
    for (char c : s) out += (c >= 32 && c < 127 && c != '*' && c != '/' && c != '\\') ? c : '?';
    return out;
  }

  // The bound the buffer pool keeps the run's buffers in (kPrelude): the memory report's peak plus
  // one 2 MiB alignment unit (pooled buffers count at their rounded size, the report at exact
  // sizes; with no slack at all a buffer that would fit exactly was sometimes refused).
  std::int64_t pool_limit() const {
    const std::int64_t unit = std::int64_t{2} << 20;
    const std::int64_t peak = plan_.report.peak_bytes;
    return peak > std::numeric_limits<std::int64_t>::max() - unit ? std::numeric_limits<std::int64_t>::max()
                                                                  : peak + unit;
  }

  bool stack_buffer(int i) const {
    const Node& n = plan_.placed.nodes[static_cast<std::size_t>(i)];
    const BufferSpan& s = plan_.span[static_cast<std::size_t>(i)];
    return n.mode == MemMode::Local && !n.is_input && !n.is_output && s.first >= 0 && s.first == s.last &&
           em_.node_bytes(n) <= opts_.stack_limit;
  }

  void allocate(const std::vector<int>& nodes) {
    for (int i : nodes) {
      const Node& n = plan_.placed.nodes[static_cast<std::size_t>(i)];
      if (n.is_input || plan_.is_virtual(n.name) || stack_buffer(i) || private_tile(i)) continue;
      const bool zero = plan_.top.empty() || !plan_.overwritten_first(i);
      em_.line(fmt::format("{0} = ({1}*)fpx_alloc(ctx, {2}LL, {3}, {4}LL);", em_.buffer(n.name),
                           codegen::stype(n.prec), em_.node_bytes(n), zero ? 1 : 0, pool_limit()));
      em_.line(fmt::format("if (!{}) goto fpx_fail;", em_.buffer(n.name)));
    }
  }

  void release(const std::vector<int>& nodes) {
    for (int i : nodes) {
      const Node& n = plan_.placed.nodes[static_cast<std::size_t>(i)];
      if (plan_.is_virtual(n.name) || n.is_output || stack_buffer(i) || private_tile(i)) continue;
      if (n.is_input) {
        em_.line(fmt::format("fpx_account(ctx, -{}LL);  /* input '{}' no longer live */", em_.node_bytes(n),
                             sanitize_comment(n.name)));
        continue;
      }
      em_.line(fmt::format("fpx_release(ctx, {0}, {1}LL, {2}LL); {0} = 0;", em_.buffer(n.name),
                           em_.node_bytes(n), pool_limit()));
    }
  }

  void body(const Stmt& seq) {
    em_.walk_blocks(seq, [&](const Stmt& s) { position(s); });
  }

  void position(const Stmt& s) {
    const int p = plan_.position_of(&s);
    FP_INTERNAL_CHECK(p >= 0, "top-level statement not in the plan");
    if (fused_.count(p)) {
      // Ran inside an earlier row reduction (row_fusion): its buffers were allocated there.
      release(plan_.ending_at(p));
      return;
    }
    allocate(plan_.starting_at(p));
    std::vector<int> stack;
    for (int i : plan_.starting_at(p))
      if (stack_buffer(i)) stack.push_back(i);
    if (!stack.empty()) {
      em_.open("");
      for (int i : stack) {
        const Node& n = plan_.placed.nodes[static_cast<std::size_t>(i)];
        em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::stype(n.prec),
                             em_.buffer(n.name), n.cell_count()));
        em_.line(fmt::format("memset({}, 0, sizeof {});", em_.buffer(n.name), em_.buffer(n.name)));
        em_.line(fmt::format("fpx_account(ctx, {}LL);", em_.node_bytes(n)));
      }
    }
    if (!plan_.replayed[static_cast<std::size_t>(p)] && s.kind == StmtKind::Zero && zero_taken_by_next(p)) {
      em_.line(fmt::format("/* statement {}: zero {} — its cells start at +0 in the next statement */", p + 1,
                           sanitize_comment(s.name)));
      pending_zeros_.push_back(s.name);
    } else if (!plan_.replayed[static_cast<std::size_t>(p)]) {
      emit_pending_zero(s);
      const auto privates = private_tiles_.find(p);
      const bool has_privates = privates != private_tiles_.end();
      std::optional<RowFusion> fusion = stack.empty() && !has_privates ? row_fusion(p) : std::nullopt;
      if (has_privates) em_.line(fmt::format("fpx_account(ctx, {});  /* row-private slices */", privates->second.bytes));
      if (fusion) {
        allocate(plan_.starting_at(fusion->position));
        em_.line(fmt::format("/* statement {} (statement {} fused into its rows) */", p + 1,
                             fusion->position + 1));
        epilogue_ = fusion;
        epilogue_used_ = false;
      } else {
        em_.line(fmt::format("/* statement {} */", p + 1));
      }
      top_statement(s);
      if (has_privates) em_.line(fmt::format("fpx_account(ctx, -({}));", privates->second.bytes));
      zero_start_ = false;
      if (fusion) {
        const bool used = epilogue_used_;
        epilogue_.reset();
        if (!used) {
          // The reduction took another schedule: the pointwise statement runs on its own, right after.
          em_.line(fmt::format("/* statement {} */", fusion->position + 1));
          top_statement(*plan_.top[static_cast<std::size_t>(fusion->position)]);
        }
        fused_.insert(fusion->position);
      }
    }
    if (!stack.empty()) {
      for (int i : stack)
        em_.line(fmt::format("fpx_account(ctx, -{}LL);",
                             em_.node_bytes(plan_.placed.nodes[static_cast<std::size_t>(i)])));
      em_.close();
    }
    release(plan_.ending_at(p));
  }

  std::string pragma(int collapse) const {
    if (!opts_.parallel) return {};
    return fmt::format("#pragma omp parallel for{} schedule(static) num_threads(fpx_nt) if(fpx_nt > 1)",
                       collapse > 1 ? fmt::format(" collapse({})", collapse) : "");
  }

  void top_statement(const Stmt& s) {
    std::optional<NestShape> shape = nest_shape(s);
    if (shape && opts_.jam && !shape->reduced.empty()) {
      reduction_nest(*shape);
      return;
    }
    // Any other statement: the perfect chain of loops at its top; its first run of parallel-safe
    // loops is a band of independent iterations, run in lanes when lane_plan says so.
    if (const std::optional<LanePlan> lanes = lane_plan(s)) {
      lane_band(*lanes);
      return;
    }
    std::vector<const Stmt*> chain = codegen::loop_chain(s);
    const bool perfect = perfect_chain(chain);
    auto [first, count] = parallel_run(chain);
    // Otherwise collapse the band, leaving the innermost loop of a perfect nest to the vectorizer.
    simd_innermost_ = shape && shape->reduced.empty() && perfect;
    if (first >= 0 && perfect && first + count == static_cast<int>(chain.size()) && count > 1) --count;
    if (first >= 0) {
      std::vector<const Stmt*> par(chain.begin() + first, chain.begin() + first + count);
      if (codegen::trip_count(par) < 2) first = -1;
    }
    if (!opts_.parallel) first = -1;
    if (first < 0 && !simd_innermost_) {
      em_.stmt(s);
      return;
    }
    loops(chain, 0, first, first < 0 ? 0 : count);
    simd_innermost_ = false;
  }

  // ---- lanes: a band of independent iterations run statement by statement --------------------

  static bool perfect_chain(const std::vector<const Stmt*>& chain) {
    return !chain.empty() && chain.back()->body.size() == 1 && chain.back()->body[0] &&
           chain.back()->body[0]->kind == StmtKind::Set;
  }

  // The first run of parallel-safe loops of a statement's loop chain: {first, count}, first < 0
  // when there is none.
  std::pair<int, int> parallel_run(const std::vector<const Stmt*>& chain) const {
    int first = -1, count = 0;
    for (std::size_t i = 0; i < chain.size(); ++i) {
      if (codegen::parallel_safe(plan_, *chain[i])) {
        if (first < 0) first = static_cast<int>(i);
        ++count;
      } else if (first >= 0) {
        break;
      }
    }
    return {first, count};
  }

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

  // A statement that is not a reduction nest and whose band's body keeps per-iteration state
  // (locals, a scan) or runs several statements per iteration (a fold's or a fused backward's tile
  // steps) runs in lanes: statement by statement across a block of iterations.
  std::optional<LanePlan> lane_plan(const Stmt& s) const {
    if (!opts_.jam) return std::nullopt;
    std::optional<NestShape> shape = nest_shape(s);
    if (shape && !shape->reduced.empty()) return std::nullopt;  // reduction_nest
    LanePlan lp;
    lp.chain = codegen::loop_chain(s);
    const auto [first, count] = parallel_run(lp.chain);
    if (first < 0 || perfect_chain(lp.chain)) return std::nullopt;
    lp.first = static_cast<std::size_t>(first);
    lp.band.assign(lp.chain.begin() + first, lp.chain.begin() + first + count);
    lp.lane = *std::max_element(lp.band.begin(), lp.band.end(), [](const Stmt* a, const Stmt* b) {
      return a->to - a->from < b->to - b->from;
    });
    if (lp.lane->to - lp.lane->from + 1 < 4 ||
        !(has_state(lp.band.back()->body) || several_statements(lp.chain.back()->body)))
      return std::nullopt;
    for (const Stmt* l : lp.band)
      if (l != lp.lane) lp.others.push_back(l);
    lp.blocks = (lp.lane->to - lp.lane->from + 1 + kLaneWidth - 1) / kLaneWidth;
    lp.parallel = opts_.parallel && saturating_mul(codegen::trip_count(lp.others), lp.blocks) >= 2;
    return lp;
  }

  // More than one statement that does something.
  static bool several_statements(const std::vector<StmtP>& body) {
    int n = 0;
    for (const auto& s : body) n += s && s->kind != StmtKind::Comment && s->kind != StmtKind::Noop;
    return n > 1;
  }

  // Per-iteration state: a local, or a scan, anywhere below.
  static bool has_state(const std::vector<StmtP>& body) {
    for (const auto& s : body) {
      if (!s) continue;
      if (s->kind == StmtKind::DeclareLocal || s->kind == StmtKind::SetLocal || s->kind == StmtKind::Scan)
        return true;
      if (has_state(s->body)) return true;
    }
    return false;
  }

  // A statement that runs whole inside one lane: a loop nest of stores only (its innermost loop is
  // the vectorizer's), or a guard (control flow that differs between lanes). Not a nest with a
  // store that reads the cell it writes (an accumulation `T[j, row] += q[row, d]·k[j, d]`, an
  // update in place): inside one lane that is a dependent chain, so its loops stay scalar around
  // the lanes instead (each store a loop over the lanes). The band's iterations touch disjoint
  // cells (parallel_safe), so running the lanes innermost keeps every lane's own order: the same
  // values.
  static bool whole_per_lane(const Stmt& s) {
    if (s.kind == StmtKind::If) return true;
    if (s.kind != StmtKind::For) return false;
    bool self_read = false;
    std::function<bool(const Stmt&)> plain = [&](const Stmt& t) {
      if (t.kind == StmtKind::Set) {
        for_each_expr(t.value, [&](const Expr& x) {
          if (x.kind == ExprKind::Get && x.name == t.name) self_read = true;
        });
        return true;
      }
      if (t.kind == StmtKind::Comment || t.kind == StmtKind::Noop) return true;
      if (t.kind != StmtKind::For) return false;
      for (const auto& b : t.body)
        if (b && !plain(*b)) return false;
      return true;
    };
    return plain(s) && !self_read;
  }

  // A perfect nest accumulating into cells of the lane's own (`T[j, row] += q[row, d]·k[j, d]`
  // over d, `U[e, row] += T[j, row]·v[j, e]` over j): at most one loop of the nest indexes the
  // store (a plain iterator: the cells), the others are reduced, and the value reads the stored
  // node only at the stored cell (not through a replay either). (The store's other indices use
  // enclosing symbols — the band's, a block's key — so this is not a NestShape.)
  struct LaneReduction {
    const Stmt* set = nullptr;
    const Stmt* cells = nullptr;          // the loop indexing the store, or null (one cell)
    std::vector<const Stmt*> reduced;     // the other loops, outermost first
  };
  std::optional<LaneReduction> lane_reduction(const Stmt& s) const {
    const std::optional<Nest> nest = as_nest(s);
    if (!nest || nest->loops.empty()) return std::nullopt;
    LaneReduction lr;
    lr.set = nest->set;
    const Stmt& set = *nest->set;
    for (const Stmt* l : nest->loops) {
      if (l->is_dead_loop()) return std::nullopt;
      bool indexes = false, plain = false;
      for (const Index& i : set.indices) {
        const Index c = i.canonical();
        if (c.mentions(l->sym)) {
          if (indexes) return std::nullopt;  // two axes
          indexes = true;
          plain = c.is_plain_iterator();
        }
      }
      if (!indexes) {
        lr.reduced.push_back(l);
        continue;
      }
      if (!plain || lr.cells) return std::nullopt;
      lr.cells = l;
    }
    if (lr.reduced.empty()) return std::nullopt;
    bool self = false, elsewhere = false;
    for_each_expr(set.value, [&](const Expr& x) {
      if (x.kind != ExprKind::Get) return;
      if (x.name == set.name) {
        self = true;
        if (x.indices.size() != set.indices.size()) elsewhere = true;
        for (std::size_t a = 0; a < x.indices.size() && !elsewhere; ++a)
          if (!(x.indices[a].canonical() == set.indices[a].canonical())) elsewhere = true;
      } else if (plan_.is_virtual(x.name) && plan_.replay_reads(x.name).count(set.name)) {
        elsewhere = true;
      }
    });
    if (!self || elsewhere) return std::nullopt;
    return lr;
  }

  // The lanes as one simd loop around the reduction (outer-loop vectorization), each lane keeping
  // kLaneCells cells of the store's loop in scalars (independent chains: the reduction is latency-
  // bound with one), each cell accumulating over the reduced loops in their order: per cell the
  // same operations on the same operands in the same order. The band's iterations touch disjoint
  // cells (parallel_safe), so the lanes may run side by side.
  static constexpr std::int64_t kLaneCells = 8;
  void lane_register_reduction(const LaneReduction& lr) {
    const Stmt& set = *lr.set;
    const Node& w = plan_.node(set.name);
    const char* ct = codegen::ctype(w.prec, Dialect::C);
    const std::int64_t extent = lr.cells ? lr.cells->to - lr.cells->from + 1 : 1;
    const std::int64_t per = std::min(extent, kLaneCells);
    auto block = [&](const Aff& first, std::int64_t count) {
      em_.line(fmt::format("/* lane reduction: {} cell{} per lane */", count, count == 1 ? "" : "s"));
      open_lanes(true);
      std::vector<std::string> acc;
      std::vector<Aff> offs;
      auto bind_cell = [&](std::int64_t k) {
        if (!lr.cells) return;
        Aff a = first;
        a.off += k;
        em_.bind_sym(lr.cells->sym, a);
      };
      for (std::int64_t k = 0; k < count; ++k) {
        bind_cell(k);
        acc.push_back(em_.fresh("a"));
        offs.push_back(em_.offset(w, set.indices));
        em_.line(fmt::format("{} {} = {};", ct, acc.back(), em_.load(w, offs.back())));
      }
      for (const Stmt* r : lr.reduced) {
        em_.open(em_.loop_header(*r));
        em_.push_scope();
      }
      for (std::int64_t k = 0; k < count; ++k) {
        bind_cell(k);
        em_.substitute(w.name, acc[static_cast<std::size_t>(k)]);
        em_.line(fmt::format("{} = {};", acc[static_cast<std::size_t>(k)],
                             em_.convert(em_.expr(set.value), set.value->prec, w.prec)));
        em_.unsubstitute(w.name);
      }
      for (auto it = lr.reduced.rbegin(); it != lr.reduced.rend(); ++it) {
        em_.pop_scope();
        em_.close();
        em_.unbind_sym((*it)->sym);
      }
      for (std::int64_t k = 0; k < count; ++k) em_.line(em_.store(w, offs[static_cast<std::size_t>(k)],
                                                                  acc[static_cast<std::size_t>(k)]));
      if (lr.cells) em_.unbind_sym(lr.cells->sym);
      close_lanes();
    };
    const std::int64_t full = extent / per, rest = extent % per;
    const std::int64_t from = lr.cells ? lr.cells->from : 0;
    if (full > 1) {
      const std::string cb = em_.fresh("cb");
      em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", cb, full));
      block(Aff{{{cb, per}}, from}, per);
      em_.close();
    } else if (full == 1) {
      block(Aff{{}, from}, per);
    }
    if (rest > 0) block(Aff{{}, from + full * per}, rest);
  }

  // A guard whose condition differs between lanes (a fold's skip of a masked key block: the
  // condition reads the row): the lanes' conditions are evaluated first; when every lane takes the
  // body it runs lane by lane as the band's statements (vectorized), when some do it runs whole
  // inside each lane that takes it (as any guard), when none do it is skipped. Each lane computes
  // what its own iteration computes either way. Not nested: a split guard's body keeps its own
  // guards per lane (the code would double per level).
  void agreeing_lanes_guard(const Stmt& s) {
    const std::string all = em_.fresh("all"), any = em_.fresh("any");
    em_.open("");
    em_.line(fmt::format("int {} = 1, {} = 0;", all, any));
    open_lanes(false);
    em_.line(fmt::format("if ({} != 0) {} = 1; else {} = 0;", em_.expr(s.value), any, all));
    close_lanes();
    em_.open(fmt::format("if ({})", all));
    ++split_guards_;
    em_.push_scope();
    lane_list(s.body);
    em_.pop_scope();
    --split_guards_;
    em_.close();
    em_.open(fmt::format("else if ({})", any));
    open_lanes(false);
    em_.stmt(s);
    close_lanes();
    em_.close();
    em_.close();
  }
  int split_guards_ = 0;

  // A guard whose condition is the same in every lane: it mentions no lane-indexed value (no local
  // or carried value, no index with the lane symbol). It runs as one scalar `if` around the lanes.
  bool uniform_guard(const Stmt& s) const {
    if (s.kind != StmtKind::If || !s.value || !lane_) return false;
    bool uniform = true;
    for_each_expr(s.value, [&](const Expr& x) {
      if (x.kind == ExprKind::GetLocal) uniform = false;
      if (x.kind == ExprKind::Get || x.kind == ExprKind::EmbedIndex)
        for (const auto& i : x.indices) uniform = uniform && !i.canonical().mentions(lane_->lane->sym);
    });
    return uniform;
  }

  // The band's iterations are independent (parallel_safe: disjoint cells, no shared local), so the
  // body may run for a block of `width` iterations ("lanes") one statement at a time instead of
  // one iteration at a time: each local becomes an array over the lanes, each store or local
  // assignment a loop over the lanes (vectorized: exp and friends on 16 values at once), loops and
  // scans stay scalar around them (their bounds are constants, the same in every lane), and a guard
  // or a plain store nest runs whole inside one lane. Every lane computes exactly what its
  // iteration computed, in the same order within the lane.
  // Row-private tiles (exec/row_private.h) live in the lane block: one slice of kLaneWidth lanes
  // each, zeroed when the block starts, instead of the whole buffer.
  void lane_band(const LanePlan& lp) {
    for (std::size_t i = 0; i < lp.first; ++i) {
      em_.open(em_.loop_header(*lp.chain[i]));
      em_.push_scope();
    }
    em_.open("");
    if (lp.parallel) em_.line(pragma(static_cast<int>(lp.others.size()) + 1));
    for (const Stmt* l : lp.others) em_.line(em_.loop_header(*l));
    const auto tiles = private_tiles_.find(plan_.position_of(lp.chain.front()));
    lane_block_loop(lp.lane, kLaneWidth, lp.blocks, [&](const std::string& nl) {
      if (tiles != private_tiles_.end()) open_private_tiles(tiles->second.tiles, lp);
      lane_ = LaneCtx{lp.lane, nl, kLaneWidth};
      band_writes_ = written_nodes(*lp.band.front());
      em_.push_scope();
      lane_list(lp.band.back()->body);
      em_.pop_scope();
      lane_.reset();
      if (tiles != private_tiles_.end())
        for (const PrivateTile& t : tiles->second.tiles) em_.unprivatize(node_at(t.node).name);
    });
    for (const Stmt* l : lp.others) em_.unbind_sym(l->sym);
    em_.close();
    for (std::size_t i = lp.first; i-- > 0;) {
      em_.pop_scope();
      em_.close();
      em_.unbind_sym(lp.chain[i]->sym);
    }
  }

  // ---- row-private tiles ------------------------------------------------------------------------

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

  const Node& node_at(int i) const { return plan_.placed.nodes[static_cast<std::size_t>(i)]; }
  bool private_tile(int i) const { return private_nodes_.count(i) > 0; }

  // Per statement run in lanes, the row-private nodes of its chain up to the band's end whose
  // slices fit the stack limit together (first come first served), and only where a slice is
  // smaller than the buffer. Decided before any code is emitted: position() and run() skip their
  // buffers.
  void plan_private_tiles() {
    for (std::size_t p = 0; p < plan_.top.size(); ++p) {
      if (plan_.replayed[p]) continue;
      const std::optional<LanePlan> lp = lane_plan(*plan_.top[p]);
      if (!lp) continue;
      const std::vector<const Stmt*> rows(lp->chain.begin(), lp->chain.begin() + static_cast<std::ptrdiff_t>(lp->first + lp->band.size()));
      const std::size_t lane_row = static_cast<std::size_t>(std::find(rows.begin(), rows.end(), lp->lane) - rows.begin());
      std::int64_t budget = opts_.stack_limit;
      std::vector<PrivateTile> tiles;
      for (const codegen::RowPrivateNode& r : codegen::row_private_nodes(plan_, static_cast<int>(p), rows)) {
        const Node& n = node_at(r.node);
        if (stack_buffer(r.node)) continue;
        PrivateTile t;
        t.node = r.node;
        t.row.assign(n.dims.size(), false);
        for (std::size_t a : r.axis) t.row[a] = true;
        t.lane_axis = r.axis[lane_row];
        t.slice_cells = saturating_mul(kLaneWidth, codegen::slice_cells(n, r));
        t.slice_bytes = saturating_mul(t.slice_cells, em_.node_bytes(n) / std::max<std::int64_t>(n.cell_count(), 1));
        if (t.slice_bytes >= em_.node_bytes(n) || t.slice_bytes > budget) continue;
        budget -= t.slice_bytes;
        private_nodes_.insert(r.node);
        tiles.push_back(std::move(t));
      }
      if (tiles.empty()) continue;
      std::int64_t bytes = 0;
      for (const PrivateTile& t : tiles) bytes += t.slice_bytes;
      private_tiles_[static_cast<int>(p)] = PrivateTiles{
          std::move(tiles), lp->parallel ? fmt::format("{}LL * (int64_t)fpx_nt", bytes) : fmt::format("{}LL", bytes)};
    }
  }

  // Declares and zeroes the statement's slices at the top of a lane block and points the emitter
  // at them.
  void open_private_tiles(const std::vector<PrivateTile>& tiles, const LanePlan& lp) {
    for (const PrivateTile& t : tiles) {
      const Node& n = node_at(t.node);
      const std::string b = em_.buffer(n.name);
      em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));  /* row-private slice of '{}' */",
                           codegen::stype(n.prec), b, t.slice_cells, sanitize_comment(n.name)));
      em_.line(fmt::format("memset({0}, 0, sizeof {0});", b));
      codegen::Emitter::PrivateSlice slice;
      slice.row = t.row;
      slice.lane_axis = t.lane_axis;
      slice.origin = Aff{{{lane_block_, kLaneWidth}}, lp.lane->from};
      slice.width = kLaneWidth;
      em_.privatize(n.name, std::move(slice));
    }
  }

  struct LaneCtx {
    const Stmt* lane;
    std::string nl;
    int width;
  };
  struct LaneLocal {
    std::string name, array;
    Prec prec;
  };

  // Opens `for (j < nl)` with the lane symbol bound; returns j.
  // The lane locals in scope are bound to "array[j]" inside it (in declaration order, so a later
  // declaration shadows an earlier one of the same name).
  // A simd lane loop's strided loads are gathered by separate loops first (Emitter::begin_hoist):
  // its body is emitted aside and placed after them.
  std::string open_lanes(bool simd) {
    const std::string j = em_.fresh("j");
    lane_simd_.push_back(simd);
    if (simd) {
      std::set<std::string> outer = em_.bound_variables();
      outer.insert(lane_block_);
      em_.begin_hoist(j, lane_->nl, lane_->width, std::move(outer));
      held_.emplace_back();
      held_.back().swap(em_.out());
    }
    if (simd && opts_.parallel) em_.line("#pragma omp simd");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, lane_->nl));
    em_.bind_sym(lane_->lane->sym, Aff{{{lane_block_, lane_->width}, {j, 1}}, lane_->lane->from});
    em_.push_scope();
    for (const LaneLocal& l : lane_locals_) em_.bind_local(l.name, fmt::format("{}[{}]", l.array, j), l.prec);
    return j;
  }
  void close_lanes() {
    em_.pop_scope();
    em_.unbind_sym(lane_->lane->sym);
    em_.close();
    const bool simd = lane_simd_.back();
    lane_simd_.pop_back();
    if (simd) {
      std::string body;
      body.swap(em_.out());
      em_.out().swap(held_.back());
      held_.pop_back();
      for (const std::string& l : em_.end_hoist()) em_.line(l);
      em_.out() += body;
    }
  }

  // A forward scalar loop around lane statements, strip-mined into chunks of kChunk iterations so
  // that loads contiguous along it and strided across the lanes come from panels filled once per
  // chunk (Emitter::begin_panel). The iterations still run in order: only the loads move.
  static constexpr int kChunk = 64;
  // `after_chunk(t0, count)`, when given, runs after each chunk's iterations (loop fission).
  void panel_loop(const Stmt& loop, const std::function<void()>& body,
                  const std::function<void(const std::string&, const std::string&)>& after_chunk = {}) {
    const std::string t = em_.fresh_named('s', loop.sym);
    const std::string t0 = em_.fresh("t0"), cnt = em_.fresh("tn");
    const std::string outer_t0 = panel_t0_;
    panel_t0_ = t0;
    std::set<std::string> outer = em_.bound_variables();
    outer.insert(lane_block_);
    em_.begin_panel(t, t0, cnt, kChunk, lane_->nl, lane_->width, outer, band_writes_);
    em_.bind_sym(loop.sym, Aff{{{t, 1}}, 0});
    std::string held;
    held.swap(em_.out());
    const std::string marker = fmt::format("/*@@panel-fills-{}@@*/", t);
    em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} <= {2}; {0} += {3})", t0, loop.from, loop.to, kChunk));
    em_.line(fmt::format("const fpc_i64 {0} = {1} - {2} + 1 < {3} ? {1} - {2} + 1 : {3};", cnt, loop.to, t0,
                         kChunk));
    em_.line(marker);
    em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} < {1} + {2}; ++{0})", t, t0, cnt));
    body();
    em_.close();
    em_.unbind_sym(loop.sym);
    if (after_chunk) after_chunk(t0, cnt);
    em_.close();
    panel_t0_ = outer_t0;
    auto [decls, fills] = em_.end_panel();
    std::string text;
    text.swap(em_.out());
    em_.out().swap(held);
    for (const auto& d : decls) em_.line(d);
    std::string fill_text;
    const std::size_t at = text.find(marker);
    std::string indent;
    for (std::size_t k = text.rfind('\n', at) + 1; k < at && text[k] == ' '; ++k) indent += ' ';
    for (const auto& f : fills) fill_text += (fill_text.empty() ? "" : "\n" + indent) + f;
    text.replace(at, marker.size(), fill_text);
    em_.out() += text;
  }

  // A statement list is a scope: the lane locals it declares end with it.
  void lane_list(const std::vector<StmtP>& body) {
    const std::size_t mark = lane_locals_.size();
    for (const auto& s : body)
      if (s) lane_stmt(*s);
    lane_locals_.resize(mark);
  }

  void lane_stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Seq:
        em_.open("");
        em_.push_scope();
        lane_list(s.body);
        em_.pop_scope();
        em_.close();
        return;
      case StmtKind::Comment:
      case StmtKind::Noop:
        return;
      case StmtKind::DeclareLocal: {
        const std::string c = em_.fresh_named('l', s.name);
        em_.line(fmt::format("{} {}[{}];", codegen::ctype(s.prec, Dialect::C), c, lane_->width));
        const std::string j = open_lanes(true);
        em_.line(fmt::format("{}[{}] = {};", c, j, em_.literal(0.0, s.prec)));
        close_lanes();
        lane_locals_.push_back({s.name, c, s.prec});
        return;
      }
      case StmtKind::For:
        if (s.is_dead_loop()) return;
        if (const std::optional<LaneReduction> lr = lane_reduction(s)) {
          lane_register_reduction(*lr);
          return;
        }
        if (!whole_per_lane(s)) {
          if (auto f = fission_of(s)) {
            fissioned_loop(s, *f);
            return;
          }
          panel_loop(s, [&] {
            em_.push_scope();
            lane_list(s.body);
            em_.pop_scope();
          });
          return;
        }
        [[fallthrough]];
      case StmtKind::If: {
        if (uniform_guard(s)) {
          em_.open(fmt::format("if ({} != 0)", em_.expr(s.value)));
          em_.push_scope();
          lane_list(s.body);
          em_.pop_scope();
          em_.close();
          return;
        }
        if (s.kind == StmtKind::If && split_guards_ == 0) {
          agreeing_lanes_guard(s);
          return;
        }
        open_lanes(false);
        em_.stmt(s);
        close_lanes();
        return;
      }
      case StmtKind::Set:
      case StmtKind::SetLocal:
      case StmtKind::Zero: {
        const std::vector<std::string> paired = paired_exps(s);
        const std::string j = open_lanes(true);
        if (!paired.empty()) {
          const auto exps = exps_of(s);
          for (std::size_t i = 0; i < exps.size(); ++i)
            em_.substitute_expr(exps[i], fmt::format("{}[{}]", paired[i], j));
        }
        em_.stmt(s);
        em_.clear_expr_substitutions();
        close_lanes();
        return;
      }
      case StmtKind::Scan: {
        if (s.is_dead_loop()) return;
        em_.open("");
        std::vector<std::string> prev, next;
        for (const Carried& c : s.carried) {
          prev.push_back(em_.fresh_named('l', c.prev));
          em_.line(fmt::format("{} {}[{}];", codegen::ctype(c.prec, Dialect::C), prev.back(), lane_->width));
        }
        {
          const std::string j = open_lanes(true);
          for (std::size_t i = 0; i < s.carried.size(); ++i) {
            const Carried& c = s.carried[i];
            em_.line(
                fmt::format("{}[{}] = {};", prev[i], j, em_.convert(em_.expr(c.init), c.init->prec, c.prec)));
          }
          close_lanes();
        }
        auto step = [&] {
          em_.push_scope();
          const std::size_t mark = lane_locals_.size();
          for (std::size_t i = 0; i < s.carried.size(); ++i) {
            const Carried& c = s.carried[i];
            next.push_back(em_.fresh_named('l', c.next));
            em_.line(
                fmt::format("{} {}[{}];", codegen::ctype(c.prec, Dialect::C), next.back(), lane_->width));
            lane_locals_.push_back({c.prev, prev[i], c.prec});
            lane_locals_.push_back({c.next, next[i], c.prec});
          }
          std::vector<std::string> outer_carried = carried_prev_;
          for (const Carried& c : s.carried) carried_prev_.push_back(c.prev);
          lane_list(s.body);
          carried_prev_ = std::move(outer_carried);
          {
            const std::string j = open_lanes(true);
            for (std::size_t i = 0; i < s.carried.size(); ++i)
              em_.line(fmt::format("{0}[{1}] = {2}[{1}];", prev[i], j, next[i]));
            close_lanes();
          }
          lane_locals_.resize(mark);
          em_.pop_scope();
        };
        if (s.dir == ScanDir::Forward) {
          panel_loop(s, step);
        } else {
          em_.open(em_.loop_header(s));
          step();
          em_.close();
          em_.unbind_sym(s.sym);
        }
        em_.close();
        return;
      }
    }
  }

  // ---- loop fission: per-iteration locals first, then a register-resident accumulation --------
  // A forward loop over t inside a lane band whose body is
  //     local p...; p := f(t, ...)          (phase A: lane locals only)
  //     for e...: W[i] = g(W[i], p, t, e)   (phase B: one store nest; i does not mention t)
  // runs phase A for a chunk of t into per-chunk buffers, then phase B per lane over the chunk's t
  // with the cells of its innermost loop (at most kMaxFissionCells) kept in a small array. Same values in the
  // same order: each cell of W sees its t in order, phase A reads nothing phase B writes, and phase B's cells
  // are independent (it reads W only at the cell it stores). Decline anything else.
  struct Fission {
    std::vector<const Stmt*> a;      // phase A statements
    const Stmt* b = nullptr;         // the store nest
    std::vector<const Stmt*> loops;  // its loops, outermost first
    const Stmt* set = nullptr;       // its store
  };

  static constexpr std::int64_t kMaxFissionCells = 256;  // the innermost loop's cells kept in registers
  std::optional<Fission> fission_of(const Stmt& loop) const {
    if (loop.kind != StmtKind::For || loop.is_dead_loop()) return std::nullopt;
    Fission f;
    std::set<std::string> a_locals;
    for (const auto& st : loop.body) {
      if (!st || st->kind == StmtKind::Comment || st->kind == StmtKind::Noop) continue;
      if (f.b) return std::nullopt;  // the store nest must come last
      if (st->kind == StmtKind::DeclareLocal) {
        a_locals.insert(st->name);
        f.a.push_back(st.get());
      } else if (st->kind == StmtKind::SetLocal) {
        if (!a_locals.count(st->name)) return std::nullopt;  // an outer local changing per t
        f.a.push_back(st.get());
      } else if (st->kind == StmtKind::For) {
        f.b = st.get();
      } else {
        return std::nullopt;
      }
    }
    if (!f.b || a_locals.empty()) return std::nullopt;
    const Stmt* cur = f.b;
    while (cur->kind == StmtKind::For) {
      if (cur->is_dead_loop() || cur->body.size() != 1 || !cur->body[0]) return std::nullopt;
      f.loops.push_back(cur);
      cur = cur->body[0].get();
    }
    if (cur->kind != StmtKind::Set) return std::nullopt;
    if (f.loops.back()->to - f.loops.back()->from + 1 > kMaxFissionCells) return std::nullopt;
    f.set = cur;
    const std::string& w = cur->name;
    for (const Index& i : cur->indices)
      if (i.mentions(loop.sym)) return std::nullopt;
    bool ok = true;
    for_each_expr(cur->value, [&](const Expr& x) {
      if (x.kind == ExprKind::Get && x.name == w && x.indices != cur->indices) ok = false;
    });
    for (const Stmt* a : f.a)
      if (a->value)
        for_each_expr(a->value, [&](const Expr& x) {
          if (x.kind == ExprKind::Get && x.name == w) ok = false;
        });
    return ok ? std::optional<Fission>(f) : std::nullopt;
  }

  void fissioned_loop(const Stmt& loop, const Fission& f) {
    // One buffer [chunk][lanes] per phase-A local.
    std::map<std::string, std::pair<std::string, Prec>> bufs;
    for (const Stmt* a : f.a)
      if (a->kind == StmtKind::DeclareLocal) {
        const std::string b = em_.fresh_named('c', a->name);
        em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(a->prec, Dialect::C),
                             b, kChunk * lane_->width));
        bufs[a->name] = {b, a->prec};
      }
    std::string t_var, t0_var;
    auto phase_a = [&] {
      em_.push_scope();
      const std::size_t mark = lane_locals_.size();
      for (const Stmt* a : f.a) lane_stmt(*a);
      const Aff t_aff = em_.index_aff(Index::iter(loop.sym));
      const std::string row = fmt::format("(({}) - {}) * {}", t_aff.str(), panel_t0_, lane_->width);
      const std::string j = open_lanes(true);
      for (std::size_t k = mark; k < lane_locals_.size(); ++k) {
        auto it = bufs.find(lane_locals_[k].name);
        if (it != bufs.end())
          em_.line(fmt::format("{}[{} + {}] = {}[{}];", it->second.first, row, j, lane_locals_[k].array, j));
      }
      close_lanes();
      lane_locals_.resize(mark);
      em_.pop_scope();
    };
    auto phase_b = [&](const std::string& t0, const std::string& cnt) {
      const Node& w = em_.plan().node(f.set->name);
      const std::string j = em_.fresh("j");
      em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, lane_->nl));
      em_.bind_sym(lane_->lane->sym, Aff{{{lane_block_, lane_->width}, {j, 1}}, lane_->lane->from});
      em_.push_scope();
      for (const LaneLocal& l : lane_locals_)
        em_.bind_local(l.name, fmt::format("{}[{}]", l.array, j), l.prec);
      for (std::size_t k = 0; k + 1 < f.loops.size(); ++k) {
        em_.open(em_.loop_header(*f.loops[k]));
        em_.push_scope();
      }
      // The innermost loop's cells in a register-sized array over the chunk's t.
      const Stmt& inner = *f.loops.back();
      const std::string acc = em_.fresh("acc");
      em_.line(fmt::format("{} {}[{}];", codegen::ctype(w.prec, Dialect::C), acc, inner.to - inner.from + 1));
      auto inner_loop = [&](const std::function<void(const std::string& cell, const Aff& off)>& body) {
        if (opts_.parallel) em_.line("#pragma omp simd");
        em_.open(em_.loop_header(inner));
        const std::string e = em_.index_aff(Index::iter(inner.sym)).str();
        em_.push_scope();
        body(fmt::format("{}[{} - {}]", acc, e, inner.from), em_.offset(w, f.set->indices));
        em_.pop_scope();
        em_.close();
        em_.unbind_sym(inner.sym);
      };
      inner_loop([&](const std::string& cell, const Aff& off) {
        em_.line(fmt::format("{} = {};", cell, em_.load(w, off)));
      });
      const std::string tv = em_.fresh_named('s', loop.sym);
      em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} < {1} + {2}; ++{0})", tv, t0, cnt));
      em_.bind_sym(loop.sym, Aff{{{tv, 1}}, 0});
      em_.push_scope();
      for (const auto& [name, b] : bufs)
        em_.bind_local(name, fmt::format("{}[({} - {}) * {} + {}]", b.first, tv, t0, lane_->width, j),
                       b.second);
      inner_loop([&](const std::string& cell, const Aff&) {
        for_each_expr(f.set->value, [&](const Expr& x) {
          if (x.kind == ExprKind::Get && x.name == w.name) em_.substitute_expr(&x, cell);
        });
        em_.line(
            fmt::format("{} = {};", cell, em_.convert(em_.expr(f.set->value), f.set->value->prec, w.prec)));
        em_.clear_expr_substitutions();
      });
      em_.pop_scope();
      em_.unbind_sym(loop.sym);
      em_.close();
      inner_loop([&](const std::string& cell, const Aff& off) { em_.line(em_.store(w, off, cell)); });
      for (std::size_t k = f.loops.size() - 1; k-- > 0;) {
        em_.pop_scope();
        em_.close();
        em_.unbind_sym(f.loops[k]->sym);
      }
      em_.pop_scope();
      em_.unbind_sym(lane_->lane->sym);
      em_.close();
    };
    panel_loop(loop, phase_a, phase_b);
  }

  // ---- paired exponentials --------------------------------------------------------------------
  // The exps in a store's value (not inside another exp's argument), in evaluation order.
  static std::vector<const Expr*> exps_of(const Stmt& s) {
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
  // previous value, such as the online-softmax recurrence l' = l·exp(m - m') + exp(x - m'),
  // where in every lane at least one argument is usually exactly zero (no new maximum: m = m'; a
  // new maximum: x = m'): computes both arguments ahead, one
  // vectorized exponential per lane of the first non-zero argument, and the other only in the
  // lanes where both are non-zero (a scalar fix-up loop, taken only when a lane needs it). Exact:
  // exp(±0) is 1 at every precision (the exp of core/numerics_c.h, rounded), and exps are pure.
  // Returns the lane arrays holding the two values (empty: no pairing).
  std::vector<std::string> paired_exps(const Stmt& s) {
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

  // Emits chain[k..] with a parallel pragma collapsing chain[first .. first+count-1].
  void loops(const std::vector<const Stmt*>& chain, std::size_t k, int first, int count) {
    if (k == chain.size()) {
      em_.stmt_list(chain.back()->body);
      return;
    }
    const Stmt& l = *chain[k];
    const int ki = static_cast<int>(k);
    if (ki == first) em_.line(pragma(count));
    if (simd_innermost_ && k + 1 == chain.size() && !(ki >= first && ki < first + count) && opts_.parallel)
      em_.line("#pragma omp simd");
    const bool bare = ki >= first && ki < first + count - 1;  // collapsed loops: nothing in between
    if (bare) {
      em_.line(em_.loop_header(l));
      em_.push_scope();
      loops(chain, k + 1, first, count);
      em_.pop_scope();
    } else {
      em_.open(em_.loop_header(l));
      em_.push_scope();
      loops(chain, k + 1, first, count);
      em_.pop_scope();
      em_.close();
    }
    em_.unbind_sym(l.sym);
  }

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
  static constexpr int kRowUnroll = 6;
  void reduction_nest(const NestShape& shape) {
    const Stmt& set = *shape.nest.set;
    const Node& w = plan_.node(set.name);
    // A deferred `zero w` (zero_taken_by_next): the schedules that visit each cell once start its
    // accumulator at +0; the others zero the buffer first.
    const auto taken = std::find(pending_zeros_.begin(), pending_zeros_.end(), w.name);
    zero_start_ = taken != pending_zeros_.end();
    if (zero_start_) pending_zeros_.erase(taken);
    auto extent = [](const Stmt* l) { return l->to - l->from + 1; };
    // The lane loop: unit stride in w, else the largest extent.
    const Stmt* lane = nullptr;
    for (const Stmt* t : shape.target) {
      if (extent(t) < 2) continue;
      const std::int64_t st = flat_coefficient(w, set.indices, t->sym);
      if (!lane || (st == 1 && flat_coefficient(w, set.indices, lane->sym) != 1) ||
          (st != 1 && flat_coefficient(w, set.indices, lane->sym) != 1 && extent(t) > extent(lane)))
        lane = t;
    }
    const Stmt* row = nullptr;
    for (const Stmt* t : shape.target)
      if (t != lane && extent(t) >= 2 && (!row || extent(t) >= extent(row))) row = t;
    std::vector<const Stmt*> outer;
    for (const Stmt* t : shape.target)
      if (t != lane && t != row) outer.push_back(t);
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
    const std::vector<const Expr*> hoisted =
        row && !lane_first ? hoisted_invariants(set.value, w, lane, unroll, reduced_trips)
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

  // ---- a zero folded into the accumulation that follows it -----------------------------------
  // `zero W` followed (only replayed definitions and zeros of other nodes in between) by a reduction
  // nest that stores every cell of W (each axis a target loop over the whole dimension, or a fixed 0
  // of a dimension of 1): the memset is deferred to that nest (pending_zeros_), whose schedules that load each cell once
  // (lanes, order_free_rows) start the cell at the literal +0 the buffer would hold — the same value
  // — and never read the buffer's old contents; the schedules that reload cells (rows in panels, a
  // single cell) run the memset first (zero_now). Saves a write and a read of W per run (the score
  // matrix of attention).
  bool zero_taken_by_next(int p) const {
    if (!opts_.jam) return false;
    const Stmt& z = *plan_.top[static_cast<std::size_t>(p)];
    if (plan_.is_virtual(z.name)) return false;
    // Past replayed definitions and zeros of other nodes (they neither read nor write W).
    std::size_t q = static_cast<std::size_t>(p) + 1;
    while (q < plan_.top.size() &&
           (plan_.replayed[q] || (plan_.top[q]->kind == StmtKind::Zero && plan_.top[q]->name != z.name)))
      ++q;
    if (q >= plan_.top.size()) return false;
    const std::optional<NestShape> shape = nest_shape(*plan_.top[q]);
    if (!shape || shape->reduced.empty() || shape->nest.set->name != z.name) return false;
    const Node& w = plan_.node(z.name);
    const std::vector<Index>& idx = shape->nest.set->indices;
    for (std::size_t a = 0; a < w.dims.size(); ++a) {
      const Index i = idx[a].canonical();
      if (i.is_fixed()) {
        if (w.dims[a] != 1 || i.offset != 0) return false;
        continue;
      }
      if (!i.is_plain_iterator()) return false;
      bool full = false;
      for (const Stmt* t : shape->target)
        if (t->sym == i.terms[0].sym && t->from == 0 && t->to == w.dims[a] - 1) full = true;
      if (!full) return false;
    }
    return true;
  }
  // Before a statement that is not the reduction nest taking a deferred zero: the memset now.
  void emit_pending_zero(const Stmt& s) {
    if (pending_zeros_.empty()) return;
    if (s.kind == StmtKind::Zero) return;  // of another node (zero_taken_by_next looked past it)
    const std::optional<NestShape> shape = nest_shape(s);
    std::vector<std::string> kept;
    for (const std::string& z : pending_zeros_) {
      if (shape && opts_.jam && !shape->reduced.empty() && shape->nest.set->name == z)
        kept.push_back(z);
      else
        em_.zero_node(plan_.node(z));
    }
    pending_zeros_ = std::move(kept);
  }
  // In a schedule that reads W's cells from the buffer: the deferred zero as a memset.
  void zero_now(const Node& w) {
    if (!zero_start_) return;
    em_.zero_node(w);
    zero_start_ = false;
  }

  // ---- row fusion: a row reduction and the pointwise statement that consumes its rows ---------
  // A row reduction R (a reduction nest with one reduced loop, storing W) followed — with only
  // replayed definitions in between — by a pointwise nest P (NestShape without reduced loops and
  // without a self read) that reads W, directly or through pointwise replays, only at "its row":
  // every W axis R indexes with a target loop T, P indexes with a plain iterator of one P loop L of
  // T's range (the same L for every read), every fixed axis at the same constant. Then P's cells
  // for the rows of W that R has finished read only final values (R writes nothing else; P writes a
  // node R does not read, directly or through replays), and each P cell is still computed once, by
  // the same expression: P may run row by row right after R finishes each row (the row's data still
  // in cache) instead of in a pass of its own. R's schedules that finish rows one (order_free_rows)
  // or one block (rows_in_panels) at a time call row_epilogue(); any other runs P right after R.
  // Memory: nothing is released between R and P (else declined), so allocating P's buffers before
  // R keeps every live set within P's, and the measured peak is still the report's.
  struct RowFusion {
    int position = -1;                                      // P's top-level position
    std::string w;                                          // R's stored node
    std::vector<Index> w_indices;                           // R's store indices (in R's target symbols)
    NestShape p;                                            // P's shape
    std::vector<std::pair<std::string, std::string>> rows;  // (T's symbol, L's symbol)
  };

  std::optional<RowFusion> row_fusion(int p) {
    if (!opts_.jam) return std::nullopt;
    const std::optional<NestShape> r = nest_shape(*plan_.top[static_cast<std::size_t>(p)]);
    if (!r || r->reduced.size() != 1 || !plan_.ending_at(p).empty()) return std::nullopt;
    std::size_t q = static_cast<std::size_t>(p) + 1;
    for (; q < plan_.top.size() && plan_.replayed[q]; ++q)
      if (!plan_.starting_at(static_cast<int>(q)).empty() || !plan_.ending_at(static_cast<int>(q)).empty())
        return std::nullopt;
    if (q >= plan_.top.size()) return std::nullopt;
    for (int i : plan_.starting_at(static_cast<int>(q)))
      if (stack_buffer(i)) return std::nullopt;
    std::optional<NestShape> pw = nest_shape(*plan_.top[q]);
    if (!pw || !pw->reduced.empty() || pw->self_read) return std::nullopt;
    const std::string& wr = r->nest.set->name;
    const std::string& wp = pw->nest.set->name;
    if (wp == wr || plan_.is_virtual(wp)) return std::nullopt;
    bool ok = true;
    for_each_expr(r->nest.set->value, [&](const Expr& x) {
      if (x.kind == ExprKind::Get &&
          (x.name == wp || (plan_.is_virtual(x.name) && plan_.replay_reads(x.name).count(wp))))
        ok = false;
    });
    if (!ok) return std::nullopt;
    RowFusion f;
    f.position = static_cast<int>(q);
    f.p = *pw;
    f.w = wr;
    f.w_indices = r->nest.set->indices;
    std::map<std::string, const Stmt*> r_target, p_loops;
    for (const Stmt* t : r->target) r_target[t->sym] = t;
    for (const Stmt* l : pw->nest.loops) p_loops[l->sym] = l;
    std::map<std::string, std::string> t_to_l;
    int reads = 0;
    // A read of W in P (indices already in P's symbols) must be at P's row.
    auto at_row = [&](const std::vector<Index>& idx) {
      const std::vector<Index>& ri = r->nest.set->indices;
      if (idx.size() != ri.size()) return false;
      for (std::size_t a = 0; a < ri.size(); ++a) {
        const Index want = ri[a].canonical(), got = idx[a].canonical();
        if (want.is_fixed()) {
          if (!(got == want)) return false;
          continue;
        }
        if (!want.is_plain_iterator() || !got.is_plain_iterator()) return false;
        auto t = r_target.find(want.terms[0].sym);
        auto l = p_loops.find(got.terms[0].sym);
        if (t == r_target.end() || l == p_loops.end()) return false;
        if (t->second->from != l->second->from || t->second->to != l->second->to) return false;
        auto [it, fresh] = t_to_l.emplace(t->first, l->first);
        if (!fresh && it->second != l->first) return false;
      }
      return true;
    };
    std::function<bool(const ExprP&, const std::map<std::string, Index>&)> scan =
        [&](const ExprP& e, const std::map<std::string, Index>& sub) -> bool {
      if (!e) return true;
      if (e->kind == ExprKind::GetLocal) return false;
      if (e->kind == ExprKind::Get) {
        std::vector<Index> idx;
        for (const Index& i : e->indices) idx.push_back(i.substituted(sub));
        if (e->name == wr) {
          ++reads;
          if (!at_row(idx)) return false;
        } else if (e->name == wp) {
          return false;
        } else if (plan_.is_virtual(e->name) &&
                   (plan_.replay_reads(e->name).count(wr) || plan_.replay_reads(e->name).count(wp))) {
          const VirtualDef& d = plan_.virtuals.at(e->name);
          if (d.kind != VirtualDef::Kind::Pointwise) return false;
          std::map<std::string, Index> inner;
          for (std::size_t a = 0; a < d.nest.set->indices.size(); ++a) {
            const Index di = d.nest.set->indices[a].canonical();
            if (!di.is_plain_iterator() || inner.count(di.terms[0].sym)) return false;
            inner[di.terms[0].sym] = idx[a];
          }
          if (!scan(d.nest.set->value, inner)) return false;
        }
      }
      for (const auto& a : e->args)
        if (!scan(a, sub)) return false;
      return true;
    };
    std::map<std::string, Index> none;
    for (const Stmt* l : pw->nest.loops) none[l->sym] = Index::iter(l->sym);
    if (!scan(pw->nest.set->value, none) || reads == 0 || t_to_l.size() != r_target.size())
      return std::nullopt;
    for (const auto& [t, l] : t_to_l) f.rows.emplace_back(t, l);
    return f;
  }


  // P for the rows whose R target symbols are bound now: P's row loops bound to them, its other
  // loops around its store (omp simd on the innermost).
  void row_epilogue() {
    const RowFusion& f = *epilogue_;
    epilogue_used_ = true;
    std::set<std::string> bound;
    for (const auto& [t, l] : f.rows) {
      em_.bind_sym(l, em_.index_aff(Index::iter(t)));
      bound.insert(l);
    }
    std::vector<const Stmt*> free;
    for (const Stmt* l : f.p.nest.loops)
      if (!bound.count(l->sym)) free.push_back(l);
    em_.open("");
    em_.push_scope();
    // The row's result in a scalar (a load inside the loop kept GCC from vectorizing its exp).
    const Node& w = plan_.node(f.w);
    const std::string rv = em_.fresh("rv");
    em_.line(fmt::format("const {} {} = {};", codegen::ctype(w.prec, Dialect::C), rv,
                         em_.load(w, em_.offset(w, f.w_indices))));
    em_.pin_node(w.name, rv);
    for (std::size_t i = 0; i < free.size(); ++i) {
      if (i + 1 == free.size() && opts_.parallel) em_.line("#pragma omp simd");
      em_.open(em_.loop_header(*free[i]));
    }
    em_.stmt(*f.p.nest.set);
    for (std::size_t i = free.size(); i-- > 0;) {
      em_.close();
      em_.unbind_sym(free[i]->sym);
    }
    em_.unpin_node(w.name);
    em_.pop_scope();
    em_.close();
    for (const auto& [t, l] : f.rows) em_.unbind_sym(l);
  }

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
  static constexpr int kOrderFreeLanes = 64;
  bool order_free_rows(const NestShape& shape, const Node& w) {
    if (shape.reduced.size() != 1 || (w.prec != Prec::F32 && w.prec != Prec::F64)) return false;
    const Stmt& set = *shape.nest.set;
    const Expr& v = *set.value;
    if (v.kind != ExprKind::Binary || (v.binop() != BinOp::Max && v.binop() != BinOp::Min) ||
        v.prec != w.prec)
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
    em_.line(fmt::format("const {} {} = {};", ct, init,
                         zero_start_ ? em_.literal(0.0, w.prec) : em_.load(w, cell)));
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
      em_.line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2} = {3}({2}, {4}[{0}]);", j,
                           kOrderFreeLanes, r, combine, pv));
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
  bool transposing_copy(const Expr* g, const std::string& panel, const Stmt* lane, const Stmt* red, int block,
                        const std::string& nl, const std::string& c0, const std::string& cn) {
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
    em_.line(fmt::format("fpx_transpose_f32({} + {}, {}LL, {}, {}, {}, {});", em_.buffer(x.name), at.str(),
                         lds, nl, cn, panel, block));
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
  bool rows_in_panels(const NestShape& shape, const Node& w, const Stmt* lane,
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
          em_.line(
              fmt::format("{} = {};", acc[g], em_.convert(em_.expr(set.value), set.value->prec, w.prec)));
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

  // for (tb) { nl = lanes in this block; body(nl) } with the lane loop's symbol left to lanes().
  void lane_block_loop(const Stmt* lane, int width, std::int64_t blocks,
                       const std::function<void(const std::string&)>& body) {
    lane_block_ = em_.fresh("lb");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", lane_block_, blocks));
    const std::string nl = em_.fresh("nl");
    const std::int64_t e = lane->to - lane->from + 1;
    em_.line(fmt::format("const fpc_i64 {0} = {1}LL - {2} * {3} < {2} ? {1}LL - {2} * {3} : {2};", nl, e,
                         width, lane_block_));
    body(nl);
    em_.close();
  }

  // Copies each packed read, for every lane of the block and every reduced iteration, into a
  // stack tile laid out [reduced iteration][lane].
  void pack_tiles(const std::vector<const Expr*>& packed, const NestShape& shape, const Stmt* lane, int width,
                  const std::string& nl) {
    tiles_.clear();
    for (const Expr* g : packed) {
      const Node& x = plan_.node(g->name);
      const std::string tile = em_.fresh("tile");
      tiles_[g] = tile;
      const std::int64_t trips = codegen::trip_count(shape.reduced);
      em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(x.prec, Dialect::C),
                           tile, trips * width));
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
  Aff reduced_linear(const NestShape& shape) const {
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
  void lane_groups(const NestShape& shape, const Node& w, const Stmt* lane, const std::string& nl, int width,
                   int groups, const Stmt* row, const Aff& row_aff, int rows,
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
  void lanes(const NestShape& shape, const Node& w, const Stmt* lane, const std::string& count, int block,
             const std::vector<Aff>& bases, const std::vector<Aff>& cols, const Stmt* row, const Aff& row_aff,
             int rows, const std::vector<const Expr*>& packed) {
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
            em_.substitute_expr(h, chunk_ ? fmt::format("{}[({} - {}) * {}LL + {} * {} + {}]", array, reduced_var,
                                                        chunk_->first, chunk_->panel_rows, chunk_->row_block,
                                                        rows, k)
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
  std::vector<const Expr*> hoisted_invariants(const ExprP& value, const Node& w, const Stmt* lane, int rows,
                                              std::int64_t trips, bool direct = false) const {
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
  bool invariant_replay(const Expr& e, const Node& w, const Stmt* lane) const {
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
  void precompute_invariants(const std::vector<const Expr*>& hoisted, const NestShape& shape, const Stmt* row,
                             const Aff& row_aff, int rows) {
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
  static constexpr int kPanelBlocks = 8;
  struct ChunkState {
    std::string first, starts, row_block;  // C: the chunk's first iteration, "it is the first chunk", block
    std::int64_t count = 0, panel_rows = 0;
  };
  std::optional<ChunkState> chunk_;

  bool column_panels(const std::vector<const Expr*>& hoisted, const NestShape& shape, const Node& w,
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

  void panel_row_blocks(const std::vector<const Expr*>& hoisted, const NestShape& shape, const Node& w,
                        const Stmt* lane, const Stmt* row, int width, int groups, int unroll,
                        std::int64_t row_blocks, std::int64_t lane_blocks) {
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
      em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(h->prec, Dialect::C), array,
                           chunk * panel_rows));
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
  void panel_chunk(const NestShape& shape, const Node& w, const Stmt* lane, const Stmt* row, int width, int groups,
                   int unroll, std::int64_t lane_blocks, const std::string& pb, const std::string& nb,
                   std::int64_t panel_rows, const std::string& first, std::int64_t count) {
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
      em_.line(fmt::format("{}[({} - {}) * {}LL + {}] = {};", array, v, cs.first, panel_rows, k, em_.expr(alias)));
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

  static void collect_reads(const ExprP& e, std::vector<const Expr*>& out) {
    if (!e) return;
    if (e->kind == ExprKind::Get) out.push_back(e.get());
    for (const auto& a : e->args) collect_reads(a, out);
  }

  // The coefficient of `sym` in the flat offset of n[indices].
  static std::int64_t flat_coefficient(const Node& n, const std::vector<Index>& indices,
                                       const std::string& sym) {
    std::int64_t stride = 1, c = 0;
    for (std::size_t k = n.dims.size(); k-- > 0;) {
      for (const auto& t : indices[k].terms)
        if (t.sym == sym) c += t.coef * stride;
      stride *= n.dims[k];
    }
    return c;
  }

  const ProgramPlan& plan_;
  CCodegenOptions opts_;
  Emitter em_;
  std::string lane_block_;                    // the current lane block's loop variable
  std::optional<LaneCtx> lane_;               // inside lane_band
  std::map<int, PrivateTiles> private_tiles_;  // per position (plan_private_tiles)
  std::set<int> private_nodes_;                             // the nodes kept in them
  std::vector<LaneLocal> lane_locals_;        // lane locals in scope, in declaration order
  std::vector<bool> lane_simd_;               // open lane loops: simd (with gathers hoisted)?
  std::vector<std::string> held_;             // output held while a lane loop's body is emitted
  std::vector<std::string> carried_prev_;     // the enclosing lane scans' carried `prev` names
  std::string panel_t0_;                      // the innermost panel loop's chunk start
  std::set<std::string> band_writes_;         // nodes the current lane band writes (never panelled)
  bool simd_innermost_ = false;               // loops(): omp simd on the innermost loop
  std::optional<RowFusion> epilogue_;         // the pointwise statement to run per finished row
  bool epilogue_used_ = false;                // row_epilogue() emitted epilogue_
  std::vector<std::string> pending_zeros_;    // `zero`s deferred to the next statement that is not a zero
  bool zero_start_ = false;                   // reduction_nest: cells start at +0, not loaded
  std::set<int> fused_;                       // positions already run inside a row reduction
  std::map<const Expr*, std::string> tiles_;  // packed reads of the current block
  std::vector<std::pair<const Expr*, std::string>> invariants_;  // hoisted expressions -> their arrays
};

}  // namespace

std::string generate_c(const ProgramPlan& plan, const CCodegenOptions& opts) {
  return CGenerator(plan, opts).run();
}

}  // namespace fp
