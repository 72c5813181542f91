// Unit tests of exp.f32/f16/bf16 (fp_exp32, core/numerics_c.h; docs/semantics.md section 5):
// special values; on EVERY f16 and bf16 input, and on a sample of f32 inputs (every 4099th bit
// pattern, the special values and every f32 near the underflow, subnormal-result and overflow
// thresholds and the reduction's k changes), the interpreter and the compiled C executor give the
// same bits, and the error against MPFR is within the figure the bounds use: kExp32MaxUlp ulps at
// f32, 0.5 + kExp32MaxUlp·2^-(24 - bits) ulps at f16/bf16, and the error model of
// verify/bounds/rounding_model (exp_error relative, exp_underflow_error absolute) on every input.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "core/checker.h"
#include "core/interpreter.h"
#include "core/numerics.h"
#include "core/tensor.h"
#include "core/text_parser.h"
#include "exec/c_executor.h"
#include "jit_test_options.h"
#include "verify/bounds/exp_reference.h"
#include "verify/bounds/rounding_model.h"
#include "verify/online_softmax/bounds/mpfr_reference.h"

namespace fp {
namespace {

ExecOptions test_options() {
  ExecOptions o = testing::jit_test_options();
  return o;
}

// y[i] = exp.p(x[i]) over n cells.
Routine exp_routine(Prec p, std::int64_t n) {
  const std::string text = fmt::format(R"(routine exps {{
  node x : {0}[{1}] materialized input
  node y : {0}[{1}] materialized output
  for i in 0..{2} {{
    y[i] = exp.{0}(x[i])
  }}
}})",
                                       prec_name(p), n, n - 1);
  Routine r = parse_routine(text, "exps.fp");
  check_routine_or_throw(r, "exps.fp");
  return r;
}

struct Outcome {
  std::int64_t checked = 0;  // finite inputs measured
  double max_ulp = 0;
  double worst_x = 0;
};

// Runs exp.p over `xs` (values of p) on the interpreter and the compiled C executor, expects the
// same bits everywhere, and measures every finite input against MPFR.
Outcome run_and_measure(Prec p, const std::vector<double>& xs) {
  Outcome o;
  const Routine r = exp_routine(p, static_cast<std::int64_t>(xs.size()));
  Tensor x;
  x.prec = p;
  x.dims = {static_cast<std::int64_t>(xs.size())};
  x.data = xs;
  const TensorMap in{{"x", x}};
  const TensorMap want = interpret(r, in);
  auto progs = compile_c_batch({r}, test_options());
  EXPECT_EQ(progs.size(), 1u);
  if (progs.empty()) return o;
  const TensorMap got = progs[0]->run(in);
  const std::vector<double>& yi = want.at("y").data;
  const std::vector<double>& yc = got.at("y").data;
  EXPECT_EQ(yi.size(), xs.size());
  EXPECT_EQ(yc.size(), xs.size());
  int mismatches = 0, outside = 0;
  for (std::size_t i = 0; i < xs.size() && i < yi.size() && i < yc.size(); ++i) {
    if (!same_value(yi[i], yc[i]) && ++mismatches <= 5)
      ADD_FAILURE() << prec_name(p) << " interpreter " << std::hexfloat << yi[i] << " != compiled C " << yc[i]
                    << " at x = " << xs[i];
    if (!std::isfinite(xs[i])) continue;
    const double err = verify::exp_narrow_ulp_error(p, xs[i], yi[i]);
    ++o.checked;
    if (err > o.max_ulp) {
      o.max_ulp = err;
      o.worst_x = xs[i];
    }
    if (!verify::exp_narrow_within_bound(p, xs[i], yi[i]) && ++outside <= 5)
      ADD_FAILURE() << prec_name(p) << " exp(" << std::hexfloat << xs[i] << ") = " << yi[i]
                    << " is outside the bounds' error model";
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(outside, 0);
  std::printf("[ exp  ] %s: %lld finite inputs, max error %.9f ulp at x = %a\n", prec_name(p),
              static_cast<long long>(o.checked), o.max_ulp, o.worst_x);
  return o;
}

TEST(Exp32, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(std::bit_cast<std::uint32_t>(fp_exp32(0.0f)), std::bit_cast<std::uint32_t>(1.0f));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(fp_exp32(-0.0f)), std::bit_cast<std::uint32_t>(1.0f));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(fp_exp32(-inf)), 0u);  // +0
  EXPECT_EQ(fp_exp32(inf), inf);
  EXPECT_EQ(fp_exp32(1e30f), inf);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(fp_exp32(-1e30f)), 0u);
  // NaN in, NaN out, quiet (a signalling NaN's quiet bit is set).
  for (std::uint32_t nan_bits : {0x7fc00000u, 0x7f800001u, 0xffc00123u, 0x7fbfffffu}) {
    const float y = fp_exp32(std::bit_cast<float>(nan_bits));
    EXPECT_TRUE(std::isnan(y)) << std::hex << nan_bits;
    EXPECT_NE(std::bit_cast<std::uint32_t>(y) & 0x00400000u, 0u) << std::hex << nan_bits;
  }
  // The interpreter's exp.f16/bf16 are fp_exp32 rounded, at the special values too.
  for (Prec p : {Prec::F32, Prec::F16, Prec::BF16}) {
    EXPECT_TRUE(same_value(apply_unop(UnOp::Exp, p, 0.0), 1.0));
    EXPECT_TRUE(same_value(apply_unop(UnOp::Exp, p, -0.0), 1.0));
    EXPECT_TRUE(same_value(apply_unop(UnOp::Exp, p, -INFINITY), 0.0));
    EXPECT_EQ(apply_unop(UnOp::Exp, p, INFINITY), INFINITY);
    EXPECT_TRUE(std::isnan(apply_unop(UnOp::Exp, p, NAN)));
  }
}

