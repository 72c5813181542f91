// Unit tests of the reference interpreter (core/interpreter.h) on hand-built routines: loop nests,
// reductions, per-op rounding at f16/bf16, scans (simultaneous rotation, both directions),
// locals, if/where with NaN, embedded indices, i32 rules, input validation and bounds checks.

#include "core/interpreter.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "core/diagnostic.h"
#include "core/interpreter_program.h"
#include "core/numerics.h"

namespace fp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Routine make_routine(std::vector<Node> nodes, std::vector<StmtP> body) {
  Routine r;
  r.name = "test";
  r.nodes = std::move(nodes);
  r.body = seq(std::move(body));
  return r;
}

ExprP bin(BinOp op, ExprP a, ExprP b, Prec p) {
  return binary(op, std::move(a), std::move(b), p);
}
ExprP c(double v, Prec p) {
  return constant(v, p);
}

Tensor tensor(Prec p, std::vector<std::int64_t> dims, std::vector<double> data) {
  Tensor t;
  t.prec = p;
  t.dims = std::move(dims);
  t.data = std::move(data);
  return t;
}

// Values representable at p, deterministic and varied.
std::vector<double> values(Prec p, int n, double scale = 1.0, int seed = 1) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = round_to(p, scale * std::sin(1.3 * i + seed) * (1 + 0.37 * (i % 5)));
  return v;
}

// ---- loop nests ---------------------------------------------------------------------------------

TEST(InterpreterNest, MatmulMatchesStepByStepF32) {
  const int M = 3, K = 5, N = 4;
  const Prec f = Prec::F32;
  Routine r = make_routine(
      {make_node("a", {M, K}, f, true), make_node("b", {K, N}, f, true),
       make_node("c", {M, N}, f, false, true)},
      {zero("c"),
       for_loop(
           "i", 0, M - 1,
           {for_loop("j", 0, N - 1,
                     {for_loop("k", 0, K - 1,
                               {set("c", iters({"i", "j"}),
                                    bin(BinOp::Add, get_iters("c", {"i", "j"}, f),
                                        bin(BinOp::Mul, get_iters("a", {"i", "k"}, f), get_iters("b", {"k", "j"}, f), f),
                                        f))})})})});
  const auto a = values(f, M * K, 3.0, 1), b = values(f, K * N, 2.0, 2);
  TensorMap out = interpret(r, {{"a", tensor(f, {M, K}, a)}, {"b", tensor(f, {K, N}, b)}});
  ASSERT_EQ(out.size(), 1u);
  const Tensor& cm = out.at("c");
  EXPECT_EQ(cm.prec, f);
  EXPECT_EQ(cm.dims, (std::vector<std::int64_t>{M, N}));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0;  // float arithmetic is exactly the f32 semantics (no contraction here)
      for (int k = 0; k < K; ++k) {
        const float prod = static_cast<float>(a[i * K + k]) * static_cast<float>(b[k * N + j]);
        acc = acc + prod;
      }
      EXPECT_EQ(cm.data[static_cast<std::size_t>(i * N + j)], static_cast<double>(acc)) << i << "," << j;
    }
}

TEST(InterpreterNest, ReductionAfterZeroStartsFromZero) {
  const Prec f = Prec::F64;
  // s is first filled with garbage, then zeroed, then accumulated into.
  Routine r = make_routine(
      {make_node("x", {2, 3}, f, true), make_node("s", {2}, f, false, true)},
      {for_loop("i", 0, 1, {set("s", iters({"i"}), c(99.0, f))}), zero("s"),
       for_loop("i", 0, 1,
                {for_loop("k", 0, 2,
                          {set("s", iters({"i"}),
                               bin(BinOp::Add, get_iters("s", {"i"}, f), get_iters("x", {"i", "k"}, f), f))})})});
  TensorMap out = interpret(r, {{"x", tensor(f, {2, 3}, {1, 2, 3, 10, 20, 30})}});
  EXPECT_EQ(out.at("s").data, (std::vector<double>{6, 60}));
}

