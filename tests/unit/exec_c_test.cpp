// The compiled C executor against the interpreter, bitwise: composed attention (forward and
// training step) at f64, f32, f16 and bf16 across masks, shapes and fills (fully masked rows, NaN
// fills), the same programs after the online-softmax rewrite (a different program, same
// semantics: the strongest test of the code generator), every operation at every precision on
// special values, scans (forward, backward, simultaneous rotation), shadowed locals, every
// golden lit routine before and after the tier, and a batch of random well-formed routines. Also: the
// measured peak equals the memory report, and the JIT cache hits on a second compile.
//
// JIT cost: each test compiles its routines into ONE shared object (compile_c_batch), with the
// default -O3 flags (the optimizer is part of what is tested). The objects land in a per-user
// cache (/tmp/flashproof-test-jit-<uid>), so a rerun is fast.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/memory_report.h"
#include "core/numerics.h"
#include "core/placement.h"
#include "core/random_inputs.h"
#include "core/text_parser.h"
#include "exec/c_codegen.h"
#include "exec/c_executor.h"
#include "exec/executor.h"
#include "exec/program_plan.h"
#include "frontend/attention.h"
#include "fuzz/random_routine.h"
#include "jit_test_options.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"
#include "tensor_expect.h"

namespace fp {
namespace {

ExecOptions test_options() {
  ExecOptions o = testing::jit_test_options();
  return o;
}

using testing::bitwise_equal;

RewriteResult rewrite_on(const Routine& r) {
  Config c;
  c.set("online_softmax", "true");
  return run_tier(r, c);
}

// Compiles all routines in one object and compares each with the interpreter on seeded inputs.
void expect_bitwise(const std::vector<Routine>& routines, const std::vector<std::string>& names,
                    std::uint64_t seed = 11) {
  auto progs = compile_c_batch(routines, test_options());
  ASSERT_EQ(progs.size(), routines.size());
  for (std::size_t i = 0; i < routines.size(); ++i) {
    SCOPED_TRACE(names[i]);
    TensorMap in = random_inputs(routines[i], seed + i);
    TensorMap want = interpret(routines[i], in);
    TensorMap got = progs[i]->run(in);
    EXPECT_TRUE(bitwise_equal(want, got));
  }
}

AttentionSpec spec(Prec p, const std::string& mask, std::int64_t sq, std::int64_t sk, bool train = false,
                   const std::string& fill = "-inf") {
  AttentionSpec s;
  s.batch = 2;
  s.heads = 2;
  s.sq = sq;
  s.sk = sk;
  s.d = 5;
  s.e = 3;
  s.mask = mask;
  s.mask_fill = fill;
  s.precision = p;
  s.train = train;
  return s;
}

Routine parse_checked(const std::string& text) {
  Routine r = parse_routine(text, "test.fp");
  check_routine_or_throw(r, "test.fp");
  return r;
}

TEST(ExecC, ComposedAndRewrittenAttentionForwardBitwiseAcrossPrecisionsMasksAndFills) {
  std::vector<Routine> rs;
  std::vector<std::string> names;
  struct Case {
    std::string mask, fill;
    std::int64_t sq, sk;
  };
  // causal with sq > sk leaves the first rows without a visible key: NaN under -inf.
  const std::vector<Case> cases = {{"none", "-inf", 3, 4},
                                   {"causal", "-inf", 5, 3},
                                   {"padding:2", "nan", 3, 5},
                                   {"prefix:1", "-1e4", 4, 4}};
  for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16})
    for (std::size_t c = 0; c < cases.size(); ++c) {
      if ((p == Prec::F16 || p == Prec::BF16) && c == 3) continue;
      Routine composed =
          build_attention(spec(p, cases[c].mask, cases[c].sq, cases[c].sk, false, cases[c].fill));
      std::string name = std::string(prec_name(p)) + " " + cases[c].mask + " fill " + cases[c].fill;
      rs.push_back(composed);
      names.push_back(name + " composed");
      rs.push_back(rewrite_on(composed).routine);
      names.push_back(name + " rewritten");
    }
  expect_bitwise(rs, names);
}

TEST(ExecC, ComposedAndRewrittenTrainingStepBitwise) {
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (Prec p : {Prec::F32, Prec::F64, Prec::BF16}) {
    AttentionSpec s = spec(p, p == Prec::F32 ? "causal" : "padding:1", 4, 3, true);
    if (p == Prec::F32) s.dropout = 0.25;
    Routine composed = build_attention(s);
    rs.push_back(composed);
    names.push_back(std::string(prec_name(p)) + " train composed");
    rs.push_back(rewrite_on(composed).routine);
    names.push_back(std::string(prec_name(p)) + " train rewritten");
  }
  expect_bitwise(rs, names);
}

TEST(ExecC, WideHeadsStoreScoresAndStillAgree) {
  // d > 16: the scores are stored (not replayed) and the contraction runs through the reduction
  // schedule (lanes of 16 over the key axis plus a remainder).
  AttentionSpec s = spec(Prec::F32, "causal", 20, 37);
  s.d = 24;
  s.e = 19;
  s.batch = 1;
  Routine composed = build_attention(s);
  expect_bitwise({composed, rewrite_on(composed).routine}, {"composed", "rewritten"});
}

// Every operation at every precision on special operands (read from an input, so nothing folds).
TEST(ExecC, EveryOperationAtEveryPrecisionOnSpecialValues) {
  std::string text = "routine ops {\n";
  const char* precs[] = {"f64", "f32", "f16", "bf16", "i32"};
  for (const char* p : precs) text += fmt::format("  node a_{0} : {0}[16] materialized input\n", p);
  int outputs = 0;
  std::string body;
  for (const char* p : precs) {
    const bool is_int = std::string(p) == "i32";
    std::vector<std::string> un = {"neg", "abs"};
    if (!is_int) un.insert(un.end(), {"exp", "sqrt"});
    std::vector<std::string> bin = {"add", "sub", "mul", "div", "max", "min", "eq", "lt", "pow"};
    for (const char* q : precs) {
      // cast from every precision to every precision
      body += fmt::format("  for i in 0..15 {{ o{0}[i] = cast.{1}(a_{2}[i]) }}\n", outputs, p, q);
      text += fmt::format("  node o{} : {}[16] materialized output\n", outputs++, p);
    }
    for (const auto& op : un) {
      body += fmt::format("  for i in 0..15 {{ o{0}[i] = {1}.{2}(a_{2}[i]) }}\n", outputs, op, p);
      text += fmt::format("  node o{} : {}[16] materialized output\n", outputs++, p);
    }
    for (const auto& op : bin) {
      body += fmt::format(
          "  for i in 0..15 {{ for j in 0..15 {{ o{0}[i, j] = {1}.{2}(a_{2}[i], a_{2}[j]) }} }}\n", outputs,
          op, p);
      text += fmt::format("  node o{} : {}[16, 16] materialized output\n", outputs++, p);
    }
    body += fmt::format(
        "  for i in 0..15 {{ for j in 0..15 {{ o{0}[i, j] = where.{1}(a_{1}[i], a_{1}[j], a_{1}[15 - j]) }} "
        "}}\n",
        outputs, p);
    text += fmt::format("  node o{} : {}[16, 16] materialized output\n", outputs++, p);
    if (!is_int) {
      body += fmt::format(
          "  for i in 0..15 {{ for j in 0..15 {{ for k in 0..15 {{ o{0}[i, j, k] = fma.{1}(a_{1}[i], "
          "a_{1}[j], a_{1}[k]) }} }} }}\n",
          outputs, p);
      text += fmt::format("  node o{} : {}[16, 16, 16] materialized output\n", outputs++, p);
      body += fmt::format("  for i in 0..15 {{ o{0}[i] = idx.{1}(3 * i - 20) }}\n", outputs, p);
      text += fmt::format("  node o{} : {}[16] materialized output\n", outputs++, p);
    }
  }
  text += body + "}\n";
  Routine r = parse_checked(text);
  // Special values per precision: zeros of both signs, infinities, NaN, subnormals, the largest
  // finite values, values that overflow or round at the narrow precisions, exp's boundaries.
  const std::vector<double> specials = {0.0,     -0.0, 1.0,    -1.5,  INFINITY, -INFINITY, NAN,    65504.0,
                                        70000.0, 1e-7, -3e-40, 700.0, -745.5,   1.0 / 3.0, 2049.0, 0x1p-24};
  TensorMap in;
  for (const char* p : precs) {
    const Prec prec = *parse_prec(p);
    Tensor t = Tensor::zeros(prec, {16});
    for (std::size_t i = 0; i < 16; ++i) {
      double v = specials[i];
      if (prec == Prec::I32) v = std::isfinite(v) ? round_to(prec, v * 1e3) : -2147483648.0;
      t.data[i] = round_to(prec, v);
    }
    in[std::string("a_") + p] = t;
  }
  auto progs = compile_c_batch({r}, test_options());
  EXPECT_TRUE(bitwise_equal(interpret(r, in), progs[0]->run(in)));
}

