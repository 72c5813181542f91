// The CUDA executor: generate CUDA C++ (exec/cuda_codegen.h), compile it with NVRTC or nvcc to a
// cubin for the device's architecture, and run it through the driver API. Every driver call is
// checked, and after every launch both the launch status and the synchronized context status (the
// kernel's own faults) are; outputs whose first writer overwrites every cell are poisoned (a NaN
// pattern) before the run and checked after it, so a cell no kernel wrote is an error, not a
// silently wrong value. docs/executors.md describes the mapping and the checks.

#include "exec/cuda_executor.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "core/atomic_file.h"
#include "core/diagnostic.h"
#include "core/input_validation.h"
#include "core/sha256.h"
#include "exec/cuda_codegen.h"
#include "exec/jit.h"
#include "exec/native_buffers.h"
#include "exec/program_plan.h"

#if defined(FLASHPROOF_CUDA_ENABLED)
#include <cuda.h>
#include <nvrtc.h>
#endif

namespace fp {

const char* cuda_compiler_name(CudaCompiler c) {
  return c == CudaCompiler::Nvrtc ? "nvrtc" : "nvcc";
}

std::string cuda_source_for(const Routine& r, const ExecOptions& opts, const std::string& prefix) {
  ProgramPlan plan = make_plan(r, opts.placement);
  return generate_cuda(plan, prefix).source;
}

#if !defined(FLASHPROOF_CUDA_ENABLED)

Availability cuda_compiler_available(CudaCompiler) {
  return Availability::unavailable("built without CUDA support (FLASHPROOF_CUDA=OFF)");
}

CudaBinary compile_cuda(const std::string&, const std::string&, CudaCompiler) {
  return CudaBinary{false, "", "built without CUDA support (FLASHPROOF_CUDA=OFF)"};
}

namespace {
class CudaExecutor final : public Executor {
 public:
  std::string name() const override { return "cuda"; }
  Availability available() const override {
    return Availability::unavailable("built without CUDA support (FLASHPROOF_CUDA=OFF)");
  }
  std::unique_ptr<CompiledProgram> compile(const Routine&) override {
    require_available(*this);
    return nullptr;
  }
};
}  // namespace

std::unique_ptr<Executor> make_cuda_executor(const ExecOptions&) {
  return std::make_unique<CudaExecutor>();
}

#else  // FLASHPROOF_CUDA_ENABLED

namespace {

// ---- NVRTC -----------------------------------------------------------------------------------

struct Nvrtc {
  void* lib = nullptr;
  std::string error;
  decltype(&nvrtcCreateProgram) CreateProgram = nullptr;
  decltype(&nvrtcCompileProgram) CompileProgram = nullptr;
  decltype(&nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
  decltype(&nvrtcGetProgramLog) GetProgramLog = nullptr;
  decltype(&nvrtcGetCUBINSize) GetCUBINSize = nullptr;
  decltype(&nvrtcGetCUBIN) GetCUBIN = nullptr;
  decltype(&nvrtcDestroyProgram) DestroyProgram = nullptr;
  decltype(&nvrtcGetErrorString) GetErrorString = nullptr;

  static const Nvrtc& get() {
    static const Nvrtc n = [] {
      Nvrtc r;
      std::vector<std::string> names;
      if (const char* e = std::getenv("FLASHPROOF_NVRTC"); e && *e) names.push_back(e);
      names.push_back(std::string(FLASHPROOF_CUDA_LIBDIR) + "/libnvrtc.so");
      for (const char* soname : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
        names.push_back(std::string(FLASHPROOF_CUDA_LIBDIR) + "/" + soname);
        names.push_back(soname);
      }
      for (const auto& candidate : names)
        if ((r.lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
      if (!r.lib) {
        r.error = "NVRTC not found: libnvrtc.so could not be loaded";
        return r;
      }
      auto sym = [&](auto& f, const char* name) {
        f = reinterpret_cast<std::remove_reference_t<decltype(f)> >(dlsym(r.lib, name));
        if (!f && r.error.empty()) r.error = fmt::format("NVRTC lacks {}", name);
      };
      sym(r.CreateProgram, "nvrtcCreateProgram");
      sym(r.CompileProgram, "nvrtcCompileProgram");
      sym(r.GetProgramLogSize, "nvrtcGetProgramLogSize");
      sym(r.GetProgramLog, "nvrtcGetProgramLog");
      sym(r.GetCUBINSize, "nvrtcGetCUBINSize");
      sym(r.GetCUBIN, "nvrtcGetCUBIN");
      sym(r.DestroyProgram, "nvrtcDestroyProgram");
      sym(r.GetErrorString, "nvrtcGetErrorString");
      return r;
    }();
    return n;
  }
};

std::string nvcc_path() {
  if (const char* e = std::getenv("FLASHPROOF_NVCC"); e && *e) return e;
  if (access(FLASHPROOF_NVCC, X_OK) == 0) return FLASHPROOF_NVCC;
  return "nvcc";
}

CudaBinary compile_with_nvrtc(const std::string& source, const std::string& arch) {
  const Nvrtc& api = Nvrtc::get();
  if (!api.error.empty()) return CudaBinary{false, "", api.error};
  nvrtcProgram prog = nullptr;
  nvrtcResult rc = api.CreateProgram(&prog, source.c_str(), "flashproof.cu", 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS)
    return CudaBinary{false, "", fmt::format("nvrtcCreateProgram: {}", api.GetErrorString(rc))};
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "-std=c++17"};
  for (const auto& o : cuda_semantic_options()) opts.push_back(o);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  rc = api.CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  CudaBinary out;
  std::size_t log_size = 0;
  api.GetProgramLogSize(prog, &log_size);
  out.log.resize(log_size);
  if (log_size > 0) api.GetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (rc == NVRTC_SUCCESS) {
    std::size_t n = 0;
    rc = api.GetCUBINSize(prog, &n);
    if (rc == NVRTC_SUCCESS) {
      out.image.resize(n);
      rc = api.GetCUBIN(prog, out.image.data());
    }
    out.ok = rc == NVRTC_SUCCESS && n > 0;
    if (!out.ok) out.log += fmt::format("\nnvrtcGetCUBIN: {}", api.GetErrorString(rc));
  } else {
    out.log = fmt::format("nvrtcCompileProgram: {}\n{}", api.GetErrorString(rc), out.log);
  }
  api.DestroyProgram(&prog);
  return out;
}

CudaBinary compile_with_nvcc(const std::string& source, const std::string& arch) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/flashproof-nvcc-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (!dir) return CudaBinary{false, "", "cannot create a temporary directory for nvcc"};
  const std::string cu = std::string(dir) + "/program.cu";
  const std::string cubin = std::string(dir) + "/program.cubin";
  // The compiler's input is checked like any output: a full /tmp must not pass for a compile error.
  try {
    write_file_atomically(cu, source);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw;
  }
  std::vector<std::string> argv = {nvcc_path(), "-cubin", "-arch=" + arch, "-std=c++17", "-o", cubin, cu};
  const auto sem = cuda_semantic_options();
  argv.insert(argv.begin() + 2, sem.begin(), sem.end());
  std::string log;
  const int rc = run_program(argv, log);
  CudaBinary out;
  out.log = log;
  if (rc == 0) {
    std::ifstream f(cubin, std::ios::binary);
    out.image.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    out.ok = !out.image.empty();
  } else {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    out.log = fmt::format("{} (exit {}):\n{}", cmd, rc, log);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

// ---- the driver ------------------------------------------------------------------------------

struct Driver {
  void* lib = nullptr;
  std::string unavailable;  // why the executor cannot run, empty when it can
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string arch;
  std::string device_name;
  decltype(&cuInit) Init = nullptr;
  decltype(&cuDeviceGetCount) DeviceGetCount = nullptr;
  decltype(&cuDeviceGet) DeviceGet = nullptr;
  decltype(&cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&cuDeviceGetName) DeviceGetName = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&cuGetErrorName) GetErrorName = nullptr;
  decltype(&cuGetErrorString) GetErrorString = nullptr;
  decltype(&cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&cuModuleUnload) ModuleUnload = nullptr;
  decltype(&cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&cuMemAlloc) MemAlloc = nullptr;
  decltype(&cuMemFree) MemFree = nullptr;
  decltype(&cuMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&cuMemsetD8) MemsetD8 = nullptr;
  decltype(&cuMemsetD16) MemsetD16 = nullptr;
  decltype(&cuMemsetD32) MemsetD32 = nullptr;
  decltype(&cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&cuEventCreate) EventCreate = nullptr;
  decltype(&cuEventRecord) EventRecord = nullptr;
  decltype(&cuEventSynchronize) EventSynchronize = nullptr;
  decltype(&cuEventElapsedTime) EventElapsedTime = nullptr;
  decltype(&cuEventDestroy) EventDestroy = nullptr;

  static Driver& get() {
    static Driver d = [] {
      Driver r;
      r.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!r.lib) {
        r.unavailable = "no CUDA driver: libcuda.so.1 not found";
        return r;
      }
      std::string missing;
      auto sym = [&](auto& f, std::initializer_list<const char*> names) {
        for (const char* n : names) {
          f = reinterpret_cast<std::remove_reference_t<decltype(f)> >(dlsym(r.lib, n));
          if (f) return;
        }
        if (missing.empty()) missing = *names.begin();
      };
      sym(r.Init, {"cuInit"});
      sym(r.DeviceGetCount, {"cuDeviceGetCount"});
      sym(r.DeviceGet, {"cuDeviceGet"});
      sym(r.DeviceGetAttribute, {"cuDeviceGetAttribute"});
      sym(r.DeviceGetName, {"cuDeviceGetName"});
      sym(r.DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
      sym(r.CtxSetCurrent, {"cuCtxSetCurrent"});
      sym(r.CtxSynchronize, {"cuCtxSynchronize"});
      sym(r.GetErrorName, {"cuGetErrorName"});
      sym(r.GetErrorString, {"cuGetErrorString"});
      sym(r.ModuleLoadData, {"cuModuleLoadData"});
      sym(r.ModuleUnload, {"cuModuleUnload"});
      sym(r.ModuleGetFunction, {"cuModuleGetFunction"});
      sym(r.MemAlloc, {"cuMemAlloc_v2"});
      sym(r.MemFree, {"cuMemFree_v2"});
      sym(r.MemcpyHtoD, {"cuMemcpyHtoD_v2"});
      sym(r.MemcpyDtoH, {"cuMemcpyDtoH_v2"});
      sym(r.MemsetD8, {"cuMemsetD8_v2"});
      sym(r.MemsetD16, {"cuMemsetD16_v2"});
      sym(r.MemsetD32, {"cuMemsetD32_v2"});
      sym(r.LaunchKernel, {"cuLaunchKernel"});
      sym(r.EventCreate, {"cuEventCreate"});
      sym(r.EventRecord, {"cuEventRecord"});
      sym(r.EventSynchronize, {"cuEventSynchronize"});
      sym(r.EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
      sym(r.EventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
      if (!missing.empty()) {
        r.unavailable = fmt::format("CUDA driver too old: libcuda.so.1 lacks {}", missing);
        return r;
      }
      CUresult rc = r.Init(0);
      if (rc != CUDA_SUCCESS) {
        r.unavailable = fmt::format("no usable CUDA device: cuInit failed ({})", r.error_name(rc));
        return r;
      }
      int count = 0;
      rc = r.DeviceGetCount(&count);
      if (rc != CUDA_SUCCESS || count == 0) {
        r.unavailable = "no CUDA device: the driver reports none";
        return r;
      }
      int device_index = 0;
      if (const char* e = std::getenv("FLASHPROOF_CUDA_DEVICE"); e && *e) device_index = std::atoi(e);
      if (device_index < 0 || device_index >= count) {
        r.unavailable =
            fmt::format("FLASHPROOF_CUDA_DEVICE={} but the driver reports {} device(s)", device_index, count);
        return r;
      }
      int major = 0, minor = 0;
      char name[256] = {0};
      if ((rc = r.DeviceGet(&r.device, device_index)) != CUDA_SUCCESS ||
          (rc = r.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, r.device)) !=
              CUDA_SUCCESS ||
          (rc = r.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, r.device)) !=
              CUDA_SUCCESS ||
          (rc = r.DeviceGetName(name, sizeof name - 1, r.device)) != CUDA_SUCCESS ||
          (rc = r.DevicePrimaryCtxRetain(&r.context, r.device)) != CUDA_SUCCESS) {
        r.unavailable = fmt::format("CUDA device {} unusable ({})", device_index, r.error_name(rc));
        return r;
      }
      r.arch = fmt::format("sm_{}{}", major, minor);
      r.device_name = name;
      return r;
    }();
    return d;
  }

  std::string error_name(CUresult rc) const {
    const char* n = nullptr;
    const char* s = nullptr;
    if (GetErrorName) GetErrorName(rc, &n);
    if (GetErrorString) GetErrorString(rc, &s);
    return fmt::format("{} (code {}): {}", n ? n : "CUDA_ERROR_?", static_cast<int>(rc),
                       s ? s : "no description");
  }

  // Every driver call goes through check(): a failure is an ExecError naming the call.
  void check(CUresult rc, const char* call, const std::string& what = {}) const {
    if (rc != CUDA_SUCCESS)
      throw ExecError(
          fmt::format("{} failed{}: {}", call, what.empty() ? "" : " (" + what + ")", error_name(rc)));
  }
  void make_current() const { check(CtxSetCurrent(context), "cuCtxSetCurrent"); }
};

std::mutex& driver_mutex() {
  static std::mutex m;
  return m;
}

// Device buffers freed on every exit path.
class DeviceBuffers {
 public:
  explicit DeviceBuffers(const Driver& d) : d_(d) {}
  ~DeviceBuffers() {
    for (CUdeviceptr p : ptrs_)
      if (p) d_.MemFree(p);
  }
  CUdeviceptr alloc(std::size_t bytes, const std::string& node) {
    CUdeviceptr p = 0;
    d_.check(d_.MemAlloc(&p, bytes == 0 ? 1 : bytes), "cuMemAlloc",
             fmt::format("{} bytes for node '{}'", bytes, node));
    ptrs_.push_back(p);
    return p;
  }

 private:
  const Driver& d_;
  std::vector<CUdeviceptr> ptrs_;
};

constexpr std::uint32_t kPoison32 = 0x7FF47FF4u;  // f64 cells: 0x7FF47FF47FF47FF4 (a NaN); f32: a NaN
constexpr std::uint16_t kPoison16 = 0x7FDAu;      // a NaN in f16 and in bf16

bool poisonable(Prec p) {
  return p != Prec::I32;  // every i32 pattern is a legal value
}

// The first cell holding the poison pattern, or -1.
std::int64_t first_poisoned(const NativeBuffer& b) {
  const auto* bytes = static_cast<const unsigned char*>(b.data());
  const std::int64_t n = b.cells();
  switch (b.prec()) {
    case Prec::F64:
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint64_t u;
        std::memcpy(&u, bytes + 8 * i, 8);
        if (u == (std::uint64_t{kPoison32} << 32 | kPoison32)) return i;
      }
      return -1;
    case Prec::F32:
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint32_t u;
        std::memcpy(&u, bytes + 4 * i, 4);
        if (u == kPoison32) return i;
      }
      return -1;
    case Prec::F16:
    case Prec::BF16:
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t u;
        std::memcpy(&u, bytes + 2 * i, 2);
        if (u == kPoison16) return i;
      }
      return -1;
    case Prec::I32:
      return -1;
  }
  return -1;
}

class CudaProgram final : public CompiledProgram {
 public:
  CudaProgram(ProgramPlan plan, CudaProgramText text, const std::string& image, std::string source_name)
      : plan_(std::move(plan)), text_(std::move(text)), source_name_(std::move(source_name)) {
    const Driver& d = Driver::get();
    std::lock_guard<std::mutex> lock(driver_mutex());
    d.make_current();
    d.check(d.ModuleLoadData(&module_, image.data()), "cuModuleLoadData");
    for (const CudaLaunch& l : text_.launches) {
      if (l.kind != CudaLaunch::Kind::Kernel) continue;
      CUfunction f = nullptr;
      d.check(d.ModuleGetFunction(&f, module_, l.kernel.c_str()), "cuModuleGetFunction", l.kernel);
      functions_[l.kernel] = f;
    }
  }
  ~CudaProgram() override {
    const Driver& d = Driver::get();
    if (module_) d.ModuleUnload(module_);
  }

