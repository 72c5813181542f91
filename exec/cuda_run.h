#pragma once
// One run of generated CUDA (exec/cuda_codegen.h) on a device, with the executor's checks, shared by
// the GPU (exec/cuda_executor.cpp, the driver API) and its CPU emulation (exec/cuda_emulator.h)
// (internal to exec/):
//  - inputs are validated and copied in; every other buffer starts at +0 as the semantics say,
//    except outputs whose first writer overwrites every cell (ProgramPlan::overwritten_first):
//    those are poisoned and checked after the run, so a cell no kernel wrote is an error, never a
//    silently wrong value;
//  - float outputs get a NaN pattern no input holds (when an input holds it, nothing is poisoned);
//  - i32 outputs, where every pattern is a legal value, are poisoned twice: the program runs a
//    second time with another pattern, and a cell that holds the first pattern after the first
//    run and the second after the second was never written (a written cell holds the same value
//    in both runs: the program is deterministic);
//  - every launch is checked, then the device synchronized and checked (a kernel's own faults);
//  - every buffer is allocated for the whole run: RunStats::peak_bytes is their sum (the device
//    memory the run holds), at least the memory report's peak, which counts liveness.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "exec/cuda_codegen.h"
#include "exec/executor.h"
#include "exec/program_plan.h"

namespace fp {

// What a run needs from a device. Buffers are handles the device frees when it is destroyed;
// every call throws ExecError naming what failed.
class CudaDevice {
 public:
  using Buffer = std::uint64_t;
  virtual ~CudaDevice() = default;
  virtual Buffer alloc(std::size_t bytes, const std::string& node) = 0;
  virtual void upload(Buffer to, const void* from, std::size_t bytes, const std::string& what) = 0;
  virtual void download(void* to, Buffer from, std::size_t bytes, const std::string& what) = 0;
  // `count` cells of `width` bytes (1, 2 or 4) set to the low bytes of `pattern`.
  virtual void fill(Buffer b, int width, std::uint32_t pattern, std::size_t count, const std::string& what) = 0;
  // Runs kernel `l` with its arguments and waits for it; throws if it failed.
  virtual void launch(const CudaLaunch& l, const CudaGeometry& g, const std::vector<Buffer>& args,
                      const std::string& where) = 0;
  virtual void start_clock() = 0;
  virtual double stop_clock() = 0;  // seconds since start_clock, the device's own measure
};

// A CudaDevice in host memory, all but its launches (the CUDA emulator's, the tests' scripted
// devices): allocations start as garbage (0xCD), like device memory; the clock is the host's.
class HostMemoryDevice : public CudaDevice {
 public:
  Buffer alloc(std::size_t bytes, const std::string& node) override;
  void upload(Buffer to, const void* from, std::size_t bytes, const std::string& what) override;
  void download(void* to, Buffer from, std::size_t bytes, const std::string& what) override;
  void fill(Buffer b, int width, std::uint32_t pattern, std::size_t count, const std::string& what) override;
  void start_clock() override;
  double stop_clock() override;

 protected:
  unsigned char* at(Buffer b) { return buffers_.at(static_cast<std::size_t>(b - 1)).data(); }

 private:
  std::vector<std::vector<unsigned char>> buffers_;
  std::chrono::steady_clock::time_point t0_;
};

// Makes a fresh device for one run (buffers are freed with it).
using CudaDeviceFactory = std::function<std::unique_ptr<CudaDevice>()>;

// Runs `text` (generated from `plan`) on devices from `make`, with the checks above.
TensorMap run_cuda_program(const ProgramPlan& plan, const CudaProgramText& text, const CudaDeviceFactory& make,
                           const TensorMap& inputs, const std::string& source_name, RunStats& stats);

}  // namespace fp