TEST(ExecC, ScansRotateSimultaneouslyBackwardScansAndShadowedLocals) {
  Routine r = parse_checked(R"(routine scans {
  node x : f32[3, 6] materialized input
  node fwd : f32[3, 6] materialized output
  node bwd : f16[3, 6] materialized output
  node sh : f64[3] materialized output
  for i in 0..2 {
    scan t in 0..5 forward carry(a -> a2 : f32 = 1:f32, b -> b2 : f32 = 0:f32) {
      a2 := add.f32(b, x[i, t])
      b2 := mul.f32(a, 2:f32)
      fwd[i, t] = sub.f32(a2, b)
    }
    scan t in 0..5 backward carry(c -> c2 : f16 = 0.1:f16) {
      c2 := fma.f16(c, x[i, t], 0.5:f16)
      bwd[i, t] = c2
    }
    local y : f64
    y := 2:f64
    for j in 0..1 {
      local y : f64
      y := add.f64(y, x[i, j])
      sh[i] = add.f64(sh[i], y)
    }
    sh[i] = add.f64(sh[i], y)
  }
})");
  expect_bitwise({r}, {"scans"});
}

// Regression: a band with per-iteration state runs in lanes, and loads contiguous along an inner
// scalar loop come from panels filled once per chunk. A node the band itself writes must not be
// panelled: here each iteration reads the cell the previous one wrote (y[s, t - 1]).
TEST(ExecC, LaneBandRecurrenceThroughMemoryReadsFreshValues) {
  Routine r = parse_checked(R"(routine recur {
  node x : f32[20, 8] materialized input
  node y : f32[20, 8] materialized output
  for s in 0..19 {
    for t in 1..7 {
      local a : f32
      a := add.f32(y[s, t - 1], x[s, t])
      y[s, t] = mul.f32(a, 1.5:f32)
    }
  }
})");
  expect_bitwise({r}, {"recur"});
}

// Lane bands (exec/c_schedule_lanes.cpp lane_stmt): a store nest accumulating into the lane's own cells
// runs as one simd loop over the lanes with 8 cells per lane in scalars (lane_register_reduction:
// 13 cells, so a block of 8 and a rest of 5, and a single-cell reduction); an update in place with
// the lanes innermost; a guard the same in every lane as one scalar `if` around them — inside a
// scan, with NaN/±inf inputs and every precision: bitwise the interpreter. A nest reading its
// cell at another index stays whole per lane and still agrees.
TEST(ExecC, LaneBandReductionsAndUniformGuardsStayBitwise) {
  auto routine = [](const std::string& p, const std::string& acc_read) {
    return parse_checked(fmt::format(R"(routine lanes {{
  node q : {0}[21, 6] materialized input
  node k : {0}[13, 6] materialized input
  node t : {0}[13, 21] materialized
  node u : {0}[21] materialized
  node y : {0}[13, 21] materialized output
  node z : {0}[21] materialized output
  for s in 0..20 {{
    scan b in 0..2 forward carry(cp -> cn : {0} = 0:{0}) {{
      for j in 0..12 {{
        t[j, s] = 0:{0}
      }}
      for j in 0..12 {{
        for d in 0..5 {{
          t[j, s] = add.{0}(t[j, s], mul.{0}(q[s, d], k[j, d]))
        }}
      }}
      for d in 0..5 {{
        u[s] = add.{0}(u[s], mul.{0}(q[s, d], k[{1}, d]))
      }}
      for j in 0..12 {{
        t[j, s] = mul.{0}(t[j, s], 0.5:{0})
      }}
      if lt.i32(idx.i32(b), 2:i32) {{
        for j in 0..12 {{
          y[j, s] = add.{0}(y[j, s], t[j, s])
        }}
      }}
      cn := add.{0}(cp, u[s])
      z[s] = cn
    }}
  }}
}})",
                                     p, acc_read));
  };
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const std::string p : {"f32", "f64", "f16", "bf16"}) {
    rs.push_back(routine(p, "b"));
    names.push_back(p);
  }
  const std::string c = generate_c(make_plan(rs[0], test_options().placement));
  EXPECT_NE(c.find("if ((((fpc_i32)("), std::string::npos) << "the uniform guard is one scalar if";
  EXPECT_NE(c.find("lane reduction: 8 cells per lane"), std::string::npos) << "13 cells: a block of 8";
  EXPECT_NE(c.find("lane reduction: 5 cells per lane"), std::string::npos) << "and the rest";
  EXPECT_NE(c.find("lane reduction: 1 cell per lane"), std::string::npos) << "u[s] over d";
  expect_bitwise(rs, names);
  auto progs = compile_c_batch({rs[0]}, test_options());
  TensorMap in = random_inputs(rs[0], 9);
  in.at("q").data[7] = NAN;
  in.at("k").data[20] = INFINITY;
  in.at("k").data[33] = -INFINITY;
  EXPECT_TRUE(bitwise_equal(interpret(rs[0], in), progs[0]->run(in)));
}

