#pragma once
// Exact scalar numerics of the IR (core/ir.h SEMANTICS, docs/semantics.md): rounding to each
// precision, f16/bf16 bit conversions, flashproof's deterministic exps (fp_exp64, fp_exp32) and the
// value of every operation at every precision. Every executor's arithmetic is defined by these
// functions; the interpreter, the SMT encoding's tests and the code generators' tests compare
// against them.
//
// Values of every precision travel as doubles holding the exact value (tensor.h). The hot
// rounding helpers are inline so that the interpreter's inner loop can use them without a call.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/ir.h"
#include "core/numerics_c.h"

namespace fp {

// ---- rounding -------------------------------------------------------------------------------

namespace detail {

constexpr std::uint64_t kSignBit = FPC_SIGN_BIT;
constexpr std::uint64_t kExpMask = FPC_EXP_MASK;
constexpr std::uint64_t kQuietBit = FPC_QUIET_BIT;

// 2^e as a double, for e in the normal range [-1022, 1023].
constexpr double pow2(int e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

// Round-to-nearest-even of x to a binary format with `Prec` significand bits (implicit bit
// included), minimum normal exponent `Emin` and maximum exponent `Emax`, gradual underflow and
// overflow to ±inf (fpc_round_binary in core/numerics_c.h).
template <int kPrecBits, int kEmin, int kEmax>
inline double round_binary(double x) {
  static_assert(kPrecBits >= 2 && kPrecBits <= 51);
  return fpc_round_binary(x, kPrecBits, kEmin, kEmax);
}

}  // namespace detail

// The largest finite value of p (i32: 2^31 - 1) and the smallest positive one (the smallest
// subnormal; i32: 1).
double max_finite(Prec p);
double min_positive(Prec p);
// The lowest finite value of state_prec(state) (core/ir.h): -max_finite(f64) for f64,
// -max_finite(f32) for every other precision.
double lowest_finite(Prec state);
// The smallest positive normal value of a float precision (f16: 2^-14; f32, bf16: 2^-126; f64:
// 2^-1022), and its exponent; i32: 1 and 0.
double min_normal(Prec p);
int min_normal_exponent(Prec p);

// The bodies live in core/numerics_c.h (plain C, shared verbatim with the generated C and CUDA
// code); these wrappers are the C++ API.
inline double round_f32(double x) {
  return fpc_round_f32(x);
}
inline double round_f16(double x) {
  return fpc_round_f16(x);
}
inline double round_bf16(double x) {
  return fpc_round_bf16(x);
}
// float → i32: truncation toward zero, saturating, NaN → 0 (-0 becomes +0).
inline double round_i32(double x) {
  return fpc_round_i32(x);
}

// RNE to p (identity at f64). Also the conversion rule between precisions: a value of any
// precision converts to p by round_to(p, value).
inline double round_to(Prec p, double x) {
  switch (p) {
    case Prec::F64:
      return x;
    case Prec::F32:
      return round_f32(x);
    case Prec::F16:
      return round_f16(x);
    case Prec::BF16:
      return round_bf16(x);
    case Prec::I32:
      return round_i32(x);
  }
  return x;
}

// x == round_to(p, x): every NaN and ±inf is representable at a float precision; i32 wants an
// integral value in range (-0 counts as 0).
bool representable(Prec p, double x);

// True when every value of `from` is a value of `to` (so converting is the identity).
bool converts_exactly(Prec from, Prec to);

// ---- f16 / bf16 bit patterns ----------------------------------------------------------------

// RNE from the double directly (never through float). NaN payloads survive a round trip:
// f16_bits(f16_value(b)) == b for all 65536 patterns, and likewise for bf16.
std::uint16_t f16_bits(double x);
double f16_value(std::uint16_t bits);
std::uint16_t bf16_bits(double x);
double bf16_value(std::uint16_t bits);

// ---- exp --------------------------------------------------------------------------------------

// flashproof's deterministic binary64 exponential (exp.f64): only + - * / on doubles, exact
// power-of-two scaling and an integer conversion of an exactly integral double, in a fixed order,
// so the C and CUDA code generators (which must not contract into FMA) reproduce it bit for bit.
// The algorithm and its constants are spelled out in docs/semantics.md; its measured maximum
// error is < 0.52 ulp.
double fp_exp64(double x);
// flashproof's binary32 exponential (exp.f32): a fixed branch-free sequence of binary32 + - *
// (Cody–Waite reduction, a degree-7 polynomial, scaling by 2^k in two steps), docs/semantics.md
// section 5. exp.f16/exp.bf16 round it once more (exp_narrow). Within kExp32MaxUlp ulps on every
// f32 input (measured exhaustively).
float fp_exp32(float x);
inline constexpr double kExp32MaxUlp = FPC_EXP32_MAX_ULP;
// exp.p for p = f32, f16, bf16 of a value of p (held exactly as a double): fp_exp32, rounded to p.
double exp_narrow(Prec p, double x);

namespace exp64 {
// The constants of fp_exp64, exposed so code generators print exactly these (as %a literals).
// (Defined once, in core/numerics_c.h.)
constexpr int kTableBits = 6;  // N = 64 table entries 2^(j/64) = kTable[j][0] + kTable[j][1]
extern const double kTable[64][2];
constexpr double kInvLn2N = FPC_EXP64_INV_LN2N;  // RN(64/ln2)
constexpr double kLn2NHi = FPC_EXP64_LN2N_HI;    // ln2/64 to 36 bits: n·kLn2NHi is exact
constexpr double kLn2NLo = FPC_EXP64_LN2N_LO;    // RN(ln2/64 - kLn2NHi)
constexpr double kShifter = FPC_EXP64_SHIFTER;   // x + kShifter - kShifter rounds x to an integer
constexpr double kA1 = FPC_EXP64_A1;             // Taylor coefficients 1/2, 1/6, 1/24, 1/120, 1/720
constexpr double kA2 = FPC_EXP64_A2;
constexpr double kA3 = FPC_EXP64_A3;
constexpr double kA4 = FPC_EXP64_A4;
constexpr double kA5 = FPC_EXP64_A5;
constexpr double kOverflowAbove = FPC_EXP64_OVERFLOW_ABOVE;    // exp(x) = +inf for x > this
constexpr double kUnderflowBelow = FPC_EXP64_UNDERFLOW_BELOW;  // exp(x) = +0 for x < this
}  // namespace exp64

// ---- operations ------------------------------------------------------------------------------

// The value of each operation at precision p. Operands are already converted to p, except the
// condition of `where`, which is at its own precision (only `cond != 0` matters). exp, sqrt and
// fma at i32 are rejected by the checker; here they are an internal error.
double apply_unop(UnOp op, Prec p, double a);
double apply_binop(BinOp op, Prec p, double a, double b);
double apply_ternop(TernOp op, Prec p, double a, double b, double c);

// fma(a, b, c) rounded once to p, for f32/f16/bf16 operands (a·b is exact in binary64; the sum is
// formed exactly with TwoSum and rounded to odd so that the final rounding to p is the only one).
double fma_narrow(Prec p, double a, double b, double c);

// IEEE 754-2019 maximum/minimum: NaN propagates, max(-0, +0) = +0, min(-0, +0) = -0.
inline double fmax_nan(double a, double b) {
  return fpc_fmax_nan(a, b);
}
inline double fmin_nan(double a, double b) {
  return fpc_fmin_nan(a, b);
}

}  // namespace fp
