// The run of generated CUDA (exec/cuda_run.h) against a scripted device: a cell no kernel wrote is
// an internal error (exit 70) naming the cell, for float outputs (one run, a NaN pattern) and for
// i32 outputs (two runs, two patterns); a kernel that writes the pattern itself is not blamed.

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "core/text_parser.h"
#include "exec/cuda_codegen.h"
#include "exec/cuda_run.h"
#include "exec/program_plan.h"

namespace fp {
namespace {

// Host memory whose only kernel is `kernel` (called with the argument buffers and the run's index).
class ScriptedDevice final : public HostMemoryDevice {
 public:
  using Kernel = std::function<void(const std::vector<unsigned char*>&, int run)>;
  ScriptedDevice(Kernel k, int run) : kernel_(std::move(k)), run_(run) {}
  void launch(const CudaLaunch&, const CudaGeometry&, const std::vector<Buffer>& args, const std::string&) override {
    std::vector<unsigned char*> ptrs;
    for (Buffer b : args) ptrs.push_back(at(b));
    kernel_(ptrs, run_);
  }

 private:
  Kernel kernel_;
  int run_;
};

constexpr const char* kCopy = R"(routine copy {
  node a : PREC[4] materialized input
  node o : PREC[4] materialized output
  for i in 0..3 {
    o[i] = a[i]
  }
}
)";

struct Fixture {
  ProgramPlan plan;
  CudaProgramText text;
  TensorMap inputs;
  int runs = 0;
};

Fixture copy_program(const std::string& prec) {
  std::string src = kCopy;
  for (std::size_t at; (at = src.find("PREC")) != std::string::npos;) src.replace(at, 4, prec);
  Fixture f;
  f.plan = make_plan(parse_routine(src, "copy.fp"), PlacementConfig{});
  f.text = generate_cuda(f.plan);
  const Prec p = prec == "i32" ? Prec::I32 : Prec::F32;
  f.inputs.emplace("a", Tensor{p, {4}, {1, 2, 3, 4}});
  return f;
}

// Runs the copy with a kernel that copies the cells in `written` (its argument order: a, o).
TensorMap run_copy(Fixture& f, std::vector<int> written, std::uint32_t forced = 0, int forced_cell = -1) {
  RunStats stats;
  auto make = [&] {
    const int run = f.runs++;
    return std::make_unique<ScriptedDevice>(
        [written, forced, forced_cell](const std::vector<unsigned char*>& args, int) {
          for (int c : written) std::memcpy(args[1] + 4 * c, args[0] + 4 * c, 4);
          if (forced_cell >= 0) std::memcpy(args[1] + 4 * forced_cell, &forced, 4);
        },
        run);
  };
  return run_cuda_program(f.plan, f.text, make, f.inputs, "copy.fp", stats);
}

TEST(CudaRun, TheCopyKernelTakesAThenO) {
  Fixture f = copy_program("f32");
  ASSERT_EQ(f.text.launches.size(), 1u);
  ASSERT_EQ(f.text.launches[0].params.size(), 2u);
  EXPECT_EQ(f.plan.placed.nodes[static_cast<std::size_t>(f.text.launches[0].params[0])].name, "a");
  EXPECT_EQ(f.plan.placed.nodes[static_cast<std::size_t>(f.text.launches[0].params[1])].name, "o");
}

TEST(CudaRun, AFloatOutputRunsOnceAndEveryCellWrittenPasses) {
  Fixture f = copy_program("f32");
  TensorMap out = run_copy(f, {0, 1, 2, 3});
  EXPECT_EQ(f.runs, 1);
  EXPECT_EQ(out.at("o").data.at(3), 4.0);
}

TEST(CudaRun, AFloatCellNoKernelWroteIsAnInternalError) {
  Fixture f = copy_program("f32");
  EXPECT_EXIT(run_copy(f, {0, 1, 3}), ::testing::ExitedWithCode(70), "cell \\[2\\] of output 'o' was never written");
}

TEST(CudaRun, AnI32OutputRunsTwiceAndEveryCellWrittenPasses) {
  Fixture f = copy_program("i32");
  TensorMap out = run_copy(f, {0, 1, 2, 3});
  EXPECT_EQ(f.runs, 2);
  EXPECT_EQ(out.at("o").data.at(2), 3.0);
}

TEST(CudaRun, AnI32CellNoKernelWroteIsAnInternalError) {
  Fixture f = copy_program("i32");
  EXPECT_EXIT(run_copy(f, {0, 2, 3}), ::testing::ExitedWithCode(70), "cell \\[1\\] of output 'o' was never written");
}

// A kernel that stores the first pattern itself stores it in both runs: not blamed.
TEST(CudaRun, AnI32CellHoldingThePatternInBothRunsWasWritten) {
  Fixture f = copy_program("i32");
  TensorMap out = run_copy(f, {0, 1, 2}, 0x7FF47FF4u, 3);
  EXPECT_EQ(out.at("o").data.at(3), 2146729972.0);
}

// Regression (found by the CUDA emulator's random routines): an output no statement touches has no
// first writer; the run read past the statement list to ask whether it overwrites every cell.
TEST(CudaRun, AnOutputNoStatementTouchesStartsAtZero) {
  ProgramPlan plan = make_plan(parse_routine("routine e {\n  node o : f32[2, 3] materialized output\n}\n", "e.fp"),
                               PlacementConfig{});
  EXPECT_FALSE(plan.overwritten_first(0));
  const CudaProgramText text = generate_cuda(plan);
  EXPECT_TRUE(text.launches.empty());
  RunStats stats;
  TensorMap out = run_cuda_program(
      plan, text, [] { return std::make_unique<ScriptedDevice>([](const std::vector<unsigned char*>&, int) {}, 0); },
      {}, "e.fp", stats);
  EXPECT_EQ(out.at("o").data, std::vector<double>(6, 0.0));
}

}  // namespace
}  // namespace fp