// Loop fission (exec/c_schedule_fission.cpp fissioned_loop): a lane band's loop over t computing a local
// and accumulating it into a store nest runs the locals for a chunk of t first, then the
// accumulation with the cells in a small array — bitwise the same, at every precision, with
// extents that are not multiples of the chunk or the lane width and NaN/inf inputs. Bodies where
// the phases interact (phase A reads the accumulated node; phase B reads it at another cell) are
// declined, and still agree.
TEST(ExecC, FissionedAccumulationAgreesBitwiseAndDeclinesInteractingPhases) {
  auto routine = [](const std::string& prec, const std::string& a_value, const std::string& b_read) {
    return parse_checked(fmt::format(R"(routine acc {{
  node x : {0}[20, 150] materialized input
  node v : {0}[150, 7] materialized input
  node y : {0}[20, 7] materialized output
  zero y
  for s in 0..19 {{
    for t in 0..149 {{
      local p : {0}
      p := {1}
      for e in 0..6 {{
        y[s, e] = add.{0}({2}, mul.{0}(p, v[t, e]))
      }}
    }}
  }}
}})",
                                     prec, a_value, b_read));
  };
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const std::string prec : {"f32", "f16", "bf16", "f64"}) {
    rs.push_back(routine(prec, fmt::format("exp.{0}(sub.{0}(x[s, t], 0.5:{0}))", prec), "y[s, e]"));
    names.push_back(prec + " fissioned");
  }
  rs.push_back(routine("f32", "add.f32(x[s, t], y[s, 0])", "y[s, e]"));
  names.push_back("phase A reads y");
  rs.push_back(routine("f32", "x[s, t]", "y[s, 6 - e]"));
  names.push_back("phase B reads another cell");
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const std::string c = generate_c(make_plan(rs[i], test_options().placement));
    EXPECT_EQ(std::regex_search(c, std::regex(R"(\bacc[0-9]+\[)")), i < 4) << names[i];  // the cell array
  }
  expect_bitwise(rs, names);
  // Special values reach the accumulation too.
  auto progs = compile_c_batch({rs[0]}, test_options());
  TensorMap in = random_inputs(rs[0], 5);
  in.at("x").data[3] = NAN;
  in.at("x").data[40] = INFINITY;
  in.at("v").data[10] = -INFINITY;
  EXPECT_TRUE(bitwise_equal(interpret(rs[0], in), progs[0]->run(in)));
}

// Paired exponentials (exec/c_schedule_paired_exps.cpp paired_exps): the online-softmax scan's rescale and
// term share one vectorized exp per lane; a store with two exps outside a scan is left alone.
// Both agree bitwise (rows of NaN and -inf scores take the fix-up path).
TEST(ExecC, PairedExponentialsOnlyInScansAndBitwise) {
  const std::regex paired(R"(\bea[0-9]+\[)");
  Routine scan = rewrite_on(build_attention(spec(Prec::F32, "causal", 7, 9, false, "nan"))).routine;
  EXPECT_TRUE(std::regex_search(generate_c(make_plan(scan, test_options().placement)), paired));
  Routine two = parse_checked(R"(routine two {
  node x : f32[20, 3] materialized input
  node y : f32[20] materialized output
  for s in 0..19 {
    local a : f32
    a := add.f32(exp.f32(x[s, 0]), exp.f32(x[s, 1]))
    y[s] = a
  }
})");
  EXPECT_FALSE(std::regex_search(generate_c(make_plan(two, test_options().placement)), paired));
  expect_bitwise({scan, two}, {"scan", "two exps"});
}

// idx.i32 is emitted as a saturated 64-bit integer, not as fpc_to_i32 of a double (the causal
// mask's compare per score): the same cell for every index, including ones far outside i32 (they
// saturate, docs/semantics.md §3) and ones beyond 2^53 (rounded to double by the interpreter), in
// plain nests and in lane bands.
TEST(ExecC, IndexToI32IsAnIntegerSaturationEqualToTheInterpreters) {
  Routine r = parse_checked(R"(routine index_to_i32 {
  node x : f32[6, 5] materialized input
  node y : i32[6, 5] materialized output
  node z : f32[6, 5] materialized output
  node u : f32[6, 5] materialized output
  node w : f32[6, 5] materialized output
  for s in 0..5 {
    for t in 0..4 {
      y[s, t] = add.i32(idx.i32(1000000000*s - 2500000000 + t), idx.i32(1152921504606846976*t - 3*s - 1))
      z[s, t] = where.f32(lt.i32(idx.i32(t), idx.i32(s - 1)), x[s, t], -inf:f32)
      u[s, t] = where.f32(lt.i32(idx.i32(1000000000*s - 2500000000 + t), idx.i32(t - 4)), x[s, t], 2:f32)
      w[s, t] = where.f32(eq.i32(idx.i32(t + 1), idx.i32(s)), x[s, t], 3:f32)
    }
  }
})");
  const std::string c = generate_c(make_plan(r, test_options().placement));
  EXPECT_EQ(c.find("fpc_to_i32((double)"), std::string::npos);
  const std::string causal =
      generate_c(make_plan(build_attention(spec(Prec::F32, "causal", 9, 9)), test_options().placement));
  EXPECT_EQ(causal.find("fpc_to_i32((double)"), std::string::npos);
  // Indices whose range fits in i32 (the loops' ranges, the nodes' dimensions) are not saturated
  // (Emitter::fits_i32); the huge ones above are.
  EXPECT_EQ(causal.find("2147483647LL"), std::string::npos);
  EXPECT_NE(c.find("2147483647LL"), std::string::npos);
  EXPECT_NE(c.find("((fpc_i32)("), std::string::npos);
  // Two fitting indices compare as 64-bit integers (Emitter::wide_index): no narrowing per lane.
  EXPECT_EQ(causal.find("((fpc_i32)("), std::string::npos);
  expect_bitwise({r}, {"idx.i32"});
}

// Loop-invariant code motion in reduction nests (exec/c_schedule_invariants.cpp hoisted_invariants): a
// replayed virtual operand that does not depend on the lane loop (the training step's
// `where(mask)·scale` gradient chain) is computed once per row block into an array; one that
// depends on the lane loop, or a nest without replays, is left in place. Bitwise either way, at
// every precision, with row and lane extents that are not multiples of the unroll or the lane
// width, and NaN/inf operands.
TEST(ExecC, LaneInvariantReplaysAreHoistedOnlyWhenInvariantAndStayBitwise) {
  auto routine = [](const std::string& prec, const std::string& read) {
    return parse_checked(fmt::format(R"(routine licm {{
  node a : {0}[9, 13] materialized input
  node b : {0}[13, 7] materialized input
  node m : {0}[9, 13] materialized
  node y : {0}[9, 7] materialized output
  for s in 0..8 {{
    for t in 0..12 {{
      m[s, t] = mul.{0}(where.{0}(lt.i32(idx.i32(t), idx.i32(s + 1)), a[s, t], 0:{0}), 0.125:{0})
    }}
  }}
  zero y
  for s in 0..8 {{
    for e in 0..6 {{
      for t in 0..12 {{
        y[s, e] = add.{0}(y[s, e], mul.{0}({1}, b[t, e]))
      }}
    }}
  }}
}})",
                                     prec, read));
  };
  const std::regex hoisted(R"(\binv[0-9]+\[)");
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const std::string prec : {"f32", "f64", "f16", "bf16"}) {
    rs.push_back(routine(prec, "m[s, t]"));
    names.push_back(prec + " invariant");
  }
  rs.push_back(routine("f32", "m[e, t]"));
  names.push_back("depends on the lane loop");
  rs.push_back(routine("f32", "a[s, t]"));
  names.push_back("no replay");
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const std::string c = generate_c(make_plan(rs[i], test_options().placement));
    EXPECT_EQ(std::regex_search(c, hoisted), i < 4) << names[i];
  }
  const std::string train = generate_c(
      make_plan(build_attention(spec(Prec::F32, "causal", 11, 11, true)), test_options().placement));
  EXPECT_TRUE(std::regex_search(train, hoisted));
  expect_bitwise(rs, names);
  auto progs = compile_c_batch({rs[0]}, test_options());
  TensorMap in = random_inputs(rs[0], 3);
  in.at("a").data[5] = NAN;
  in.at("a").data[20] = INFINITY;
  in.at("b").data[9] = -INFINITY;
  EXPECT_TRUE(bitwise_equal(interpret(rs[0], in), progs[0]->run(in)));
}

