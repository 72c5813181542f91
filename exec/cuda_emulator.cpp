// The CUDA emulator (exec/cuda_emulator.h).

#include "exec/cuda_emulator.h"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

#include "core/diagnostic.h"
#include "exec/codegen_emitter.h"
#include "exec/cuda_codegen.h"
#include "exec/cuda_run.h"
#include "exec/jit.h"
#include "exec/program_plan.h"

namespace fp {

namespace {

// What CUDA C++ the generator emits needs on the host: the built-in variables (thread-local per
// emulated thread), the qualifiers, the block barrier, and the launcher running a grid.
constexpr const char* kHostCuda = R"(/* flashproof CUDA emulation (exec/cuda_emulator.cpp) */
#include <barrier>
#include <exception>
#include <thread>
#include <vector>
#define FPC_EXP32_USE_SHIFTER 1 /* the device's exp32 path (core/numerics_c.h) */
struct fpx_dim3 { unsigned x, y, z; };
static thread_local fpx_dim3 threadIdx, blockIdx;
static fpx_dim3 blockDim, gridDim;
static std::barrier<>* fpx_block_barrier;
static inline void __syncthreads() { fpx_block_barrier->arrive_and_wait(); }
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
typedef void (*fpx_entry)(void**, long long);
/* Runs a grid: one thread per CUDA thread of a block, the blocks in order, a barrier between
   blocks (shared memory is reused). Returns 0, or 1 when threads could not be started. */
extern "C" int fpx_emulate(fpx_entry k, void** args, long long total, unsigned gx, unsigned gy, unsigned bx) {
  blockDim = fpx_dim3{bx, 1, 1};
  gridDim = fpx_dim3{gx, gy, 1};
  std::barrier<> bar(bx);
  fpx_block_barrier = &bar;
  auto thread = [&](unsigned t) {
    threadIdx = fpx_dim3{t, 0, 0};
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        blockIdx = fpx_dim3{x, y, 0};
        k(args, total);
        bar.arrive_and_wait();
      }
  };
  try {
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < bx; ++t) threads.emplace_back(thread, t);
    thread(0);
    for (auto& th : threads) th.join();
  } catch (const std::exception&) {
    return 1;
  }
  return 0;
}
)";

std::string host_flags() {
  return "-x c++ -std=c++20 -O1 -pthread -ffp-contract=off -fno-fast-math -fPIC -shared";
}

// One `fpx_call_NAME(void** args, long long total)` per kernel: the arguments cast back to the
// kernel's parameter types.
std::string call_wrappers(const ProgramPlan& plan, const CudaProgramText& text) {
  std::string out;
  for (const CudaLaunch& l : text.launches) {
    if (l.kind != CudaLaunch::Kind::Kernel) continue;
    std::string args;
    for (std::size_t i = 0; i < l.params.size(); ++i) {
      const Node& n = plan.placed.nodes[static_cast<std::size_t>(l.params[i])];
      args += fmt::format("({}*)a[{}], ", codegen::stype(n.prec), i);
    }
    out += fmt::format("extern \"C\" void fpx_call_{0}(void** a, long long total) {{ {0}({1}total); }}\n", l.kernel,
                       args);
  }
  return out;
}

using Emulate = int (*)(void (*)(void**, long long), void**, long long, unsigned, unsigned, unsigned);

// The emulated GPU: host memory, and launches run by fpx_emulate.
class HostDevice final : public HostMemoryDevice {
 public:
  HostDevice(const SharedObject& so, Emulate emulate) : so_(so), emulate_(emulate) {}
  void launch(const CudaLaunch& l, const CudaGeometry& g, const std::vector<Buffer>& args,
              const std::string& where) override {
    auto* entry = reinterpret_cast<void (*)(void**, long long)>(so_.symbol(("fpx_call_" + l.kernel).c_str()));
    FP_INTERNAL_CHECK(entry != nullptr, "emulated kernel '{}' not found in {}", l.kernel, so_.path());
    std::vector<void*> ptrs;
    for (Buffer b : args) ptrs.push_back(at(b));
    if (emulate_(entry, ptrs.data(), g.total, g.grid_x, g.grid_y, g.block) != 0)
      throw ExecError(fmt::format("CUDA emulation: could not start {} threads for {}", g.block, where));
  }

 private:
  const SharedObject& so_;
  Emulate emulate_;
};

class EmulatedProgram final : public CompiledProgram {
 public:
  EmulatedProgram(ProgramPlan plan, CudaProgramText text, JitResult jit, std::string source_name)
      : plan_(std::move(plan)), text_(std::move(text)), jit_(std::move(jit)), source_name_(std::move(source_name)) {
    emulate_ = reinterpret_cast<Emulate>(jit_.object->symbol("fpx_emulate"));
    FP_INTERNAL_CHECK(emulate_ != nullptr, "fpx_emulate not found in {}", jit_.object->path());
  }
  std::string source() const override { return text_.source; }
  RunStats last_stats() const override { return stats_; }
  TensorMap run(const TensorMap& inputs) override {
    // The emulated built-ins (gridDim, blockDim, the block barrier) and __shared__ arrays are the
    // shared object's globals: one emulated run at a time in the process, as on one GPU stream.
    static std::mutex one_at_a_time;
    std::lock_guard<std::mutex> lock(one_at_a_time);
    return run_cuda_program(
        plan_, text_, [this] { return std::make_unique<HostDevice>(*jit_.object, emulate_); }, inputs,
        source_name_, stats_);
  }

 private:
  ProgramPlan plan_;
  CudaProgramText text_;
  JitResult jit_;
  std::string source_name_;
  Emulate emulate_ = nullptr;
  RunStats stats_;
};

class CudaEmulator final : public Executor {
 public:
  explicit CudaEmulator(ExecOptions opts) : opts_(std::move(opts)) {}
  std::string name() const override { return "cuda-emu"; }
  Availability available() const override {
    std::string out;
    if (run_program({compiler(), "--version"}, out) != 0)
      return Availability::unavailable(fmt::format("no C++ compiler: '{}' cannot be run", compiler()));
    return Availability::yes();
  }
  std::unique_ptr<CompiledProgram> compile(const Routine& r) override {
    require_available(*this);
    ProgramPlan plan = make_plan(r, opts_.placement);
    CudaProgramText text = generate_cuda(plan);
    JitOptions j;
    j.cc = compiler();
    j.flags = host_flags();
    j.cache_dir = opts_.cache_dir;
    j.use_cache = opts_.use_cache;
    JitResult jit = jit_compile_c(std::string(kHostCuda) + text.source + call_wrappers(plan, text), j);
    return std::make_unique<EmulatedProgram>(std::move(plan), std::move(text), std::move(jit), opts_.source_name);
  }

 private:
  static std::string compiler() {
    const char* e = std::getenv("FLASHPROOF_CXX");
    return e && *e ? e : "c++";
  }
  ExecOptions opts_;
};

}  // namespace

std::unique_ptr<Executor> make_cuda_emulator(const ExecOptions& opts) {
  return std::make_unique<CudaEmulator>(opts);
}

}  // namespace fp
