// The executor registry and the interpreter executor (the reference, wrapped in the interface).

#include "exec/executor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/diagnostic.h"
#include "core/interpreter_program.h"

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

std::vector<std::string> executor_names() {
  return {"interp", "c", "cuda"};
}

std::unique_ptr<Executor> make_executor(const std::string& name, const ExecOptions& opts) {
  if (name == "interp") return make_interp_executor(opts);
  if (name == "c") return make_c_executor(opts);
  if (name == "cuda") return make_cuda_executor(opts);
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