// Register-blocked reduction nests (exec/c_schedule_reduction.cpp lane_groups): at f32 and f64 a lane block
// of 4 vectors × 4 rows of independent cells, chosen from the nest's shape (program_plan.h
// NestShape), never for a nest whose per-cell order a reordering would change — one that reads
// the stored node at another cell, or stores through a skewed index — and never at f16/bf16.
// Bitwise against the interpreter with extents that are multiples of no lane, group or row
// width, operands read transposed (packed) and contiguous, reduced loops outside the target
// loops, a mask, and NaN/±inf operands.
TEST(ExecC, RegisterBlockedContractionsOnlyWhereThePerCellOrderIsKept) {
  auto nest = [](const std::string& prec, const std::string& loops, const std::string& store,
                 const std::string& rhs) {
    return parse_checked(fmt::format(R"(routine blocked {{
  node x : {0}[19, 13] materialized input
  node b : {0}[70, 19] materialized input
  node c : {0}[19, 70] materialized input
  node y : {0}[13, 70] materialized output
  zero y
  {1} {{
    {2} = add.{0}({2}, {3})
  }} }} }}
}})",
                                     prec, loops, store, rhs));
  };
  const std::string natural = "for s in 0..12 { for e in 0..69 { for t in 0..18";
  const std::string reduced_outside = "for t in 0..18 { for s in 0..12 { for e in 0..69";
  struct Case {
    std::string name;
    Routine r;
    bool blocked;
  };
  std::vector<Case> cases;
  for (const std::string prec : {"f32", "f64"}) {
    cases.push_back({prec + " contiguous",
                     nest(prec, natural, "y[s, e]", fmt::format("mul.{0}(x[t, s], c[t, e])", prec)), true});
    cases.push_back({prec + " transposed (packed)",
                     nest(prec, reduced_outside, "y[s, e]", fmt::format("mul.{0}(x[t, s], b[e, t])", prec)),
                     true});
    cases.push_back(
        {prec + " masked",
         nest(prec, natural, "y[s, e]",
              fmt::format("where.{0}(lt.i32(idx.i32(e), idx.i32(s + 40)), mul.{0}(x[t, s], c[t, e]), 0:{0})",
                          prec)),
         true});
  }
  for (const std::string prec : {"f16", "bf16"})
    cases.push_back({prec + " lanes only",
                     nest(prec, natural, "y[s, e]", fmt::format("mul.{0}(x[t, s], c[t, e])", prec)), false});
  cases.push_back({"reads another cell of y",
                   nest("f32", "for s in 0..12 { for e in 1..69 { for t in 0..18", "y[s, e]",
                        "mul.f32(y[s, e - 1], c[t, e])"),
                   false});
  cases.push_back({"skewed store",
                   nest("f32", "for s in 0..12 { for e in 0..50 { for t in 0..18", "y[s, e + t]",
                        "mul.f32(x[t, s], c[t, e])"),
                   false});
  const std::regex blocked(R"(register block: 4 vectors)");
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    const std::string src = generate_c(make_plan(c.r, test_options().placement));
    EXPECT_EQ(std::regex_search(src, blocked), c.blocked) << c.name;
    rs.push_back(c.r);
    names.push_back(c.name);
  }
  expect_bitwise(rs, names);
  auto progs = compile_c_batch({rs[0], rs[1]}, test_options());
  for (std::size_t i = 0; i < 2; ++i) {
    TensorMap in = random_inputs(rs[i], 8);
    in.at("x").data[7] = NAN;
    in.at("c").data[100] = INFINITY;
    in.at("c").data[300] = -INFINITY;
    in.at("b").data[21] = INFINITY;
    for (int t = 0; t < 19; ++t)
      in.at("c").data[static_cast<std::size_t>(t * 70 + 33)] = NAN;  // a NaN column
    EXPECT_TRUE(bitwise_equal(interpret(rs[i], in), progs[i]->run(in))) << names[i];
  }
}

// Row reductions in panels (exec/c_schedule_row_reductions.cpp rows_in_panels): a row max or sum whose operand
// is read along the rows (a direct read, or a virtual one replayed into the panel) runs over
// chunks of the reduced loop from a contiguous copy, several vectors of rows at a time at
// f32/f64; a row reduction whose operand is contiguous across the rows is left alone. Bitwise,
// with row and reduced extents that are multiples of no lane, group or chunk width, at every
// precision, and rows holding NaN and ±inf.
TEST(ExecC, RowReductionsReadRowsFromContiguousPanelsAndStayBitwise) {
  auto routine = [](const std::string& prec, const std::string& op, const std::string& read) {
    return parse_checked(fmt::format(R"(routine rows {{
  node x : {0}[70, 300] materialized input
  node xt : {0}[300, 70] materialized input
  node sc : {0}[70, 300] materialized
  node m : {0}[70] materialized output
  for s in 0..69 {{
    for t in 0..299 {{
      sc[s, t] = mul.{0}(x[s, t], 0.125:{0})
    }}
  }}
  for s in 0..69 {{
    m[s] = -inf:{0}
  }}
  for s in 0..69 {{
    for t in 0..299 {{
      m[s] = {1}.{0}(m[s], {2})
    }}
  }}
}})",
                                     prec, op, read));
  };
  struct Case {
    std::string name;
    Routine r;
    bool panels, blocked;
  };
  std::vector<Case> cases;
  for (const std::string prec : {"f32", "f64", "f16", "bf16"}) {
    const bool wide = prec == "f32" || prec == "f64";
    // A max at f32/f64 is an order-free row reduction instead (OrderFreeRowReductions... below).
    cases.push_back({prec + " max of a replayed operand", routine(prec, "max", "sc[s, t]"), !wide, false});
    cases.push_back({prec + " sum of a direct operand", routine(prec, "add", "x[s, t]"), true, wide});
  }
  cases.push_back({"operand contiguous across rows", routine("f32", "max", "xt[t, s]"), false, false});
  const std::regex panel(R"(\bpanel[0-9]+\[)"), blocked(R"(rows in panels)");
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    const std::string src = generate_c(make_plan(c.r, test_options().placement));
    EXPECT_EQ(std::regex_search(src, panel), c.panels) << c.name;
    EXPECT_EQ(std::regex_search(src, blocked), c.blocked) << c.name;
    rs.push_back(c.r);
    names.push_back(c.name);
  }
  expect_bitwise(rs, names);
  auto progs = compile_c_batch({rs[0], rs[1], rs[4]}, test_options());
  for (std::size_t i = 0; i < 3; ++i) {
    TensorMap in = random_inputs(rs[i == 2 ? 4 : i], 9);
    for (int t = 0; t < 300; ++t)
      in.at("x").data[static_cast<std::size_t>(3 * 300 + t)] = -INFINITY;  // a -inf row
    in.at("x").data[5 * 300 + 299] = NAN;
    in.at("x").data[66 * 300 + 257] = INFINITY;
    in.at("x").data[67 * 300 + 0] = -0.0;
    EXPECT_TRUE(bitwise_equal(interpret(rs[i == 2 ? 4 : i], in), progs[i]->run(in))) << i;
  }
}

