// The executor registry and the interpreter executor (the reference, wrapped in the interface).

#include "exec/executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/diagnostic.h"
#include "core/interpreter_program.h"
#include "exec/cuda_emulator.h"

namespace fp {

namespace {

class InterpProgram final : public CompiledProgram {
 public:
  InterpProgram(const Routine& r, std::string source) : compiled_(r), source_(std::move(source)) {}
  TensorMap run(const TensorMap& inputs) override { return compiled_.run(inputs, InterpretOptions{source_}); }

 private:
  CompiledRoutine compiled_;
  std::string source_;
};

class InterpExecutor final : public Executor {
 public:
  explicit InterpExecutor(ExecOptions opts) : opts_(std::move(opts)) {}
  std::string name() const override { return "interp"; }
  Availability available() const override { return Availability::yes(); }
  std::unique_ptr<CompiledProgram> compile(const Routine& r) override {
    return std::make_unique<InterpProgram>(r, opts_.source_name);
  }

 private:
  ExecOptions opts_;
};

}  // namespace

std::unique_ptr<Executor> make_interp_executor(const ExecOptions& opts) {
  return std::make_unique<InterpExecutor>(opts);
}

const std::vector<ExecutorEntry>& executor_registry() {
  static const std::vector<ExecutorEntry> entries = {
      {"interp", "the reference interpreter", make_interp_executor},
      {"c", "compiled C", make_c_executor},
      {"cuda", "CUDA on the GPU", make_cuda_executor},
      {"cuda-emu", "the CUDA executor's kernels emulated on the CPU, a thread per CUDA thread: slow, for testing",
       make_cuda_emulator},
  };
  return entries;
}

std::vector<std::string> executor_names() {
  std::vector<std::string> names;
  for (const ExecutorEntry& e : executor_registry()) names.push_back(e.name);
  return names;
}

std::unique_ptr<Executor> make_executor(const std::string& name, const ExecOptions& opts) {
  for (const ExecutorEntry& e : executor_registry())
    if (name == e.name) return e.make(opts);
  throw UserError(kExitUsage, "", 0, 0,
                  fmt::format("unknown executor '{}' (known: {})", name, fmt::join(executor_names(), ", ")));
}

void require_available(const Executor& ex) {
  Availability a = ex.available();
  if (!a.ok)
    throw UserError(kExitUnavailable, "", 0, 0,
                    fmt::format("executor '{}' is unavailable: {}", ex.name(), a.reason));
}

}  // namespace fp
