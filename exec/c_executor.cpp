// The compiled C executor: plan, generate C (exec/c_codegen.h), JIT it (exec/jit.h), and run the
// entry function on natively laid out buffers.

#include "exec/c_executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/diagnostic.h"
#include "core/input_validation.h"
#include "core/numerics.h"
#include "exec/c_codegen.h"
#include "exec/executor.h"
#include "exec/jit.h"
#include "exec/native_buffers.h"
#include "exec/program_plan.h"

namespace fp {

namespace {

// Mirrors fpx_ctx in the generated code (exec/c_codegen.cpp).
struct FpxCtx {
  std::int64_t live = 0;
  std::int64_t peak = 0;
  std::int64_t failed_bytes = 0;
  std::int64_t threads = 1;
};
using EntryFn = int (*)(FpxCtx*, void**);
using AbiFn = int (*)();

}  // namespace

int hardware_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int max_c_threads() {
  return std::max(256, 4 * hardware_threads());
}

int resolve_c_threads(int requested) {
  const int cap = max_c_threads();
  if (requested > cap || requested < 0)
    throw UserError(kExitUsage, "", 0, 0,
                    fmt::format("{} threads requested: expected 1 to {}", requested, cap));
  if (requested > 0) return requested;
  if (const char* e = std::getenv("FLASHPROOF_THREADS"); e && *e) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(e, &end, 10);
    if (end && *end == '\0' && errno == 0 && v > 0 && v <= cap) return static_cast<int>(v);
    throw UserError(
        kExitUsage, "", 0, 0,
        fmt::format("FLASHPROOF_THREADS: expected a thread count from 1 to {}, found '{}'", cap, e));
  }
  return hardware_threads();
}

namespace {

class CProgram final : public CompiledProgram {
 public:
  CProgram(ProgramPlan plan, std::string source, JitResult jit, const std::string& entry, int threads,
           std::string source_name)
      : plan_(std::move(plan)),
        source_(std::move(source)),
        jit_(std::move(jit)),
        threads_(threads),
        source_name_(std::move(source_name)) {
    auto abi = reinterpret_cast<AbiFn>(jit_.object->symbol("fpx_abi_version"));
    entry_ = reinterpret_cast<EntryFn>(jit_.object->symbol(entry.c_str()));
    FP_INTERNAL_CHECK(abi && entry_ && abi() == kCAbiVersion,
                      "JIT object '{}' lacks the flashproof C ABI v{}", jit_.object->path(), kCAbiVersion);
  }

  TensorMap run(const TensorMap& inputs) override {
    const auto& nodes = plan_.placed.nodes;
    // Validate every input first, in declaration order, exactly as interpret() does.
    std::vector<const Tensor*> bound(nodes.size(), nullptr);
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].is_input) bound[i] = &validated_input(nodes[i], inputs, source_name_);
    std::vector<NativeBuffer> owned(nodes.size());
    std::vector<void*> bufs(nodes.size(), nullptr);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!bound[i]) continue;
      owned[i] = NativeBuffer::from_tensor(*bound[i]);
      bufs[i] = owned[i].data();
    }
    FpxCtx ctx;
    ctx.threads = threads_;
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = entry_(&ctx, bufs.data());
    stats_.compute_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0)
      throw ExecError(
          fmt::format("{}: out of memory allocating a {}-byte buffer", source_name_, ctx.failed_bytes));
    stats_.peak_bytes = ctx.peak;
    TensorMap out;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (!n.is_output) continue;
      FP_INTERNAL_CHECK(bufs[i] != nullptr, "generated code returned no buffer for output '{}'", n.name);
      NativeBuffer produced =
          n.is_input ? std::move(owned[i]) : NativeBuffer::adopt(bufs[i], n.prec, n.cell_count());
      out.emplace(n.name, produced.to_tensor(n.dims));
    }
    return out;
  }

  RunStats last_stats() const override { return stats_; }
  std::string source() const override { return source_; }

 private:
  ProgramPlan plan_;
  std::string source_;
  JitResult jit_;
  EntryFn entry_ = nullptr;
  int threads_;
  std::string source_name_;
  RunStats stats_;
};

