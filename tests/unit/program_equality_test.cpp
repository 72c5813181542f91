// Equality up to commutation (verify/program_equality.h, verify/symbolic/commuted_equality.h):
// IEEE + and · commute exactly, so a pair that only reorders their operands is exact without the
// solver — as whole programs, or cell by cell after symbolic execution — while reordering the
// operands of anything else (-, /, max, where) is never taken for equal.

#include <gtest/gtest.h>

#include <string>

#include "core/text_parser.h"
#include "verify/pair_check.h"
#include "verify/program_equality.h"

namespace fp::verify {
namespace {

Routine program(const std::string& body, const std::string& extra_nodes = "") {
  return parse_routine("routine r {\n"
                       "  node x : f32[4] materialized input\n"
                       "  node y : f32[4] materialized input\n"
                       "  node z : f32[4] materialized input\n"
                       "  node o : f32[4] materialized output\n" +
                           extra_nodes + "  for i in 0..3 {\n" + body + "\n  }\n}\n",
                       "t.fp");
}

TEST(ProgramEquality, CommutedAddMulAndFmaProductAreTheSameProgram) {
  const Routine a = program("    o[i] = add.f32(mul.f32(x[i], y[i]), fma.f32(x[i], z[i], y[i]))");
  const Routine b = program("    o[i] = add.f32(fma.f32(z[i], x[i], y[i]), mul.f32(y[i], x[i]))");
  EXPECT_EQ(program_difference(a, b), "");
}

TEST(ProgramEquality, OtherOperandsAreNotCommuted) {
  const Routine base = program("    o[i] = sub.f32(x[i], div.f32(y[i], max.f32(x[i], z[i])))");
  for (const char* other : {"    o[i] = sub.f32(div.f32(y[i], max.f32(x[i], z[i])), x[i])",
                            "    o[i] = sub.f32(x[i], div.f32(max.f32(x[i], z[i]), y[i]))",
                            "    o[i] = sub.f32(x[i], div.f32(y[i], max.f32(z[i], x[i])))",
                            "    o[i] = fma.f32(x[i], z[i], y[i])"}) {
    SCOPED_TRACE(other);
    EXPECT_NE(program_difference(base, program(other)), "");
  }
  // fma's addend is not one of the commuted operands.
  EXPECT_NE(program_difference(program("    o[i] = fma.f32(x[i], y[i], z[i])"),
                               program("    o[i] = fma.f32(x[i], z[i], y[i])")),
            "");
}

TEST(ProgramEquality, APairThatOnlyCommutesIsExactWithoutTheSolver) {
  const Routine a = program("    o[i] = add.f32(mul.f32(x[i], y[i]), z[i])");
  const Routine b = program("    o[i] = add.f32(z[i], mul.f32(y[i], x[i]))");
  const PairCheck pc = check_pair(a, b, {}, PairCheckOptions{});
  EXPECT_EQ(pc.kind, VerdictKind::Exact) << pc.message;
  EXPECT_NE(pc.message.find("commutes exactly"), std::string::npos) << pc.message;
}

// Through a temporary the programs differ, and the terms after symbolic execution differ only in
// operand order: proved cell by cell, still without the solver.
TEST(ProgramEquality, TermsThatOnlyCommuteAreProvedCellByCell) {
  const Routine a = program("    o[i] = add.f32(x[i], mul.f32(y[i], z[i]))");
  const Routine b = program("    t[i] = mul.f32(z[i], y[i])\n    o[i] = add.f32(t[i], x[i])",
                            "  node t : f32[4] materialized\n");
  ASSERT_NE(program_difference(a, b), "");
  const PairCheck pc = check_pair(a, b, {}, PairCheckOptions{});
  EXPECT_EQ(pc.kind, VerdictKind::Exact) << pc.message;
  bool commuted = false;
  for (const auto& s : pc.steps) commuted = commuted || s.find("up to the order of the operands") != std::string::npos;
  EXPECT_TRUE(commuted);
}

TEST(ProgramEquality, ACommutedSubtractionIsRefuted) {
  const Routine a = program("    o[i] = sub.f32(x[i], y[i])");
  const Routine b = program("    t[i] = y[i]\n    o[i] = sub.f32(t[i], x[i])", "  node t : f32[4] materialized\n");
  const PairCheck pc = check_pair(a, b, {}, PairCheckOptions{});
  EXPECT_EQ(pc.kind, VerdictKind::Refuted) << pc.message;
}

}  // namespace
}  // namespace fp::verify
