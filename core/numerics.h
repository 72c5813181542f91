#pragma once
// Exact scalar numerics of the IR (core/ir.h SEMANTICS, docs/semantics.md): rounding to each
// precision, f16/bf16 bit conversions, flashproof's deterministic binary64 exp (fp_exp64) and the
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

namespace fp {

// ---- rounding -------------------------------------------------------------------------------

namespace detail {

constexpr std::uint64_t kSignBit = 0x8000000000000000ull;
constexpr std::uint64_t kExpMask = 0x7ff0000000000000ull;
constexpr std::uint64_t kQuietBit = 0x0008000000000000ull;

// 2^e as a double, for e in the normal range [-1022, 1023].
constexpr double pow2(int e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

// Round-to-nearest-even of x to a binary format with `Prec` significand bits (implicit bit
// included), minimum normal exponent `Emin` and maximum exponent `Emax`, gradual underflow and
// overflow to ±inf. One rounding, straight from the double: the normal range rounds the bit
// pattern (the carry into the exponent is the correct binade change), the subnormal range adds a
// constant whose ulp is the target's subnormal quantum, which makes the double adder do the RNE.
template <int kPrecBits, int kEmin, int kEmax>
inline double round_binary(double x) {
  static_assert(kPrecBits >= 2 && kPrecBits <= 51);
  std::uint64_t u = std::bit_cast<std::uint64_t>(x);
  const std::uint64_t sign = u & kSignBit;
  std::uint64_t a = u ^ sign;
  if (a >= kExpMask) {
    // inf stays inf; NaN stays NaN, quieted.
    return a == kExpMask ? x : std::bit_cast<double>(u | kQuietBit);
  }
  constexpr std::uint64_t kMinNormal = static_cast<std::uint64_t>(kEmin + 1023) << 52;
  if (a < kMinNormal) {
    constexpr double kShift = pow2(kEmin - kPrecBits + 1 + 52);
    const double r = (std::bit_cast<double>(a) + kShift) - kShift;
    return std::bit_cast<double>(std::bit_cast<std::uint64_t>(r) | sign);
  }
  constexpr int kDrop = 53 - kPrecBits;
  constexpr std::uint64_t kLow = (std::uint64_t{1} << kDrop) - 1;
  a += (kLow >> 1) + ((a >> kDrop) & 1);
  a &= ~kLow;
  constexpr std::uint64_t kOverflow = static_cast<std::uint64_t>(kEmax + 1 + 1023) << 52;
  if (a >= kOverflow) a = kExpMask;
  return std::bit_cast<double>(a | sign);
}

}  // namespace detail

inline double round_f32(double x) {
  return static_cast<double>(static_cast<float>(x));
}
inline double round_f16(double x) {
  return detail::round_binary<11, -14, 15>(x);
}
inline double round_bf16(double x) {
  return detail::round_binary<8, -126, 127>(x);
}
// float → i32: truncation toward zero, saturating, NaN → 0 (-0 becomes +0).
inline double round_i32(double x) {
  if (std::isnan(x)) return 0.0;
  if (x >= 2147483647.0) return 2147483647.0;
  if (x <= -2147483648.0) return -2147483648.0;
  return std::trunc(x) + 0.0;
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

// flashproof's deterministic binary64 exponential: only + - * / on doubles, exact power-of-two
// scaling and an integer conversion of an exactly integral double, in a fixed order, so the C and
// CUDA code generators (which must not contract into FMA) reproduce it bit for bit. The algorithm
// and its constants are spelled out in docs/semantics.md; its measured maximum error is < 0.52 ulp.
double fp_exp64(double x);

namespace exp64 {
// The constants of fp_exp64, exposed so code generators print exactly these (as %a literals).
constexpr int kTableBits = 6;  // N = 64 table entries 2^(j/64) = kTable[j][0] + kTable[j][1]
extern const double kTable[64][2];
constexpr double kInvLn2N = 0x1.71547652b82fep+6;  // RN(64/ln2)
constexpr double kLn2NHi = 0x1.62e42fefap-7;       // ln2/64 to 36 bits: n·kLn2NHi is exact
constexpr double kLn2NLo = 0x1.cf79abc9e3b3ap-46;  // RN(ln2/64 - kLn2NHi)
constexpr double kShifter = 0x1.8p52;              // x + kShifter - kShifter rounds x to an integer
constexpr double kA1 = 0x1p-1;                     // Taylor coefficients 1/2, 1/6, 1/24, 1/120, 1/720
constexpr double kA2 = 0x1.5555555555555p-3;
constexpr double kA3 = 0x1.5555555555555p-5;
constexpr double kA4 = 0x1.1111111111111p-7;
constexpr double kA5 = 0x1.6c16c16c16c17p-10;
constexpr double kOverflowAbove = 710.0;    // exp(x) = +inf for x > this
constexpr double kUnderflowBelow = -746.0;  // exp(x) = +0 for x < this
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
  if (a != a || b != b) return a + b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
inline double fmin_nan(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

}  // namespace fp