TEST(InterpreterNest, MaxReductionIsPoisonedByNaN) {
  const Prec f = Prec::F32;
  Routine r =
      make_routine({make_node("x", {4}, f, true), make_node("m", {1}, f, false, true)},
                   {set("m", {Index::fixed(0)}, c(-kInf, f)),
                    for_loop("k", 0, 3,
                             {set("m", {Index::fixed(0)},
                                  bin(BinOp::Max, get("m", {Index::fixed(0)}, f), get_iters("x", {"k"}, f), f))})});
  EXPECT_EQ(interpret(r, {{"x", tensor(f, {4}, {1, 5, -2, 3})}}).at("m").data[0], 5.0);
  EXPECT_TRUE(std::isnan(interpret(r, {{"x", tensor(f, {4}, {1, kNaN, 7, 3})}}).at("m").data[0]));
}

TEST(InterpreterNest, PointwiseChainRoundsEveryOp) {
  const Prec f = Prec::F32;
  // y = exp(x - 1) * 3 / (x*x + 1), each op rounded to f32.
  auto x = get_iters("x", {"i"}, f);
  auto e = bin(BinOp::Div, bin(BinOp::Mul, unary(UnOp::Exp, bin(BinOp::Sub, x, c(1, f), f), f), c(3, f), f),
               bin(BinOp::Add, bin(BinOp::Mul, x, x, f), c(1, f), f), f);
  Routine r = make_routine({make_node("x", {6}, f, true), make_node("y", {6}, f, false, true)},
                           {for_loop("i", 0, 5, {set("y", iters({"i"}), e)})});
  const auto xs = values(f, 6, 4.0);
  const auto y = interpret(r, {{"x", tensor(f, {6}, xs)}}).at("y").data;
  for (int i = 0; i < 6; ++i) {
    const double xv = xs[static_cast<std::size_t>(i)];
    const double ex = fp_exp32(static_cast<float>(round_f32(xv - 1)));
    const double want = round_f32(round_f32(ex * 3) / round_f32(round_f32(xv * xv) + 1));
    EXPECT_EQ(y[static_cast<std::size_t>(i)], want) << i;
  }
}

// ---- per-op rounding at narrow precisions ---------------------------------------------------------

void check_narrow_rounding(Prec p) {
  // y = a*b + c at p as two operations; z = fma.p(a, b, c); w = add.p(a, c) with f32 operands.
  auto a = get_iters("a", {"i"}, p), b = get_iters("b", {"i"}, p), cc = get_iters("c", {"i"}, p);
  Routine r =
      make_routine({make_node("a", {8}, p, true), make_node("b", {8}, p, true), make_node("c", {8}, p, true),
                    make_node("w32", {8}, Prec::F32, true), make_node("y", {8}, p, false, true),
                    make_node("z", {8}, p, false, true), make_node("w", {8}, p, false, true)},
                   {for_loop("i", 0, 7,
                             {set("y", iters({"i"}), bin(BinOp::Add, bin(BinOp::Mul, a, b, p), cc, p)),
                              set("z", iters({"i"}), ternary(TernOp::Fma, a, b, cc, p)),
                              set("w", iters({"i"}), bin(BinOp::Add, get_iters("w32", {"i"}, Prec::F32), a, p))})});
  const auto av = values(p, 8, 3.0, 1), bv = values(p, 8, 3.0, 2), cv = values(p, 8, 5.0, 3);
  const auto wv = values(Prec::F32, 8, 1.0, 4);
  TensorMap out = interpret(r, {{"a", tensor(p, {8}, av)},
                                {"b", tensor(p, {8}, bv)},
                                {"c", tensor(p, {8}, cv)},
                                {"w32", tensor(Prec::F32, {8}, wv)}});
  int differs = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    const double prod = round_to(p, av[i] * bv[i]);
    EXPECT_EQ(out.at("y").data[i], round_to(p, prod + cv[i])) << i;
    EXPECT_EQ(out.at("z").data[i],
              round_to(p, static_cast<double>(static_cast<long double>(av[i]) * bv[i] + cv[i])))
        << i;
    // The f32 operand is converted (rounded) to p before the add.
    EXPECT_EQ(out.at("w").data[i], round_to(p, round_to(p, wv[i]) + av[i])) << i;
    if (out.at("y").data[i] != out.at("z").data[i]) ++differs;
  }
  EXPECT_GT(differs, 0) << "the data should make the two roundings of a*b+c observable";
}