  std::string source() const override { return text_.source; }
  RunStats last_stats() const override { return stats_; }

  TensorMap run(const TensorMap& inputs) override {
    const Driver& d = Driver::get();
    const auto& nodes = plan_.placed.nodes;
    std::vector<const Tensor*> bound(nodes.size(), nullptr);
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].is_input) bound[i] = &validated_input(nodes[i], inputs, source_name_);
    std::lock_guard<std::mutex> lock(driver_mutex());
    d.make_current();
    DeviceBuffers mem(d);
    std::vector<CUdeviceptr> dev(nodes.size(), 0);
    std::vector<bool> poisoned(nodes.size(), false);
    bool input_holds_poison = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (plan_.is_virtual(n.name)) continue;
      const std::size_t bytes =
          static_cast<std::size_t>(n.cell_count()) * static_cast<std::size_t>(prec_bytes(n.prec));
      dev[i] = mem.alloc(bytes, n.name);
      if (bound[i]) {
        NativeBuffer host = NativeBuffer::from_tensor(*bound[i]);
        input_holds_poison = input_holds_poison || first_poisoned(host) >= 0;
        d.check(d.MemcpyHtoD(dev[i], host.data(), bytes), "cuMemcpyHtoD", "input '" + n.name + "'");
      }
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (!dev[i] || bound[i]) continue;
      const std::size_t bytes =
          static_cast<std::size_t>(n.cell_count()) * static_cast<std::size_t>(prec_bytes(n.prec));
      // Outputs whose first writer overwrites every cell get the poison pattern (checked after the
      // run); every other buffer starts at +0 as the semantics say.
      if (n.is_output && poisonable(n.prec) && !input_holds_poison &&
          plan_.overwritten_first(static_cast<int>(i))) {
        poisoned[i] = true;
        if (prec_bytes(n.prec) == 2)
          d.check(d.MemsetD16(dev[i], kPoison16, bytes / 2), "cuMemsetD16", "poison '" + n.name + "'");
        else
          d.check(d.MemsetD32(dev[i], kPoison32, bytes / 4), "cuMemsetD32", "poison '" + n.name + "'");
      } else {
        d.check(d.MemsetD8(dev[i], 0, bytes), "cuMemsetD8", "zero '" + n.name + "'");
      }
    }
    d.check(d.CtxSynchronize(), "cuCtxSynchronize", "before the first launch");
    CUevent start = nullptr, stop = nullptr;
    d.check(d.EventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    d.check(d.EventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
    d.check(d.EventRecord(start, nullptr), "cuEventRecord");
    for (const CudaLaunch& l : text_.launches) {
      const std::string where = fmt::format("statement {} of {}", l.position + 1,
                                            source_name_.empty() ? plan_.placed.name : source_name_);
      if (l.kind == CudaLaunch::Kind::Memset) {
        const Node& n = nodes[static_cast<std::size_t>(l.node)];
        const std::size_t bytes =
            static_cast<std::size_t>(n.cell_count()) * static_cast<std::size_t>(prec_bytes(n.prec));
        d.check(d.MemsetD8(dev[static_cast<std::size_t>(l.node)], 0, bytes), "cuMemsetD8", where);
        continue;
      }
      std::vector<CUdeviceptr> args_ptr;
      args_ptr.reserve(l.params.size());
      for (int p : l.params) args_ptr.push_back(dev[static_cast<std::size_t>(p)]);
      long long total = l.threads;
      std::vector<void*> args;
      for (auto& a : args_ptr) args.push_back(&a);
      args.push_back(&total);
      const unsigned block = l.threads > 1 ? 128u : 1u;
      const long long blocks_needed = (total + block - 1) / block;
      const unsigned grid =
          static_cast<unsigned>(std::max<long long>(1, std::min<long long>(blocks_needed, 1 << 20)));
      d.check(
          d.LaunchKernel(functions_.at(l.kernel), grid, 1, 1, block, 1, 1, 0, nullptr, args.data(), nullptr),
          "cuLaunchKernel", l.kernel + ", " + where);
      // The launch status says the launch was accepted; the kernel's own faults surface at the
      // next synchronization, so synchronize after every launch and check that too.
      d.check(d.CtxSynchronize(), "cuCtxSynchronize", "after " + l.kernel + ", " + where);
    }
    d.check(d.EventRecord(stop, nullptr), "cuEventRecord");
    d.check(d.EventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    d.check(d.EventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    d.EventDestroy(start);
    d.EventDestroy(stop);
    stats_.compute_seconds = ms / 1e3;
    TensorMap out;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (!n.is_output) continue;
      NativeBuffer host = NativeBuffer::zeros(n.prec, n.cell_count());
      d.check(d.MemcpyDtoH(host.data(), dev[i], host.bytes()), "cuMemcpyDtoH", "output '" + n.name + "'");
      if (poisoned[i]) {
        const std::int64_t cell = first_poisoned(host);
        FP_INTERNAL_CHECK(
            cell < 0,
            "CUDA executor: cell {} of output '{}' was never written (its poison survived the run of "
            "{})",
            cell_text(n.dims, cell), n.name, source_name_.empty() ? plan_.placed.name : source_name_);
      }
      out.emplace(n.name, host.to_tensor(n.dims));
    }
    return out;
  }

 private:
  ProgramPlan plan_;
  CudaProgramText text_;
  std::string source_name_;
  CUmodule module_ = nullptr;
  std::map<std::string, CUfunction> functions_;
  RunStats stats_;
};

CudaCompiler preferred_compiler() {
  if (const char* e = std::getenv("FLASHPROOF_CUDA_COMPILER"); e && std::string(e) == "nvcc")
    return CudaCompiler::Nvcc;
  if (const char* e = std::getenv("FLASHPROOF_CUDA_COMPILER"); e && std::string(e) == "nvrtc")
    return CudaCompiler::Nvrtc;
  return cuda_compiler_available(CudaCompiler::Nvrtc) ? CudaCompiler::Nvrtc : CudaCompiler::Nvcc;
}

class CudaExecutor final : public Executor {
 public:
  explicit CudaExecutor(ExecOptions opts) : opts_(std::move(opts)) {}
  std::string name() const override { return "cuda"; }
  Availability available() const override {
    const Driver& d = Driver::get();
    if (!d.unavailable.empty()) return Availability::unavailable(d.unavailable);
    const CudaCompiler c = preferred_compiler();
    Availability a = cuda_compiler_available(c);
    if (!a) return Availability::unavailable(fmt::format("no CUDA compiler: {}", a.reason));
    return Availability::yes();
  }
  std::unique_ptr<CompiledProgram> compile(const Routine& r) override {
    require_available(*this);
    const Driver& d = Driver::get();
    ProgramPlan plan = make_plan(r, opts_.placement);
    CudaProgramText text = generate_cuda(plan);
    const CudaCompiler c = preferred_compiler();
    // Cubins are cached by content like the C objects (source, compiler, options, architecture),
    // sealed in the same private cache (exec/jit.h): the image handed to the driver is the one
    // whose seal was verified, never bytes someone planted under the key.
    const std::string key = sha256_hex("flashproof-cuda-v1\n" + std::string(cuda_compiler_name(c)) + "\n" +
                                       d.arch + "\n" + text.source);
    const std::string name = key + ".cubin";
    std::optional<PrivateCache> cache;
    if (opts_.use_cache)
      cache.emplace(jit_cache_spec(opts_.cache_dir.empty() ? default_cache_dir() : opts_.cache_dir));
    std::string image;
    if (cache)
      if (std::optional<std::string> sealed = cache->read_sealed(name)) image = std::move(*sealed);
    if (image.empty()) {
      CudaBinary bin = compile_cuda(text.source, d.arch, c);
      if (!bin.ok)
        internal_failure(__FILE__, __LINE__, "generated CUDA compiles",
                         fmt::format("{} failed for {}:\n{}", cuda_compiler_name(c), d.arch, bin.log));
      image = std::move(bin.image);
      if (cache) cache->write_sealed(name, image);
    }
    return std::make_unique<CudaProgram>(std::move(plan), std::move(text), image, opts_.source_name);
  }

 private:
  ExecOptions opts_;
};

}  // namespace

Availability cuda_compiler_available(CudaCompiler c) {
  if (c == CudaCompiler::Nvrtc) {
    const Nvrtc& api = Nvrtc::get();
    return api.error.empty() ? Availability::yes() : Availability::unavailable(api.error);
  }
  std::string out;
  const int rc = run_program({nvcc_path(), "--version"}, out);
  if (rc != 0)
    return Availability::unavailable(fmt::format("nvcc not found ('{}' cannot be run)", nvcc_path()));
  return Availability::yes();
}

CudaBinary compile_cuda(const std::string& source, const std::string& arch, CudaCompiler c) {
  return c == CudaCompiler::Nvrtc ? compile_with_nvrtc(source, arch) : compile_with_nvcc(source, arch);
}

std::unique_ptr<Executor> make_cuda_executor(const ExecOptions& opts) {
  return std::make_unique<CudaExecutor>(opts);
}

#endif  // FLASHPROOF_CUDA_ENABLED

}  // namespace fp