// Order-free row reductions (exec/c_schedule_row_reductions.cpp order_free_rows): a row max or min at f32/f64 whose
// operand is contiguous along the reduced loop runs along the row in partial maxima; nothing else
// does — not a sum (its order matters), not a max whose operand reads the cell, not f16/bf16, not an
// operand strided along the reduced loop, not a row shorter than the partials. Bitwise, with extents
// that are multiples of no lane width, on rows of NaN (two of them, of different signs), ±inf, all
// -inf, all -0, and -0 mixed with +0.
TEST(ExecC, OrderFreeRowReductionsOnlyForMaxAndMinAndStayBitwise) {
  auto routine = [](const std::string& prec, std::int64_t n, const std::string& value) {
    return parse_checked(fmt::format(R"(routine rows {{
  node x : {0}[70, {1}] materialized input
  node xt : {0}[{1}, 70] materialized input
  node sc : {0}[70, {1}] materialized
  node m : {0}[70] materialized output
  for s in 0..69 {{
    for t in 0..{2} {{
      sc[s, t] = mul.{0}(x[s, t], 0.125:{0})
    }}
  }}
  for s in 0..69 {{
    m[s] = mul.{0}(xt[0, s], 0.5:{0})
  }}
  for s in 0..69 {{
    for t in 0..{2} {{
      m[s] = {3}
    }}
  }}
}})",
                                     prec, n, n - 1, value));
  };
  struct Case {
    std::string name;
    Routine r;
    bool order_free;
  };
  std::vector<Case> cases;
  for (const std::string p : {"f32", "f64"}) {
    cases.push_back(
        {p + " max of a replayed operand", routine(p, 300, "max." + p + "(m[s], sc[s, t])"), true});
    cases.push_back({p + " min, the cell second", routine(p, 131, "min." + p + "(x[s, t], m[s])"), true});
    cases.push_back({p + " max of a computed operand",
                     routine(p, 77, fmt::format("max.{0}(m[s], sub.{0}(x[s, t], xt[3, s]))", p)), true});
    cases.push_back(
        {p + " max of a causally masked operand",
         routine(p, 300,
                 fmt::format(
                     "max.{0}(m[s], where.{0}(lt.i32(idx.i32(t), idx.i32(s + 1)), x[s, t], -inf:{0}))", p)),
         true});
    cases.push_back({p + " sum", routine(p, 300, "add." + p + "(m[s], x[s, t])"), false});
    cases.push_back({p + " max reading the cell in its operand",
                     routine(p, 300, fmt::format("max.{0}(m[s], sub.{0}(x[s, t], m[s]))", p)), false});
    cases.push_back({p + " max of a max of the cell",
                     routine(p, 300, fmt::format("max.{0}(max.{0}(m[s], x[s, t]), 1:{0})", p)), false});
    cases.push_back({p + " strided along the row", routine(p, 300, "max." + p + "(m[s], xt[t, s])"), false});
    cases.push_back(
        {p + " shorter than the partials", routine(p, 40, "max." + p + "(m[s], x[s, t])"), false});
  }
  cases.push_back({"f16 max", routine("f16", 300, "max.f16(m[s], x[s, t])"), false});
  cases.push_back({"bf16 min", routine("bf16", 300, "min.bf16(m[s], x[s, t])"), false});
  const std::regex order_free(R"(order-free row reduction)");
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    const std::string src = generate_c(make_plan(c.r, test_options().placement));
    EXPECT_EQ(std::regex_search(src, order_free), c.order_free) << c.name;
    rs.push_back(c.r);
    names.push_back(c.name);
  }
  expect_bitwise(rs, names);
  std::vector<Routine> chosen;
  std::vector<std::string> chosen_names;
  for (const Case& c : cases)
    if (c.order_free) {
      chosen.push_back(c.r);
      chosen_names.push_back(c.name);
    }
  auto progs = compile_c_batch(chosen, test_options());
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    TensorMap in = random_inputs(chosen[i], 11);
    Tensor& x = in.at("x");
    const std::size_t n = x.data.size() / 70;
    auto row = [&](std::size_t s) { return x.data.begin() + static_cast<std::ptrdiff_t>(s * n); };
    std::fill(row(3), row(4), -INFINITY);  // all -inf
    std::fill(row(4), row(5), -0.0);       // all -0
    std::fill(row(5), row(6), 0.0);        // -0 and +0 mixed
    for (std::size_t t = 0; t < n; t += 3) row(5)[static_cast<std::ptrdiff_t>(t)] = -0.0;
    row(6)[static_cast<std::ptrdiff_t>(n - 1)] = NAN;  // NaN in the tail
    row(7)[5] = -NAN;                                  // two NaNs of different signs
    row(7)[static_cast<std::ptrdiff_t>(n - 2)] = NAN;
    row(8)[70] = INFINITY;
    row(9)[1] = -INFINITY;
    row(10)[64] = INFINITY;
    row(10)[65] = -INFINITY;
    in.at("xt").data[11] = NAN;   // a NaN initial value (m[11])
    in.at("xt").data[12] = -0.0;  // a -0 initial value
    EXPECT_TRUE(bitwise_equal(interpret(chosen[i], in), progs[i]->run(in))) << chosen_names[i];
  }
}

