#pragma once
// One interface for every way flashproof runs a routine: the reference interpreter (core/), the
// compiled C executor (C code generation, the system compiler, dlopen) and the CUDA executor (CUDA
// C++ generation, NVRTC or nvcc, the driver API). Each implements core/ir.h's SEMANTICS; the
// interpreter is the reference and the compiled executors agree with it bitwise (docs/executors.md
// says what is guaranteed and how it is tested).
//
//   auto ex = make_executor("c", opts);          // UserError 64 for an unknown name
//   if (!ex->available()) ... ex->available().reason
//   auto prog = ex->compile(routine);            // routine must pass the checker
//   TensorMap out = prog->run(inputs);           // validates inputs exactly as interpret() does
//
// Errors: input validation throws the same UserErrors as interpret() (66 naming a missing input,
// 65 naming the input and its expected type). compile() on an unavailable executor throws
// UserError 69 (kExitUnavailable) with the reason. A failure of the machinery underneath (a CUDA
// call, an allocation, a compiler the user configured) throws ExecError; a bug in flashproof
// (generated code that does not compile with the default flags, an output cell a kernel never
// wrote) is an internal error.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"
#include "core/placement.h"

namespace fp {

// Whether an executor can run here, and if not, why (one line).
struct Availability {
  bool ok = true;
  std::string reason;

  static Availability yes() { return {true, ""}; }
  static Availability unavailable(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

// The environment an executor depends on failed (a CUDA call, an allocation, a user-configured
// compiler). Tools report it with exit code 70 and the message.
class ExecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExecOptions {
  // Where the routine came from, for messages ("attn.fp").
  std::string source_name;
  // Compiled executors place intermediates with core/placement.h (config key
  // virtualize_max_inline_reduction); the buffers they allocate are exactly the placed routine's.
  PlacementConfig placement;
  // C: worker threads for parallel loops; 0 = $FLASHPROOF_THREADS, else the hardware concurrency.
  int threads = 0;
  // C: compiler and flags; empty = $FLASHPROOF_CC / $FLASHPROOF_CFLAGS, else "cc" and
  // default_c_flags() (exec/jit.h).
  std::string cc;
  std::string cflags;
  // JIT object cache; empty = $FLASHPROOF_JIT_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/flashproof/jit.
  std::string cache_dir;
  bool use_cache = true;
};

// What one run did, for reports and benchmarks.
struct RunStats {
  // Bytes of node buffers live at once at most during the run, counted the way the memory report
  // counts them (inputs from the first statement to their last access, every other buffer from its
  // allocation to its release; a row-private tile at its stack slices' bytes times the worker
  // threads while its statement runs, so never above the report's peak). The C executor measures
  // it from its real allocations; the CUDA executor (and its emulation) holds every buffer for the
  // whole run and reports their sum; -1 when the executor does not measure.
  std::int64_t peak_bytes = -1;
  // Seconds inside the compiled code (C: the entry function; CUDA: first launch to last kernel's
  // end); -1 when not measured.
  double compute_seconds = -1;
};

// A routine compiled by one executor; run() may be called many times.
class CompiledProgram {
 public:
  virtual ~CompiledProgram() = default;
  // One tensor per output node. Input validation is interpret()'s (docs/semantics.md §9).
  virtual TensorMap run(const TensorMap& inputs) = 0;
  virtual RunStats last_stats() const { return {}; }
  // The generated source (C or CUDA C++), empty for the interpreter.
  virtual std::string source() const { return {}; }
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  virtual Availability available() const = 0;
  // `r` must pass the well-formedness checker.
  virtual std::unique_ptr<CompiledProgram> compile(const Routine& r) = 0;
};

// The individual executors (exec/*_executor.cpp).
std::unique_ptr<Executor> make_interp_executor(const ExecOptions& opts);
std::unique_ptr<Executor> make_c_executor(const ExecOptions& opts);
std::unique_ptr<Executor> make_cuda_executor(const ExecOptions& opts);

// One registered executor. The registry is the only list of executors: make_executor, the
// command line's --executor choices and its help texts all read it, so a new executor is one
// entry here.
struct ExecutorEntry {
  const char* name;         // "interp", "c", "cuda"
  const char* description;  // a few words for help texts: "the reference interpreter"
  std::unique_ptr<Executor> (*make)(const ExecOptions& opts);
};
// In the order help texts list them (the reference first). Every entry is present whether or not
// it can run here (available() says that).
const std::vector<ExecutorEntry>& executor_registry();

// The registered executors' names: "interp", "c", "cuda".
std::vector<std::string> executor_names();
// Throws UserError(kExitUsage) naming an unknown executor and the known ones.
std::unique_ptr<Executor> make_executor(const std::string& name, const ExecOptions& opts = {});

// Throws UserError 69 "executor 'cuda' is unavailable: <reason>" unless `ex` is available: the
// command line was right, the machine lacks what it asks for (every subcommand exits 69 for it).
void require_available(const Executor& ex);

}  // namespace fp