TEST(InterpreterRounding, F16PerOpRounding) {
  check_narrow_rounding(Prec::F16);
}
TEST(InterpreterRounding, BF16PerOpRounding) {
  check_narrow_rounding(Prec::BF16);
}

TEST(InterpreterRounding, F16OverflowAndSubnormals) {
  const Prec h = Prec::F16;
  Routine r = make_routine(
      {make_node("x", {3}, h, true), make_node("y", {3}, h, false, true)},
      {for_loop("i", 0, 2,
                {set("y", iters({"i"}), bin(BinOp::Mul, get_iters("x", {"i"}, h), get_iters("x", {"i"}, h), h))})});
  const auto y = interpret(r, {{"x", tensor(h, {3}, {300.0, 0x1p-12, 0x1.8p-12})}}).at("y").data;
  EXPECT_EQ(y[0], kInf);     // 90000 > 65504
  EXPECT_EQ(y[1], 0x1p-24);  // min subnormal, exact
  EXPECT_EQ(y[2], 0x2p-24);  // 2.25·2^-24 rounds to 2·2^-24
}

// ---- scans ----------------------------------------------------------------------------------------

// Two carried values; the second's update reads the first's prev after the first's next is
// written, so a rotation that is not simultaneous (or that updates prev early) gives other results.
Routine two_state_scan(ScanDir dir) {
  const Prec f = Prec::F32;
  auto ap = get_local("ap", f), bp = get_local("bp", f);
  std::vector<Carried> carried = {Carried{"ap", "an", f, c(1.0, f)}, Carried{"bp", "bn", f, c(0.5, f)}};
  return make_routine(
      {make_node("x", {5}, f, true), make_node("outa", {5}, f, false, true),
       make_node("outb", {5}, f, false, true)},
      {scan_loop(
          "t", 0, 4, dir, carried,
          {set_local("an", bin(BinOp::Add, bin(BinOp::Mul, ap, c(2, f), f), get_iters("x", {"t"}, f), f)),
           set_local("bn", bin(BinOp::Sub, bp, bin(BinOp::Mul, ap, get_local("an", f), f), f)),
           set("outa", iters({"t"}), get_local("an", f)), set("outb", iters({"t"}), get_local("bn", f))})});
}

void check_scan(ScanDir dir) {
  const std::vector<double> x = {0.25, -1.5, 3.0, 0.125, -2.0};
  TensorMap out = interpret(two_state_scan(dir), {{"x", tensor(Prec::F32, {5}, x)}});
  float a = 1.0f, b = 0.5f;
  for (int s = 0; s < 5; ++s) {
    const int t = dir == ScanDir::Forward ? s : 4 - s;
    const float an = a * 2 + static_cast<float>(x[static_cast<std::size_t>(t)]);
    const float bn = b - a * an;
    EXPECT_EQ(out.at("outa").data[static_cast<std::size_t>(t)], an) << t;
    EXPECT_EQ(out.at("outb").data[static_cast<std::size_t>(t)], bn) << t;
    a = an;
    b = bn;
  }
}

TEST(InterpreterScan, ForwardRotatesCarriedStateSimultaneously) {
  check_scan(ScanDir::Forward);
}
TEST(InterpreterScan, BackwardRunsFromToDownToFrom) {
  check_scan(ScanDir::Backward);
}