class CExecutor final : public Executor {
 public:
  explicit CExecutor(ExecOptions opts) : opts_(std::move(opts)) {}
  std::string name() const override { return "c"; }
  Availability available() const override {
    JitOptions j = jit_options();
    std::string out;
    const int rc = run_program({j.cc, "--version"}, out);
    if (rc != 0) return Availability::unavailable(fmt::format("no C compiler: '{}' cannot be run", j.cc));
    return Availability::yes();
  }
  std::unique_ptr<CompiledProgram> compile(const Routine& r) override {
    const int threads = resolve_c_threads(opts_.threads);  // refused before any compiling
    ProgramPlan plan = make_plan(r, opts_.placement);
    std::string src = generate_c(plan);
    JitResult jit = jit_compile_c(src, jit_options());
    return std::make_unique<CProgram>(std::move(plan), std::move(src), std::move(jit), "fpx_entry", threads,
                                      opts_.source_name);
  }

  CObjectExport export_object(const Routine& r) {
    CObjectExport x{make_plan(r, opts_.placement), {}, {}, "fpx_entry"};
    x.source = generate_c(x.plan);
    JitResult jit = jit_compile_c(x.source, jit_options());
    // The bytes of the object that was just verified against its seal and loaded.
    x.object_bytes = jit.object->bytes();
    FP_INTERNAL_CHECK(!x.object_bytes.empty(), "compiled object '{}' is empty", jit.object->path());
    return x;
  }

  std::vector<std::unique_ptr<CompiledProgram>> compile_batch(const std::vector<Routine>& rs) {
    const int threads = resolve_c_threads(opts_.threads);
    std::vector<ProgramPlan> plans;
    std::vector<std::string> sources;
    std::string all;
    for (std::size_t i = 0; i < rs.size(); ++i) {
      plans.push_back(make_plan(rs[i], opts_.placement));
      CCodegenOptions c;
      c.entry = fmt::format("fpx_entry_{}", i);
      sources.push_back(generate_c(plans.back(), c));
      all += sources.back();
    }
    JitResult jit = jit_compile_c(all, jit_options());
    std::vector<std::unique_ptr<CompiledProgram>> out;
    for (std::size_t i = 0; i < rs.size(); ++i)
      out.push_back(std::make_unique<CProgram>(std::move(plans[i]), std::move(sources[i]), jit,
                                               fmt::format("fpx_entry_{}", i), threads, opts_.source_name));
    return out;
  }

 private:
  JitOptions jit_options() const {
    JitOptions j;
    const char* env_cc = std::getenv("FLASHPROOF_CC");
    const char* env_flags = std::getenv("FLASHPROOF_CFLAGS");
    j.cc = !opts_.cc.empty() ? opts_.cc : (env_cc && *env_cc ? env_cc : "cc");
    if (!opts_.cflags.empty()) {
      j.flags = opts_.cflags;
      j.flags_from_user = true;
    } else if (env_flags && *env_flags) {
      j.flags = env_flags;
      j.flags_from_user = true;
    } else {
      j.flags = default_c_flags();
    }
    j.cache_dir = opts_.cache_dir;
    j.use_cache = opts_.use_cache;
    return j;
  }

  ExecOptions opts_;
};

}  // namespace

std::unique_ptr<Executor> make_c_executor(const ExecOptions& opts) {
  return std::make_unique<CExecutor>(opts);
}

std::vector<std::unique_ptr<CompiledProgram>> compile_c_batch(const std::vector<Routine>& routines,
                                                              const ExecOptions& opts) {
  return CExecutor(opts).compile_batch(routines);
}

CObjectExport export_c_object(const Routine& r, const ExecOptions& opts) {
  return CExecutor(opts).export_object(r);
}

}  // namespace fp