// Row fusion (exec/c_schedule_row_fusion.cpp row_fusion): a row reduction followed by a pointwise statement
// that reads the reduction's result only at its own row (directly or through a replay) runs that
// statement row by row inside the reduction (after each finished row, or block of rows); not when it
// reads another row, writes what the reduction reads, or a buffer is released in between. Bitwise
// at every precision on extents that are multiples of no width, with NaN, ±inf and -0 rows, and the
// measured peak still the memory report's.
TEST(ExecC, RowFusionOnlyWhereEveryReadIsAtTheFinishedRowAndStaysBitwise) {
  auto routine = [](const std::string& p, const std::string& op, const std::string& operand,
                    const std::string& then) {
    return parse_checked(fmt::format(R"(routine fused {{
  node x : {0}[70, 300] materialized input
  node z : {0}[70, 300] materialized input
  node sc : {0}[70, 300] virtual
  node tmp : {0}[70, 300] materialized
  node m : {0}[70] materialized
  node y : {0}[70, 300] materialized output
  for s in 0..69 {{
    for t in 0..299 {{
      sc[s, t] = mul.{0}(x[s, t], 0.125:{0})
    }}
  }}

  for s in 0..69 {{
    for t in 0..299 {{
      tmp[s, t] = add.{0}(x[s, t], 1:{0})
    }}
  }}
  for s in 0..69 {{
    m[s] = -inf:{0}
  }}
  for s in 0..69 {{
    for t in 0..299 {{
      m[s] = {1}.{0}(m[s], {2})
    }}
  }}
  for s in 0..69 {{
    for t in 0..299 {{
      y[s, t] = {3}
    }}
  }}
  for s in 0..69 {{
    for t in 0..299 {{
      y[s, t] = add.{0}(y[s, t], tmp[s, t])
    }}
  }}
}})",
                                     p, op, operand, then));
  };
  struct Case {
    std::string name;
    Routine r;
    bool fused;
  };
  std::vector<Case> cases;
  for (const std::string p : {"f32", "f64", "f16", "bf16"}) {
    cases.push_back({p + " max then exp of the shifted replay",
                     routine(p, "max", "sc[s, t]", fmt::format("exp.{0}(sub.{0}(sc[s, t], m[s]))", p)),
                     true});
    cases.push_back({p + " sum then divide",
                     routine(p, "add", "x[s, t]", fmt::format("div.{0}(x[s, t], m[s])", p)), true});
  }
  cases.push_back(
      {"reads another row", routine("f32", "max", "sc[s, t]", "sub.f32(x[s, t], m[69 - s])"), false});
  cases.push_back({"reads a row through a transposed index",
                   routine("f32", "add", "x[s, t]", "sub.f32(x[s, t], m[t - t + 3])"), false});
  cases.push_back(
      {"does not read the result", routine("f32", "max", "sc[s, t]", "mul.f32(x[s, t], 2:f32)"), false});
  cases.push_back({"an input released in between (its last read is the reduction's)",
                   routine("f32", "add", "z[s, t]", "mul.f32(m[s], 2:f32)"), false});
  const std::regex fused(R"(fused into its rows)");
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    const std::string src = generate_c(make_plan(c.r, test_options().placement));
    EXPECT_EQ(std::regex_search(src, fused), c.fused) << c.name;
    rs.push_back(c.r);
    names.push_back(c.name);
  }
  expect_bitwise(rs, names);
  ExecOptions o = test_options();
  auto progs = compile_c_batch(rs, o);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    TensorMap in = random_inputs(rs[i], 21);
    std::vector<double>& x = in.at("x").data;
    std::fill(x.begin() + 3 * 300, x.begin() + 4 * 300, -INFINITY);
    std::fill(x.begin() + 4 * 300, x.begin() + 5 * 300, -0.0);
    x[5 * 300 + 299] = NAN;
    x[6 * 300 + 7] = INFINITY;
    x[7 * 300] = -NAN;
    EXPECT_TRUE(bitwise_equal(interpret(rs[i], in), progs[i]->run(in))) << names[i];
    const MemoryReport m = memory_report(place(rs[i], o.placement).routine);
    EXPECT_EQ(progs[i]->last_stats().peak_bytes, m.peak_bytes) << names[i];
  }
}

// A `zero W` folded into the reduction nest that follows it (exec/c_schedule_zero_fold.cpp
// zero_taken_by_next): only when the nest stores every cell of W; the schedules that load each cell
// once start it at +0 (no memset), those that reload cells (rows in panels) run the memset first.
// Bitwise at every precision with NaN and ±inf operands, and a buffer whose old contents (a pooled
// buffer, a second run) would show if a cell were skipped.
TEST(ExecC, ZeroFoldedIntoAFullCoverAccumulationOnlyAndStaysBitwise) {
  auto routine = [](const std::string& p, const std::string& loops, const std::string& store,
                    const std::string& value, const std::string& close) {
    return parse_checked(fmt::format(R"(routine zf {{
  node x : {0}[13, 19] materialized input
  node c : {0}[19, 70] materialized input
  node y : {0}[13, 70] materialized output
  node m : {0}[13] materialized output
  for s in 0..12 {{
    m[s] = 1:{0}
  }}
  zero {1}
  {2}
      {1}[{3}] = {4}
  {5}
}})",
                                     p, store.substr(0, 1), loops, store.substr(2, store.size() - 3), value,
                                     close));
  };
  struct Case {
    std::string name;
    Routine r;
    bool folded, memset;
  };
  std::vector<Case> cases;
  for (const std::string p : {"f32", "f64", "f16", "bf16"}) {
    cases.push_back({p + " contraction",
                     routine(p, "for s in 0..12 { for e in 0..69 { for t in 0..18 {", "y[s, e]",
                             fmt::format("add.{0}(y[s, e], mul.{0}(x[s, t], c[t, e]))", p), "} } }"),
                     true, false});
    cases.push_back({p + " row sum (rows in panels: memset kept)",
                     routine(p, "for s in 0..12 { for t in 0..18 {", "m[s]",
                             fmt::format("add.{0}(m[s], x[s, t])", p), "} }"),
                     true, true});
    cases.push_back({p + " sum of a row-invariant operand",
                     routine(p, "for s in 0..12 { for t in 0..69 {", "m[s]",
                             fmt::format("add.{0}(m[s], c[18, t])", p), "} }"),
                     true, false});
  }
  cases.push_back({"row max",
                   routine("f32", "for s in 0..12 { for t in 0..69 {", "m[s]",
                           "max.f32(m[s], mul.f32(c[3, t], x[s, 0]))", "} }"),
                   true, false});
  cases.push_back({"part of the rows",
                   routine("f32", "for s in 0..10 { for e in 0..69 { for t in 0..18 {", "y[s, e]",
                           "add.f32(y[s, e], mul.f32(x[s, t], c[t, e]))", "} } }"),
                   false, true});
  cases.push_back(
      {"a pointwise store next",
       routine("f32", "for s in 0..12 { for e in 0..69 {", "y[s, e]", "mul.f32(c[3, e], x[s, 0])", "} }"),
       false, true});
  const std::regex folded(R"(start at \+0)"), memset_y(R"(memset\(n_[ym],)");
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    const std::string src = generate_c(make_plan(c.r, test_options().placement));
    EXPECT_EQ(std::regex_search(src, folded), c.folded) << c.name;
    if (c.folded) {
      EXPECT_EQ(std::regex_search(src, memset_y), c.memset) << c.name;
    }
    rs.push_back(c.r);
    names.push_back(c.name);
  }
  auto progs = compile_c_batch(rs, test_options());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    for (std::uint64_t seed : {31u, 32u}) {  // twice: the second run gets its buffers back from the pool
      TensorMap in = random_inputs(rs[i], seed);
      in.at("x").data[5] = NAN;
      in.at("c").data[100] = INFINITY;
      in.at("c").data[3 * 70 + 9] = -INFINITY;
      EXPECT_TRUE(bitwise_equal(interpret(rs[i], in), progs[i]->run(in))) << names[i];
    }
  }
}