TEST(InterpreterScan, InitIsConvertedToCarriedPrecision) {
  // init 0.1 at f64 converted to an f16 carried value; the body just stores prev.
  const Prec h = Prec::F16;
  Routine r = make_routine(
      {make_node("o", {2}, h, false, true)},
      {scan_loop("t", 0, 1, ScanDir::Forward, {Carried{"p", "n", h, c(0.1, Prec::F64)}},
                 {set_local("n", get_local("p", h)), set("o", iters({"t"}), get_local("p", h))})});
  const auto o = interpret(r, {}).at("o").data;
  EXPECT_EQ(o[0], round_to(h, 0.1));
  EXPECT_EQ(o[1], round_to(h, 0.1));
}

// ---- locals, if, where ---------------------------------------------------------------------------

TEST(InterpreterLocals, DefaultToPositiveZeroAndResetOnEachDeclaration) {
  const Prec f = Prec::F32;
  Routine r = make_routine(
      {make_node("z", {1}, f, false, true), make_node("acc", {3}, f, false, true)},
      {declare_local("u", f), set("z", {Index::fixed(0)}, get_local("u", f)),
       for_loop("i", 0, 2,
                {declare_local("s", f), set_local("s", bin(BinOp::Add, get_local("s", f), c(1, f), f)),
                 set("acc", iters({"i"}), get_local("s", f))})});
  TensorMap out = interpret(r, {});
  EXPECT_TRUE(same_value(out.at("z").data[0], 0.0));
  EXPECT_EQ(out.at("acc").data, (std::vector<double>{1, 1, 1}));
}

TEST(InterpreterLocals, ShadowingInNestedScopes) {
  const Prec f = Prec::F64;
  // local v = 1; { local v = 2; o[0] = v }; o[1] = v
  Routine r = make_routine(
      {make_node("o", {2}, f, false, true)},
      {declare_local("v", f), set_local("v", c(1, f)),
       seq({declare_local("v", f), set_local("v", c(2, f)), set("o", {Index::fixed(0)}, get_local("v", f))}),
       set("o", {Index::fixed(1)}, get_local("v", f))});
  EXPECT_EQ(interpret(r, {}).at("o").data, (std::vector<double>{2, 1}));
}

TEST(InterpreterControl, IfRunsOnNonZeroIncludingNaN) {
  const Prec f = Prec::F32;
  Routine r = make_routine({make_node("x", {1}, f, true), make_node("o", {1}, f, false, true)},
                           {if_(get("x", {Index::fixed(0)}, f), {set("o", {Index::fixed(0)}, c(1, f))})});
  auto run = [&](double x) { return interpret(r, {{"x", tensor(f, {1}, {x})}}).at("o").data[0]; };
  EXPECT_EQ(run(kNaN), 1.0);
  EXPECT_EQ(run(-3.0), 1.0);
  EXPECT_EQ(run(0.0), 0.0);
  EXPECT_EQ(run(-0.0), 0.0);
}

TEST(InterpreterControl, WhereSelectsWithNaNConditionTrue) {
  const Prec f = Prec::F32;
  auto cond = get_iters("cnd", {"i"}, Prec::F64);
  Routine r = make_routine(
      {make_node("cnd", {3}, Prec::F64, true), make_node("o", {3}, f, false, true)},
      {for_loop("i", 0, 2,
                {set("o", iters({"i"}), ternary(TernOp::Where, cond, c(0.1, Prec::F64), c(7, f), f))})});
  const auto o = interpret(r, {{"cnd", tensor(Prec::F64, {3}, {kNaN, 0.0, 1e-300})}}).at("o").data;
  EXPECT_EQ(o[0], round_f32(0.1));  // the f64 operand is converted to f32
  EXPECT_EQ(o[1], 7.0);
  EXPECT_EQ(o[2], round_f32(0.1));  // the condition is not rounded to f32 (1e-300 → 0 would be)
}

TEST(InterpreterControl, DeadLoopRunsZeroTimes) {
  const Prec f = Prec::F32;
  Routine r = make_routine({make_node("o", {1}, f, false, true)},
                           {for_loop("i", 3, 2, {set("o", {Index::fixed(0)}, c(5, f))})});
  EXPECT_EQ(interpret(r, {}).at("o").data[0], 0.0);
}

