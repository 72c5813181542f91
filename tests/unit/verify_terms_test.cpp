// Hash-consed terms and symbolic execution: structural sharing, the store's identities, and the
// symbolic execution of random well-formed routines (every statement and op at every precision)
// evaluating to exactly what the interpreter computes.

#include <gtest/gtest.h>

#include <cmath>

#include "core/checker.h"
#include "core/interpreter.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "fuzz/random_routine.h"
#include "verify/compare.h"
#include "verify/symbolic/symexec.h"
#include "verify/symbolic/term.h"

namespace fp::verify {
namespace {

TEST(VerifyTerms, StructurallyEqualTermsAreTheSamePointer) {
  TermStore s;
  TermP x = s.var("x", 0, Prec::F32), y = s.var("x", 1, Prec::F32);
  EXPECT_EQ(x, s.var("x", 0, Prec::F32));
  TermP a = s.binary(BinOp::Add, x, y, Prec::F32);
  EXPECT_EQ(a, s.binary(BinOp::Add, x, y, Prec::F32));
  EXPECT_NE(a, s.binary(BinOp::Add, y, x, Prec::F32));  // no commutativity: that is the solver's job
  EXPECT_NE(s.constant(0.0, Prec::F32), s.constant(-0.0, Prec::F32));
  EXPECT_EQ(s.constant(NAN, Prec::F32), s.constant(-NAN, Prec::F32));
  EXPECT_EQ(s.constant(0.1, Prec::F32)->value, static_cast<double>(0.1f));
  // Operands are converted to the operation's precision.
  TermP h = s.var("h", 0, Prec::F16);
  TermP m = s.binary(BinOp::Mul, h, x, Prec::F32);
  EXPECT_EQ(m->args[0]->op, TermOp::Cvt);
  EXPECT_EQ(m->args[1], x);
}

TEST(VerifyTerms, ConstantFoldingUsesTheSemantics) {
  TermStore s;
  EXPECT_EQ(s.binary(BinOp::Max, s.constant(-0.0, Prec::F32), s.constant(0.0, Prec::F32), Prec::F32)->value,
            0.0);
  EXPECT_FALSE(std::signbit(
      s.binary(BinOp::Max, s.constant(-0.0, Prec::F32), s.constant(0.0, Prec::F32), Prec::F32)->value));
  EXPECT_TRUE(std::isnan(
      s.binary(BinOp::Max, s.constant(NAN, Prec::F32), s.constant(1, Prec::F32), Prec::F32)->value));
  EXPECT_EQ(s.unary(UnOp::Exp, s.constant(0.0, Prec::F16), Prec::F16)->value, 1.0);
  EXPECT_EQ(s.binary(BinOp::Add, s.constant(65504, Prec::F16), s.constant(32, Prec::F16), Prec::F16)->value,
            INFINITY);
}

TEST(VerifyTerms, NarrowingOfExactWideningsAndTheirMaxima) {
  TermStore s;
  TermP a = s.var("x", 0, Prec::F16), b = s.var("x", 1, Prec::F16);
  EXPECT_EQ(s.convert(s.convert(a, Prec::F32), Prec::F16), a);
  TermP wide = s.binary(
      BinOp::Max, s.binary(BinOp::Max, s.constant(-INFINITY, Prec::F32), s.convert(a, Prec::F32), Prec::F32),
      s.convert(b, Prec::F32), Prec::F32);
  TermP narrow = s.binary(BinOp::Max, s.binary(BinOp::Max, s.constant(-INFINITY, Prec::F16), a, Prec::F16), b,
                          Prec::F16);
  EXPECT_EQ(s.convert(wide, Prec::F16), narrow);
  // A sum is not narrowable: its f32 value need not be an f16 value.
  TermP sum = s.binary(BinOp::Add, s.convert(a, Prec::F32), s.convert(b, Prec::F32), Prec::F32);
  EXPECT_EQ(s.convert(sum, Prec::F16)->op, TermOp::Cvt);
  // Nor is a constant that f16 cannot hold.
  TermP c = s.binary(BinOp::Max, s.convert(a, Prec::F32), s.constant(0.1, Prec::F32), Prec::F32);
  EXPECT_EQ(s.convert(c, Prec::F16)->op, TermOp::Cvt);
}

TEST(VerifyTerms, TermBudgetIsAResourceLimit) {
  TermStore s(10);
  TermP x = s.var("x", 0, Prec::F32);
  EXPECT_THROW(
      {
        for (int i = 0; i < 20; ++i) x = s.binary(BinOp::Add, x, x, Prec::F32);
      },
      TermLimitExceeded);
}

// Special values in a tenth of the cells.
TensorMap spiky_inputs(const Routine& r, std::uint64_t seed) {
  TensorMap in = random_inputs(r, seed);
  SplitMix64 rng(seed);
  const double sp[] = {INFINITY, -INFINITY, NAN, 0.0, -0.0, 65504.0, 1e-40, 3.0};
  for (auto& [name, t] : in)
    for (auto& v : t.data)
      if (rng.unit() < 0.1)
        v = round_to(t.prec, t.prec == Prec::I32 ? std::round(sp[rng.range(5, 7)]) : sp[rng.range(0, 7)]);
  return in;
}

TEST(VerifyTerms, SymbolicExecutionOfRandomRoutinesMatchesTheInterpreter) {
  int routines = 0, cells = 0;
  for (std::uint64_t seed = 1; seed <= 250; ++seed) {
    Routine r = fp::fuzz::sample_routine(seed);
    if (!check_routine(r).empty()) continue;
    std::vector<std::string> all;
    for (const auto& n : r.nodes) all.push_back(n.name);
    Routine every = with_outputs(r, all, false);
    TermStore store;
    SymMemory mem = symexec(r, store);
    for (std::uint64_t k = 0; k < 2; ++k) {
      TensorMap in = k == 0 ? random_inputs(r, seed) : spiky_inputs(r, seed);
      TensorMap out = interpret(every, in);
      TermEvaluator ev(store, in);
      for (const auto& [node, t] : out)
        for (std::int64_t i = 0; i < t.size(); ++i) {
          double want = t.data[static_cast<std::size_t>(i)];
          double got = ev.eval(mem.at(node)[static_cast<std::size_t>(i)]);
          ASSERT_TRUE(same_value(want, got))
              << "seed " << seed << " " << node << "[" << i << "]: interpreter " << want << ", terms " << got;
          ++cells;
        }
    }
    ++routines;
  }
  EXPECT_GT(routines, 150);
  std::printf("[ symexec ] %d routines, %d cells compared\n", routines, cells);
}

}  // namespace
}  // namespace fp::verify