// Column panels (exec/c_schedule_invariants.cpp panel_row_blocks): a lane-invariant operand read down a column
// (contiguous along the row loop, a large stride along the reduced loop: the score gradient in the
// key gradient, the probabilities in the value gradient) is copied into panels of 8 row blocks,
// the reduced loop in chunks with each accumulator carried through its cell. Extents that fill no
// panel, chunk or lane block evenly (59 rows: 9 blocks of 6 in panels of 8 and 1, plus 5 rows;
// 701 reduced iterations: full chunks and a tail), replayed chains and plain reads, every
// precision, a deferred zero (the first chunk starts at +0), NaN and ±inf: bitwise against the
// interpreter. A read with the rows' stride instead (h[t, s]) takes no panel.
TEST(ExecC, ColumnPanelsForOperandsReadDownAColumnStayBitwise) {
  auto routine = [](const std::string& p, const std::string& read) {
    return parse_checked(fmt::format(R"(routine panels {{
  node a : {0}[701, 59] materialized input
  node g : {0}[701, 59] materialized input
  node b : {0}[701, 21] materialized input
  node h : {0}[59, 701] materialized input
  node m : {0}[701, 59] materialized
  node y : {0}[59, 21] materialized output
  for s in 0..700 {{
    for t in 0..58 {{
      m[s, t] = mul.{0}(where.{0}(lt.i32(idx.i32(t), idx.i32(s + 1)), mul.{0}(a[s, t], g[s, t]), 0:{0}), 0.125:{0})
    }}
  }}
  zero y
  for t in 0..58 {{
    for e in 0..20 {{
      for s in 0..700 {{
        y[t, e] = add.{0}(y[t, e], mul.{0}({1}, b[s, e]))
      }}
    }}
  }}
}})",
                                     p, read));
  };
  struct Case {
    std::string name;
    Routine r;
    bool panel;
  };
  std::vector<Case> cases;
  for (const std::string p : {"f32", "f64", "f16", "bf16"}) {
    cases.push_back({p + " replayed chain down a column", routine(p, "m[s, t]"), true});
    cases.push_back({p + " plain read down a column", routine(p, "a[s, t]"), true});
  }
  cases.push_back({"read along the rows' stride", routine("f32", "h[t, s]"), false});
  const std::regex panel(R"(\bpb[0-9]+ < )");
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    const std::string src = generate_c(make_plan(c.r, test_options().placement));
    EXPECT_EQ(std::regex_search(src, panel), c.panel) << c.name;
    rs.push_back(c.r);
    names.push_back(c.name);
  }
  auto progs = compile_c_batch(rs, test_options());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    for (std::uint64_t seed : {41u, 42u}) {
      TensorMap in = random_inputs(rs[i], seed);
      in.at("a").data[7 * 59 + 3] = NAN;
      in.at("a").data[400 * 59 + 50] = INFINITY;
      in.at("g").data[650 * 59 + 58] = -INFINITY;
      in.at("b").data[690 * 21 + 20] = NAN;
      EXPECT_TRUE(bitwise_equal(interpret(rs[i], in), progs[i]->run(in))) << names[i];
    }
  }
}

// A zero is deferred past zeros of other nodes to the accumulation that stores every cell (the
// gradient buffers of a training step are zeroed together): its memset goes, the others stay.
TEST(ExecC, ZeroDeferredPastZerosOfOtherNodes) {
  Routine r = parse_checked(R"(routine zz {
  node x : f32[13, 19] materialized input
  node c : f32[19, 70] materialized input
  node y : f32[13, 70] materialized output
  node z : f32[13, 70] materialized output
  zero y
  zero z
  for s in 0..12 {
    for e in 0..69 {
      for t in 0..18 {
        y[s, e] = add.f32(y[s, e], mul.f32(x[s, t], c[t, e]))
      }
    }
  }
  for s in 0..12 {
    for e in 0..69 {
      z[s, e] = add.f32(z[s, e], y[s, e])
    }
  }
})");
  const std::string src = generate_c(make_plan(r, test_options().placement));
  EXPECT_TRUE(std::regex_search(src, std::regex(R"(zero y .* start at \+0)")));
  EXPECT_FALSE(std::regex_search(src, std::regex(R"(memset\(n_y,)")));
  EXPECT_TRUE(std::regex_search(src, std::regex(R"(memset\(n_z,)")));
  auto progs = compile_c_batch({r}, test_options());
  for (std::uint64_t seed : {51u, 52u}) {
    TensorMap in = random_inputs(r, seed);
    in.at("x").data[4] = NAN;
    EXPECT_TRUE(bitwise_equal(interpret(r, in), progs[0]->run(in)));
  }
}

// Buffers of 1 MiB or more are pooled across runs (exec/c_codegen.cpp fpx_pool_*): a program run
// again gets its released buffers back, so one whose first writer reads the initial zeros must be
// zeroed again — two runs on different inputs, and a second program of the same shapes in the
// same object, each agree with the interpreter bitwise, and the measured peak is still the
// report's.
TEST(ExecC, PooledBuffersAreZeroedAgainWhenTheirZerosAreRead) {
  Routine r = parse_checked(R"(routine pooled {
  node x : f32[512, 600] materialized input
  node acc : f32[512, 600] materialized
  node y : f32[512] materialized output
  for i in 0..511 {
    for j in 0..599 {
      acc[i, j] = add.f32(acc[i, j], x[i, j])
    }
  }
  zero y
  for i in 0..511 {
    for j in 0..599 {
      y[i] = add.f32(y[i], acc[i, j])
    }
  }
})");
  EXPECT_NE(generate_c(make_plan(r, test_options().placement)).find("fpx_pool_take"), std::string::npos);
  auto progs = compile_c_batch({r, r}, test_options());
  const std::int64_t report = memory_report(place(r, test_options().placement).routine).peak_bytes;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    for (auto& p : progs) {
      TensorMap in = random_inputs(r, seed);
      EXPECT_TRUE(bitwise_equal(interpret(r, in), p->run(in))) << seed;
      EXPECT_EQ(p->last_stats().peak_bytes, report);
    }
  }
}

// The attention programs at sizes where every new schedule is taken (register blocks with a
// partial block, rows in panels, hoisted gradient chains): sq 70, sk 67, d 64, e 65, forward and
// training step (f32, f64), no mask and causal (a NaN fill too), forward at f16 and bf16 too —
// bitwise.
TEST(ExecC, AttentionAtRegisterBlockSizesBitwise) {
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (Prec p : {Prec::F32, Prec::F64, Prec::F16, Prec::BF16})
    for (const std::string mask : {"none", "causal"})
      for (bool train : {false, true}) {
        if (train && (p == Prec::F16 || p == Prec::BF16)) continue;  // the interpreter's slowest case
        AttentionSpec s = spec(p, mask, 70, 67, train, p == Prec::F32 && mask == "causal" ? "nan" : "-inf");
        s.batch = 1;
        s.heads = 1;
        s.d = 64;
        s.e = 65;
        rs.push_back(build_attention(s));
        names.push_back(fmt::format("{} {} {}", prec_name(p), mask, train ? "train" : "forward"));
      }
  const std::string c = generate_c(make_plan(rs[3], test_options().placement));  // f32 causal train
  EXPECT_NE(c.find("register block: 4 vectors"), std::string::npos);
  EXPECT_NE(c.find("rows in panels"), std::string::npos);
  EXPECT_TRUE(std::regex_search(c, std::regex(R"(\binv[0-9]+\[)")));
  expect_bitwise(rs, names);
}

TEST(ExecC, MeasuredPeakEqualsTheMemoryReport) {
  std::vector<Routine> rs;
  for (std::int64_t d : {4, 24}) {
    AttentionSpec s = spec(Prec::F32, "causal", 20, 20);
    s.d = d;
    Routine composed = build_attention(s);
    rs.push_back(composed);
    rs.push_back(rewrite_on(composed).routine);
    s.train = true;
    rs.push_back(build_attention(s));
  }
  ExecOptions o = test_options();
  auto progs = compile_c_batch(rs, o);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    SCOPED_TRACE(i);
    progs[i]->run(random_inputs(rs[i], 3));
    const MemoryReport m = memory_report(place(rs[i], o.placement).routine);
    EXPECT_EQ(progs[i]->last_stats().peak_bytes, m.peak_bytes) << format_memory_report(m);
  }
}

