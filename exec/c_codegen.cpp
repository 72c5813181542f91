// C code generation (exec/c_codegen.h): the driver around the shared emitter — the support
// prelude, the entry function, buffer lifetimes per the plan (heap, stack, pooled), and per
// top-level statement the choice of a schedule: the ones docs/executors.md describes live in
// exec/c_schedule_*.cpp (exec/c_generator.h lists them); a statement none of them takes runs here
// as the plain schedule (OpenMP on its first parallel-safe band, omp simd on the innermost loop of
// a perfect nest). Each schedule's comment says why it changes no value.

#include "exec/c_codegen.h"

#include <fmt/format.h>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.h"
#include "exec/c_generator.h"
#include "exec/numerics_text.h"

namespace fp {

namespace {

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

}  // namespace

namespace codegen {

std::string CGenerator::run() {
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

std::string CGenerator::sanitize_comment(const std::string& s) {
  std::string out;
  for (char c : s) out += (c >= 32 && c < 127 && c != '*' && c != '/' && c != '\\') ? c : '?';
  return out;
}

// The bound the buffer pool keeps the run's buffers in (kPrelude): the memory report's peak plus
// one 2 MiB alignment unit (pooled buffers count at their rounded size, the report at exact
// sizes; with no slack at all a buffer that would fit exactly was sometimes refused).
std::int64_t CGenerator::pool_limit() const {
  const std::int64_t unit = std::int64_t{2} << 20;
  const std::int64_t peak = plan_.report.peak_bytes;
  return peak > std::numeric_limits<std::int64_t>::max() - unit ? std::numeric_limits<std::int64_t>::max()
                                                                : peak + unit;
}

bool CGenerator::stack_buffer(int i) const {
  const Node& n = plan_.placed.nodes[static_cast<std::size_t>(i)];
  const BufferSpan& s = plan_.span[static_cast<std::size_t>(i)];
  return n.mode == MemMode::Local && !n.is_input && !n.is_output && s.first >= 0 && s.first == s.last &&
         em_.node_bytes(n) <= opts_.stack_limit;
}

void CGenerator::allocate(const std::vector<int>& nodes) {
  for (int i : nodes) {
    const Node& n = plan_.placed.nodes[static_cast<std::size_t>(i)];
    if (n.is_input || plan_.is_virtual(n.name) || stack_buffer(i) || private_tile(i)) continue;
    const bool zero = plan_.top.empty() || !plan_.overwritten_first(i);
    em_.line(fmt::format("{0} = ({1}*)fpx_alloc(ctx, {2}LL, {3}, {4}LL);", em_.buffer(n.name),
                         codegen::stype(n.prec), em_.node_bytes(n), zero ? 1 : 0, pool_limit()));
    em_.line(fmt::format("if (!{}) goto fpx_fail;", em_.buffer(n.name)));
  }
}

void CGenerator::release(const std::vector<int>& nodes) {
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

void CGenerator::body(const Stmt& seq) {
  em_.walk_blocks(seq, [&](const Stmt& s) { position(s); });
}

void CGenerator::position(const Stmt& s) {
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
    if (has_privates)
      em_.line(fmt::format("fpx_account(ctx, {});  /* row-private slices */", privates->second.bytes));
    if (fusion) {
      allocate(plan_.starting_at(fusion->position));
      em_.line(
          fmt::format("/* statement {} (statement {} fused into its rows) */", p + 1, fusion->position + 1));
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

std::string CGenerator::pragma(int collapse) const {
  if (!opts_.parallel) return {};
  return fmt::format("#pragma omp parallel for{} schedule(static) num_threads(fpx_nt) if(fpx_nt > 1)",
                     collapse > 1 ? fmt::format(" collapse({})", collapse) : "");
}

void CGenerator::top_statement(const Stmt& s) {
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

// ---- the plain schedule: the first parallel-safe band in parallel, omp simd innermost -------

bool CGenerator::perfect_chain(const std::vector<const Stmt*>& chain) {
  return !chain.empty() && chain.back()->body.size() == 1 && chain.back()->body[0] &&
         chain.back()->body[0]->kind == StmtKind::Set;
}

// The first run of parallel-safe loops of a statement's loop chain: {first, count}, first < 0
// when there is none.
std::pair<int, int> CGenerator::parallel_run(const std::vector<const Stmt*>& chain) const {
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

// Emits chain[k..] with a parallel pragma collapsing chain[first .. first+count-1].
void CGenerator::loops(const std::vector<const Stmt*>& chain, std::size_t k, int first, int count) {
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

// ---- helpers several schedules share -------------------------------------------------------

// for (tb) { nl = lanes in this block; body(nl) } with the lane loop's symbol left to lanes().
void CGenerator::lane_block_loop(const Stmt* lane, int width, std::int64_t blocks,
                                 const std::function<void(const std::string&)>& body) {
  lane_block_ = em_.fresh("lb");
  em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", lane_block_, blocks));
  const std::string nl = em_.fresh("nl");
  const std::int64_t e = lane->to - lane->from + 1;
  em_.line(fmt::format("const fpc_i64 {0} = {1}LL - {2} * {3} < {2} ? {1}LL - {2} * {3} : {2};", nl, e, width,
                       lane_block_));
  body(nl);
  em_.close();
}

void CGenerator::collect_reads(const ExprP& e, std::vector<const Expr*>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Get) out.push_back(e.get());
  for (const auto& a : e->args) collect_reads(a, out);
}

// The coefficient of `sym` in the flat offset of n[indices].
std::int64_t CGenerator::flat_coefficient(const Node& n, const std::vector<Index>& indices,
                                          const std::string& sym) {
  std::int64_t stride = 1, c = 0;
  for (std::size_t k = n.dims.size(); k-- > 0;) {
    for (const auto& t : indices[k].terms)
      if (t.sym == sym) c += t.coef * stride;
    stride *= n.dims[k];
  }
  return c;
}

}  // namespace codegen

std::string generate_c(const ProgramPlan& plan, const CCodegenOptions& opts) {
  return codegen::CGenerator(plan, opts).run();
}

}  // namespace fp