// exp.f16/bf16 are fp_exp32 of the (exactly representable) value, rounded once to the format.
TEST(Exp32, NarrowPrecisionsAreExp32Rounded) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const double h = f16_value(static_cast<std::uint16_t>(b)), g = bf16_value(static_cast<std::uint16_t>(b));
    ASSERT_TRUE(same_value(apply_unop(UnOp::Exp, Prec::F16, h),
                           round_f16(static_cast<double>(fp_exp32(static_cast<float>(h))))))
        << std::hexfloat << h;
    ASSERT_TRUE(same_value(apply_unop(UnOp::Exp, Prec::BF16, g),
                           round_bf16(static_cast<double>(fp_exp32(static_cast<float>(g))))))
        << std::hexfloat << g;
  }
}

TEST(Exp32, EveryF16AndBf16InputInterpreterEqualsCompiledCWithinTheBoundsFigure) {
  for (Prec p : {Prec::F16, Prec::BF16}) {
    std::vector<double> xs;
    for (std::uint32_t b = 0; b < 65536; ++b)
      xs.push_back(p == Prec::F16 ? f16_value(static_cast<std::uint16_t>(b))
                                  : bf16_value(static_cast<std::uint16_t>(b)));
    const Outcome o = run_and_measure(p, xs);
    EXPECT_EQ(o.checked, p == Prec::F16 ? 65536 - 2 * 1024 : 65536 - 2 * 128);  // every finite input
    // RN_p(y) with y within U f32 ulps of e is within 1/2 + U·2^-(24 - bits) ulps of p.
    const double figure = 0.5 + kExp32MaxUlp * std::ldexp(1.0, -(24 - verify::significand_bits(p)));
    EXPECT_LE(o.max_ulp, figure) << prec_name(p) << " at x = " << std::hexfloat << o.worst_x;
    EXPECT_GT(o.max_ulp, 0.45) << prec_name(p);  // the measurement sees rounding errors at all
  }
}

TEST(Exp32, F32SampleInterpreterEqualsCompiledCWithinTheBoundsFigure) {
  std::vector<double> xs;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4099)
    xs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  for (float v :
       {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f,
        std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 88.0f, 89.0f, -104.0f})
    xs.push_back(v);
  // Every f32 within 2000 bit patterns of the thresholds: the result underflows to +0 below
  // ln(2^-150) = -103.972, is subnormal below ln(2^-126) = -87.337, overflows above
  // ln(max) = 88.723; the clamps at -104 and 89; the reduction's k changes at (j + 1/2)·ln2
  // (j = 0: ±0.3466; j = ±63: ±44.015); and arguments so small that the result is 1 or 1 ± ulp.
  for (float c : {-103.972077f, -104.0f, -87.336544f, 88.7228394f, 89.0f, 0.34657359f, -0.34657359f,
                  44.0148506f, -44.0148506f, 0x1p-24f, -0x1p-25f}) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(c);
    for (std::uint32_t d = b - 2000; d != b + 2001; ++d) xs.push_back(std::bit_cast<float>(d));
  }
  const Outcome o = run_and_measure(Prec::F32, xs);
  EXPECT_GT(o.checked, 1'000'000);
  EXPECT_LE(o.max_ulp, kExp32MaxUlp) << "at x = " << std::hexfloat << o.worst_x;
  EXPECT_GT(o.max_ulp, 0.5);  // not correctly rounded: the measurement sees that
}

// The figure the bounds use is the measured one: the relative error at f32 is kExp32MaxUlp·2^-23
// and the f16/bf16 errors compose it with one more rounding.
TEST(Exp32, BoundsUseTheMeasuredFigure) {
  EXPECT_EQ(verify::exp_error(Prec::F32, 0.52), verify::exp_error(Prec::F32, 0.9));  // not fp_exp64's
  EXPECT_GE(verify::exp_error(Prec::F32, 0.52), kExp32MaxUlp * 0x1p-23);
  EXPECT_LT(verify::exp_error(Prec::F32, 0.52), kExp32MaxUlp * 0x1p-23 * (1 + 1e-12));
  EXPECT_GE(verify::exp_error(Prec::F16, 0.52), (1 + kExp32MaxUlp * 0x1p-23) * (1 + 0x1p-11) - 1);
  EXPECT_GE(verify::exp_error(Prec::BF16, 0.52), (1 + kExp32MaxUlp * 0x1p-23) * (1 + 0x1p-8) - 1);
  EXPECT_GE(verify::exp_underflow_error(Prec::F32), kExp32MaxUlp * 0x1p-149);
  for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16})
    EXPECT_GE(verify::exp_underflow_error(p), verify::underflow_error(p)) << prec_name(p);
}

}  // namespace
}  // namespace fp