// ---- indices and integers ---------------------------------------------------------------------------

TEST(InterpreterIndex, EmbedIndexAndAffineAccess) {
  // o[i] = idx.f32(2i + 1) + x[3 - i]; h[i] = idx.f16(2049·i) (rounds to even at f16).
  Routine r = make_routine(
      {make_node("x", {4}, Prec::F32, true), make_node("o", {4}, Prec::F32, false, true),
       make_node("h", {2}, Prec::F16, false, true)},
      {for_loop("i", 0, 3,
                {set("o", iters({"i"}),
                     bin(BinOp::Add, embed_index(Index{{{2, "i"}}, 1}, Prec::F32),
                         get("x", {Index{{{-1, "i"}}, 3}}, Prec::F32), Prec::F32))}),
       for_loop("i", 0, 1, {set("h", iters({"i"}), embed_index(Index{{{2049, "i"}}, 0}, Prec::F16))})});
  TensorMap out = interpret(r, {{"x", tensor(Prec::F32, {4}, {10, 20, 30, 40})}});
  EXPECT_EQ(out.at("o").data, (std::vector<double>{41, 33, 25, 17}));
  EXPECT_EQ(out.at("h").data, (std::vector<double>{0, 2048}));
}

TEST(InterpreterInt, I32OpsWrapDivideAndConvert) {
  const Prec i = Prec::I32;
  auto x = [&](int k) { return get("x", {Index::fixed(k)}, i); };
  auto o = [&](int k, ExprP e) { return set("o", {Index::fixed(k)}, std::move(e)); };
  Routine r = make_routine(
      {make_node("x", {4}, i, true), make_node("f", {1}, Prec::F32, true),
       make_node("o", {8}, i, false, true), make_node("g", {1}, Prec::F32, false, true)},
      {o(0, bin(BinOp::Add, x(0), c(1, i), i)),                             // INT_MAX + 1 wraps
       o(1, bin(BinOp::Div, x(1), c(-1, i), i)),                            // INT_MIN / -1 = INT_MIN
       o(2, bin(BinOp::Div, x(2), c(0, i), i)),                             // x / 0 = 0
       o(3, bin(BinOp::Div, x(3), c(2, i), i)),                             // -7 / 2 = -3
       o(4, unary(UnOp::Cast, get("f", {Index::fixed(0)}, Prec::F32), i)),  // -2.75 → -2
       o(5, bin(BinOp::Mul, x(0), x(0), i)),                                // wraps to 1
       o(6, unary(UnOp::Neg, x(1), i)),                                     // -INT_MIN = INT_MIN
       o(7, bin(BinOp::Lt, x(3), x(2), i)),
       set("g", {Index::fixed(0)}, bin(BinOp::Add, x(0), c(0, Prec::F32), Prec::F32))});  // i32 → f32 rounds
  TensorMap out = interpret(
      r, {{"x", tensor(i, {4}, {2147483647, -2147483648.0, 5, -7})}, {"f", tensor(Prec::F32, {1}, {-2.75})}});
  EXPECT_EQ(out.at("o").data,
            (std::vector<double>{-2147483648.0, -2147483648.0, 0, -3, -2, 1, -2147483648.0, 1}));
  EXPECT_EQ(out.at("g").data[0], 2147483648.0);
}

// ---- input validation -----------------------------------------------------------------------------

Routine one_input(Prec p, std::vector<std::int64_t> dims) {
  return make_routine(
      {make_node("q", std::move(dims), p, true), make_node("o", {1}, p, false, true)},
      {set("o", {Index::fixed(0)},
           get("q", {Index::fixed(0), Index::fixed(0), Index::fixed(0), Index::fixed(0)}, p))});
}

TEST(InterpreterInputs, MissingInputIs66) {
  try {
    interpret(one_input(Prec::F32, {2, 4, 1, 8}), {}, InterpretOptions{"attn.fp"});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMissingInput);
    EXPECT_EQ(e.message(), "missing input 'q' (expected f32[2,4,1,8])");
    EXPECT_EQ(e.file(), "attn.fp");
  }
}