// Row-private tiles (exec/row_private.h): the fold's and the fused backward's tiles live in one
// stack slice per lane block instead of a [cells, rows] buffer. Bitwise on one and two threads
// (f32, f64, bf16; a tail block, a causal skip); the slices are accounted at their declared size
// per thread, so the forward's measured peak is the report's with each tile's buffer replaced by
// its slices.
struct PrivateSlices {
  std::map<std::string, std::int64_t> bytes;  // node -> one slice's bytes
  std::int64_t total = 0;
};
PrivateSlices private_slices(const std::string& source) {
  static const std::regex decl(R"((\w+) \w+\[(\d+)\] __attribute__\(\(aligned\(64\)\)\);  /\* row-private slice of '([^']+)' \*/)");
  PrivateSlices out;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), decl); it != std::sregex_iterator(); ++it) {
    const std::string type = (*it)[1];
    const std::int64_t cell = type == "double" ? 8 : type == "float" ? 4 : 2;
    const std::int64_t b = std::stoll((*it)[2]) * cell;
    if (out.bytes.emplace((*it)[3], b).second) out.total += b;
  }
  return out;
}

TEST(ExecC, RowPrivateTilesLiveOnTheStackAndStayBitwise) {
  std::vector<Routine> rs;
  Config all;
  all.set("online_softmax", "true");
  all.set("online_softmax_backward", "true");
  all.set("online_softmax_block", "16");
  for (Prec p : {Prec::F32, Prec::F64, Prec::BF16}) {
    AttentionSpec s = spec(p, p == Prec::F64 ? "none" : "causal", 37, 45);
    s.d = 8;
    s.e = 6;
    rs.push_back(run_tier(build_attention(s), all).routine);
    s.train = true;
    rs.push_back(run_tier(build_attention(s), all).routine);
  }
  for (int threads : {1, 2}) {
    ExecOptions o = test_options();
    o.threads = threads;
    auto progs = compile_c_batch(rs, o);
    for (std::size_t i = 0; i < rs.size(); ++i) {
      SCOPED_TRACE(fmt::format("routine {} threads {}", i, threads));
      const PrivateSlices slices = private_slices(progs[i]->source());
      EXPECT_GE(slices.bytes.size(), i % 2 == 0 ? 3u : 4u);  // the fold's tiles, the backward's too
      const TensorMap in = random_inputs(rs[i], 5 + i);
      EXPECT_TRUE(bitwise_equal(interpret(rs[i], in), progs[i]->run(in)));
      const Routine placed = place(rs[i], o.placement).routine;
      const MemoryReport m = memory_report(placed);
      const std::int64_t measured = progs[i]->last_stats().peak_bytes;
      EXPECT_LT(measured, m.peak_bytes);
      if (i % 2 == 1) continue;
      // Forward: every buffer is live in the fold, so the peak is the report's with each tile's
      // buffer replaced by one slice per thread.
      std::int64_t buffers = 0;
      for (const auto& [name, b] : slices.bytes) {
        const Node* n = nullptr;
        for (const Node& x : placed.nodes)
          if (x.name == name) n = &x;
        ASSERT_NE(n, nullptr) << name;
        buffers += n->cell_count() * (n->prec == Prec::F64 ? 8 : n->prec == Prec::F16 || n->prec == Prec::BF16 ? 2 : 4);
      }
      EXPECT_EQ(measured, m.peak_bytes - buffers + threads * slices.total) << format_memory_report(m);
    }
  }
}

TEST(ExecC, RandomRoutinesAgreeBitwise) {
  // 40 random well-formed routines (every op and precision, virtual and local modes, dead loops,
  // scans, guards, special constants), one compiler run. FLASHPROOF_EXEC_RANDOM_COUNT=N runs N.
  std::uint64_t count = 40;
  if (const char* e = std::getenv("FLASHPROOF_EXEC_RANDOM_COUNT")) count = std::strtoull(e, nullptr, 10);
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (std::uint64_t seed = 1; seed <= count; ++seed) {
    rs.push_back(fuzz::sample_routine(seed * 7919));
    names.push_back("seed " + std::to_string(seed * 7919));
  }
  // Larger extents reach the wide schedules: lanes and their remainders, row unrolling, packed
  // tiles, lane bands with gathers and panels.
  fuzz::RandomRoutineOptions wide;
  wide.max_extent = 19;
  for (std::uint64_t seed = 1; seed <= count / 2; ++seed) {
    rs.push_back(fuzz::sample_routine(seed * 104723, wide));
    names.push_back("wide seed " + std::to_string(seed * 104723));
  }
  expect_bitwise(rs, names, 5);
}

// Every routine of the golden lit files (the online-softmax cases: applications with exact and
// bounded claims, every decline, guards, scopes, permuted loops, f16/f64 chains), before and after
// the tier: interpreter and compiled C agree bitwise on each. Files that are not one well-formed
// routine (malformed-input cases) are skipped.
TEST(ExecC, EveryGoldenRoutineBeforeAndAfterTheTierBitwise) {
  namespace fs = std::filesystem;
  std::vector<Routine> rs;
  std::vector<std::string> names;
  for (const auto& entry :
       fs::recursive_directory_iterator(std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit")) {
    if (entry.path().extension() != ".fp") continue;
    std::ifstream f(entry.path());
    std::stringstream text;
    text << f.rdbuf();
    Routine r;
    try {
      r = parse_checked(text.str());
    } catch (const UserError&) {
      continue;
    }
    const std::string name = entry.path().filename().string();
    rs.push_back(r);
    names.push_back(name);
    Routine rw = rewrite_on(r).routine;
    if (!equal(rw, r)) {
      rs.push_back(rw);
      names.push_back(name + " rewritten");
    }
  }
  EXPECT_GT(rs.size(), 50u);
  expect_bitwise(rs, names, 23);
}

TEST(ExecC, SecondCompileHitsTheCache) {
  Routine r = build_attention(spec(Prec::F32, "none", 3, 3));
  ExecOptions o = test_options();
  auto ex = make_executor("c", o);
  auto a = ex->compile(r);
  auto b = ex->compile(r);
  EXPECT_EQ(a->source(), b->source());
  TensorMap in = random_inputs(r, 1);
  EXPECT_TRUE(bitwise_equal(a->run(in), b->run(in)));
}

// `run --executor c --threads 100000` crashed inside libgomp, and 0 or negative counts were taken.
TEST(ExecC, ThreadCountsOutsideOneToTheCapAreUsageErrors) {
  EXPECT_EQ(max_c_threads(), std::max(256, 4 * hardware_threads()));
  EXPECT_EQ(resolve_c_threads(1), 1);
  EXPECT_EQ(resolve_c_threads(max_c_threads()), max_c_threads());
  for (int bad : {max_c_threads() + 1, 100000, -1}) {
    try {
      resolve_c_threads(bad);
      ADD_FAILURE() << bad << " threads accepted";
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
    }
  }
}

}  // namespace
}  // namespace fp
