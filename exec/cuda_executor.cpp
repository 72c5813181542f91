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

#include "core/diagnostic.h"
#include "core/support/atomic_file.h"
#include "core/support/sha256.h"
#include "exec/cuda_codegen.h"
#include "exec/cuda_run.h"
#include "exec/jit.h"
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

// The GPU as a CudaDevice (exec/cuda_run.h): buffers from cuMemAlloc, freed with the device; every
// launch followed by a synchronization, both checked; the clock from CUDA events.
class DriverDevice final : public CudaDevice {
 public:
  DriverDevice(const Driver& d, const std::map<std::string, CUfunction>& functions)
      : d_(d), mem_(d), functions_(functions) {}
  ~DriverDevice() override {
    if (start_) d_.EventDestroy(start_);
    if (stop_) d_.EventDestroy(stop_);
  }
  Buffer alloc(std::size_t bytes, const std::string& node) override { return mem_.alloc(bytes, node); }
  void upload(Buffer to, const void* from, std::size_t bytes, const std::string& what) override {
    d_.check(d_.MemcpyHtoD(to, from, bytes), "cuMemcpyHtoD", what);
  }
  void download(void* to, Buffer from, std::size_t bytes, const std::string& what) override {
    d_.check(d_.MemcpyDtoH(to, from, bytes), "cuMemcpyDtoH", what);
  }
  void fill(Buffer b, int width, std::uint32_t pattern, std::size_t count, const std::string& what) override {
    if (width == 1)
      d_.check(d_.MemsetD8(b, static_cast<unsigned char>(pattern), count), "cuMemsetD8", what);
    else if (width == 2)
      d_.check(d_.MemsetD16(b, static_cast<unsigned short>(pattern), count), "cuMemsetD16", what);
    else
      d_.check(d_.MemsetD32(b, pattern, count), "cuMemsetD32", what);
  }
  void launch(const CudaLaunch& l, const CudaGeometry& g, const std::vector<Buffer>& args,
              const std::string& where) override {
    std::vector<CUdeviceptr> ptrs(args.begin(), args.end());
    long long total = g.total;
    std::vector<void*> argv;
    for (auto& a : ptrs) argv.push_back(&a);
    argv.push_back(&total);
    d_.check(d_.LaunchKernel(functions_.at(l.kernel), g.grid_x, g.grid_y, 1, g.block, 1, 1, 0, nullptr,
                             argv.data(), nullptr),
             "cuLaunchKernel", where);
    // The launch status says the launch was accepted; the kernel's own faults surface at the
    // next synchronization, so synchronize after every launch and check that too.
    d_.check(d_.CtxSynchronize(), "cuCtxSynchronize", "after " + where);
  }
  void start_clock() override {
    d_.check(d_.CtxSynchronize(), "cuCtxSynchronize", "before the first launch");
    d_.check(d_.EventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
    d_.check(d_.EventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate");
    d_.check(d_.EventRecord(start_, nullptr), "cuEventRecord");
  }
  double stop_clock() override {
    d_.check(d_.EventRecord(stop_, nullptr), "cuEventRecord");
    d_.check(d_.EventSynchronize(stop_), "cuEventSynchronize");
    float ms = 0;
    d_.check(d_.EventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
    return ms / 1e3;
  }

 private:
  const Driver& d_;
  DeviceBuffers mem_;
  const std::map<std::string, CUfunction>& functions_;
  CUevent start_ = nullptr, stop_ = nullptr;
};

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
    std::lock_guard<std::mutex> lock(driver_mutex());
    Driver::get().make_current();
    return run_cuda_program(
        plan_, text_, [this] { return std::make_unique<DriverDevice>(Driver::get(), functions_); }, inputs,
        source_name_, stats_);
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