TEST(InterpreterInputs, WrongDimsOrPrecisionIs65) {
  auto code_of = [](const TensorMap& in) {
    try {
      interpret(one_input(Prec::F32, {2, 4, 1, 8}), in);
    } catch (const UserError& e) {
      EXPECT_NE(e.message().find("'q'"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("f32[2,4,1,8]"), std::string::npos) << e.message();
      return static_cast<int>(e.code());
    }
    return 0;
  };
  EXPECT_EQ(code_of({{"q", Tensor::zeros(Prec::F32, {2, 4, 8})}}), kExitMalformed);
  EXPECT_EQ(code_of({{"q", Tensor::zeros(Prec::F16, {2, 4, 1, 8})}}), kExitMalformed);
  Tensor short_data = Tensor::zeros(Prec::F32, {2, 4, 1, 8});
  short_data.data.pop_back();
  EXPECT_EQ(code_of({{"q", short_data}}), kExitMalformed);
  EXPECT_EQ(code_of({{"q", Tensor::zeros(Prec::F32, {2, 4, 1, 8})}}), 0);
}

TEST(InterpreterInputs, NonRepresentableValueIs65) {
  Tensor t = Tensor::zeros(Prec::F32, {2, 4, 1, 8});
  t.data[9] = 0.1;  // not an f32 value
  try {
    interpret(one_input(Prec::F32, {2, 4, 1, 8}), {{"q", t}});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMalformed);
    EXPECT_NE(e.message().find("[0,1,0,1]"), std::string::npos) << e.message();
  }
  Tensor ti = Tensor::zeros(Prec::I32, {1, 1, 1, 1});
  ti.data[0] = 2.5;
  EXPECT_THROW(interpret(one_input(Prec::I32, {1, 1, 1, 1}), {{"q", ti}}), UserError);
  // NaN and inf are legal float data.
  Tensor tn = Tensor::zeros(Prec::F16, {1, 1, 1, 1});
  tn.data[0] = kNaN;
  EXPECT_TRUE(std::isnan(interpret(one_input(Prec::F16, {1, 1, 1, 1}), {{"q", tn}}).at("o").data[0]));
}

// ---- compiled form and bounds ---------------------------------------------------------------------

TEST(InterpreterCompiled, RunsRepeatedlyWithoutLeakingState) {
  CompiledRoutine cr(two_state_scan(ScanDir::Forward));
  const TensorMap in = {{"x", tensor(Prec::F32, {5}, {1, 2, 3, 4, 5})}};
  const TensorMap first = cr.run(in);
  const TensorMap second = cr.run(in);
  EXPECT_EQ(first.at("outb").data, second.at("outb").data);
  EXPECT_GT(cr.program().scalar_ops, 0);
}

// An access the compiler cannot prove in bounds (guarded by an if) runs through the checked path;
// one that really goes out of bounds stops the program instead of touching memory.
Routine guarded_read(std::int64_t guard) {
  const Prec f = Prec::F32;
  return make_routine({make_node("x", {3}, f, true), make_node("o", {5}, f, false, true)},
                      {for_loop("i", 0, 4,
                                {if_(bin(BinOp::Lt, embed_index(Index::iter("i"), Prec::I32),
                                         c(static_cast<double>(guard), Prec::I32), Prec::I32),
                                     {set("o", iters({"i"}), get_iters("x", {"i"}, f))})})});
}

TEST(InterpreterBounds, UnprovenAccessIsCheckedAtRunTime) {
  const TensorMap in = {{"x", tensor(Prec::F32, {3}, {7, 8, 9})}};
  EXPECT_EQ(interpret(guarded_read(3), in).at("o").data, (std::vector<double>{7, 8, 9, 0, 0}));
  // An internal check: reported, exit 70 (not an abort).
  EXPECT_EXIT(interpret(guarded_read(4), in), ::testing::ExitedWithCode(kExitInternal), "out of bounds");
}

}  // namespace
}  // namespace fp
