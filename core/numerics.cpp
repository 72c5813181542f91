// Exact scalar numerics: see core/numerics.h. The operation table here is the reference every
// executor is tested against; fp_exp64 is spelled out step by step in docs/semantics.md and the
// code generators emit the same sequence of operations.

#include "core/numerics.h"

#include <cstdint>

#include "core/diagnostic.h"

namespace fp {

namespace {

std::uint64_t bits_of(double x) {
  return std::bit_cast<std::uint64_t>(x);
}
double from_bits(std::uint64_t u) {
  return std::bit_cast<double>(u);
}

// Bit pattern of a 16-bit binary format (f16: 5 exponent bits, 10 fraction bits; bf16: 8 and 7)
// for a double `x` already rounded to that format (or NaN). NaN payload bits are the leading
// fraction bits of the double, so a pattern → double → pattern round trip keeps them.
template <int kExpBits, int kFracBits>
std::uint16_t encode16(double x) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr int kEmin = 1 - kBias;
  constexpr std::uint16_t kInf = static_cast<std::uint16_t>(((1u << kExpBits) - 1) << kFracBits);
  const std::uint64_t u = bits_of(x);
  const auto sign = static_cast<std::uint16_t>((u >> 63) << 15);
  const std::uint64_t a = u & ~detail::kSignBit;
  if (a > detail::kExpMask) {
    auto payload = static_cast<std::uint16_t>((a >> (52 - kFracBits)) & ((1u << kFracBits) - 1));
    if (payload == 0) payload = static_cast<std::uint16_t>(1u << (kFracBits - 1));
    return static_cast<std::uint16_t>(sign | kInf | payload);
  }
  if (a == detail::kExpMask) return static_cast<std::uint16_t>(sign | kInf);
  const double ax = from_bits(a);
  if (ax < detail::pow2(kEmin)) {
    // Subnormal or zero: the value is an integer multiple of the quantum 2^(emin - frac bits).
    const double q = ax * detail::pow2(kFracBits - kEmin);
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(q));
  }
  const int e = static_cast<int>(a >> 52) - 1023;
  const auto frac = static_cast<std::uint16_t>((a >> (52 - kFracBits)) & ((1u << kFracBits) - 1));
  return static_cast<std::uint16_t>(sign | ((e + kBias) << kFracBits) | frac);
}

template <int kExpBits, int kFracBits>
double decode16(std::uint16_t b) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr unsigned kExpAll = (1u << kExpBits) - 1;
  const std::uint64_t sign = static_cast<std::uint64_t>(b >> 15) << 63;
  const unsigned ex = (b >> kFracBits) & kExpAll;
  const std::uint64_t frac = b & ((1u << kFracBits) - 1);
  if (ex == kExpAll) return from_bits(sign | detail::kExpMask | (frac << (52 - kFracBits)));
  double mag;
  if (ex == 0) {
    mag = static_cast<double>(frac) * detail::pow2(1 - kBias - kFracBits);
  } else {
    mag = from_bits((static_cast<std::uint64_t>(static_cast<int>(ex) - kBias + 1023) << 52) |
                    (frac << (52 - kFracBits)));
  }
  return from_bits(bits_of(mag) | sign);
}

// ---- i32 ----------------------------------------------------------------------------------------

std::int32_t to_i32(double v) {
  return static_cast<std::int32_t>(v);
}
double wrap(std::int64_t v) {
  return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(v)));
}

double i32_binop(BinOp op, double a, double b) {
  const std::int64_t x = to_i32(a), y = to_i32(b);
  switch (op) {
    case BinOp::Add:
      return wrap(x + y);
    case BinOp::Sub:
      return wrap(x - y);
    case BinOp::Mul:
      return wrap(x * y);
    case BinOp::Div:
      // x / 0 = 0; INT32_MIN / -1 = INT32_MIN (the wrapped quotient 2^31).
      if (y == 0) return 0.0;
      return wrap(x / y);
    case BinOp::Max:
      return static_cast<double>(x > y ? x : y);
    case BinOp::Min:
      return static_cast<double>(x < y ? x : y);
    case BinOp::Pow:
      return round_i32(std::pow(a, b));
    case BinOp::Eq:
      return x == y ? 1.0 : 0.0;
    case BinOp::Lt:
      return x < y ? 1.0 : 0.0;
  }
  FP_INTERNAL_CHECK(false, "unknown binary op {}", static_cast<int>(op));
}

// ---- fp_exp64 -------------------------------------------------------------------------------------

// y · 2^m for m in [-1022, 1024], exact unless the product overflows (then +inf, the correctly
// rounded overflow since y is already rounded to 53 bits).
double scale_pow2(double y, int m) {
  if (m > 1023) return (y * detail::pow2(1023)) * detail::pow2(m - 1023);
  return y * detail::pow2(m);
}

// 2^m · (hi + lo) for a result below 2^-1022: the sum is formed at a scale where binary64's
// grid in [1, 2) is the subnormal grid, so the only rounding is the final one (no double
// rounding through a 53-bit intermediate). hi + lo < 2 · 2^-m·2^-1022 is guaranteed by the caller.
double scale_subnormal(double hi, double lo, int m) {
  const double k = detail::pow2(m + 1022);  // m + 1022 in [-55, 0]
  const double u = hi * k;
  const double v = lo * k;
  const double s = 1.0 + u;
  const double err = ((1.0 - s) + u) + v;  // (1.0 - s) + u is exact (Fast2Sum, u <= 1)
  const double res = (s + err) - 1.0;      // a multiple of 2^-52 in [0, 1]
  return res * detail::pow2(-1022);
}

}  // namespace

// ---- rounding and representability ------------------------------------------------------------

bool representable(Prec p, double x) {
  if (std::isnan(x)) return is_float(p);
  return round_to(p, x) == x;
}

bool converts_exactly(Prec from, Prec to) {
  if (from == to || to == Prec::F64) return true;
  if (to == Prec::F32) return from == Prec::F16 || from == Prec::BF16;
  return false;
}

std::uint16_t f16_bits(double x) {
  return encode16<5, 10>(std::isnan(x) ? x : round_f16(x));
}
double f16_value(std::uint16_t bits) {
  return decode16<5, 10>(bits);
}
std::uint16_t bf16_bits(double x) {
  return encode16<8, 7>(std::isnan(x) ? x : round_bf16(x));
}
double bf16_value(std::uint16_t bits) {
  return decode16<8, 7>(bits);
}

// ---- exp ----------------------------------------------------------------------------------------

namespace exp64 {
// 2^(j/64) = kTable[j][0] + kTable[j][1]: the leading part RN(2^(j/64)) and the correctly rounded
// remainder (computed with MPFR at 400 bits).
const double kTable[64][2] = {
    {0x1p+0, 0x0p+0},
    {0x1.02c9a3e778061p+0, -0x1.19083535b085dp-56},
    {0x1.059b0d3158574p+0, 0x1.d73e2a475b465p-55},
    {0x1.0874518759bc8p+0, 0x1.186be4bb284ffp-57},
    {0x1.0b5586cf9890fp+0, 0x1.8a62e4adc610bp-54},
    {0x1.0e3ec32d3d1a2p+0, 0x1.03a1727c57b53p-59},
    {0x1.11301d0125b51p+0, -0x1.6c51039449b3ap-54},
    {0x1.1429aaea92dep+0, -0x1.32fbf9af1369ep-54},
    {0x1.172b83c7d517bp+0, -0x1.19041b9d78a76p-55},
    {0x1.1a35beb6fcb75p+0, 0x1.e5b4c7b4968e4p-55},
    {0x1.1d4873168b9aap+0, 0x1.e016e00a2643cp-54},
    {0x1.2063b88628cd6p+0, 0x1.dc775814a8495p-55},
    {0x1.2387a6e756238p+0, 0x1.9b07eb6c70573p-54},
    {0x1.26b4565e27cddp+0, 0x1.2bd339940e9d9p-55},
    {0x1.29e9df51fdee1p+0, 0x1.612e8afad1255p-55},
    {0x1.2d285a6e4030bp+0, 0x1.0024754db41d5p-54},
    {0x1.306fe0a31b715p+0, 0x1.6f46ad23182e4p-55},
    {0x1.33c08b26416ffp+0, 0x1.32721843659a6p-54},
    {0x1.371a7373aa9cbp+0, -0x1.63aeabf42eae2p-54},
    {0x1.3a7db34e59ff7p+0, -0x1.5e436d661f5e3p-56},
    {0x1.3dea64c123422p+0, 0x1.ada0911f09ebcp-55},
    {0x1.4160a21f72e2ap+0, -0x1.ef3691c309278p-58},
    {0x1.44e086061892dp+0, 0x1.89b7a04ef80dp-59},
    {0x1.486a2b5c13cdp+0, 0x1.3c1a3b69062fp-56},
    {0x1.4bfdad5362a27p+0, 0x1.d4397afec42e2p-56},
    {0x1.4f9b2769d2ca7p+0, -0x1.4b309d25957e3p-54},
    {0x1.5342b569d4f82p+0, -0x1.07abe1db13cadp-55},
    {0x1.56f4736b527dap+0, 0x1.9bb2c011d93adp-54},
    {0x1.5ab07dd485429p+0, 0x1.6324c054647adp-54},
    {0x1.5e76f15ad2148p+0, 0x1.ba6f93080e65ep-54},
    {0x1.6247eb03a5585p+0, -0x1.383c17e40b497p-54},
    {0x1.6623882552225p+0, -0x1.bb60987591c34p-54},
    {0x1.6a09e667f3bcdp+0, -0x1.bdd3413b26456p-54},
    {0x1.6dfb23c651a2fp+0, -0x1.bbe3a683c88abp-57},
    {0x1.71f75e8ec5f74p+0, -0x1.16e4786887a99p-55},
    {0x1.75feb564267c9p+0, -0x1.0245957316dd3p-54},
    {0x1.7a11473eb0187p+0, -0x1.41577ee04992fp-55},
    {0x1.7e2f336cf4e62p+0, 0x1.05d02ba15797ep-56},
    {0x1.82589994cce13p+0, -0x1.d4c1dd41532d8p-54},
    {0x1.868d99b4492edp+0, -0x1.fc6f89bd4f6bap-54},
    {0x1.8ace5422aa0dbp+0, 0x1.6e9f156864b27p-54},
    {0x1.8f1ae99157736p+0, 0x1.5cc13a2e3976cp-55},
    {0x1.93737b0cdc5e5p+0, -0x1.75fc781b57ebcp-57},
    {0x1.97d829fde4e5p+0, -0x1.d185b7c1b85d1p-54},
    {0x1.9c49182a3f09p+0, 0x1.c7c46b071f2bep-56},
    {0x1.a0c667b5de565p+0, -0x1.359495d1cd533p-54},
    {0x1.a5503b23e255dp+0, -0x1.d2f6edb8d41e1p-54},
    {0x1.a9e6b5579fdbfp+0, 0x1.0fac90ef7fd31p-54},
    {0x1.ae89f995ad3adp+0, 0x1.7a1cd345dcc81p-54},
    {0x1.b33a2b84f15fbp+0, -0x1.2805e3084d708p-57},
    {0x1.b7f76f2fb5e47p+0, -0x1.5584f7e54ac3bp-56},
    {0x1.bcc1e904bc1d2p+0, 0x1.23dd07a2d9e84p-55},
    {0x1.c199bdd85529cp+0, 0x1.11065895048ddp-55},
    {0x1.c67f12e57d14bp+0, 0x1.2884dff483cadp-54},
    {0x1.cb720dcef9069p+0, 0x1.503cbd1e949dbp-56},
    {0x1.d072d4a07897cp+0, -0x1.cbc3743797a9cp-54},
    {0x1.d5818dcfba487p+0, 0x1.2ed02d75b3707p-55},
    {0x1.da9e603db3285p+0, 0x1.c2300696db532p-54},
    {0x1.dfc97337b9b5fp+0, -0x1.1a5cd4f184b5cp-54},
    {0x1.e502ee78b3ff6p+0, 0x1.39e8980a9cc8fp-55},
    {0x1.ea4afa2a490dap+0, -0x1.e9c23179c2893p-54},
    {0x1.efa1bee615a27p+0, 0x1.dc7f486a4b6bp-54},
    {0x1.f50765b6e454p+0, 0x1.9d3e12dd8a18bp-54},
    {0x1.fa7c1819e90d8p+0, 0x1.74853f3a5931ep-55},
};
}  // namespace exp64

double fp_exp64(double x) {
  using namespace exp64;
  if (x != x) return x + x;
  if (x > kOverflowAbove) return std::numeric_limits<double>::infinity();
  if (x < kUnderflowBelow) return 0.0;
  // x = n·ln2/64 + r with n = RN(x·64/ln2), |r| <= ln2/128 (slightly more from rounding n).
  const double nd = (x * kInvLn2N + kShifter) - kShifter;
  const int n = static_cast<int>(nd);
  const int j = n & 63;
  const int m = (n - j) / 64;
  const double r1 = x - nd * kLn2NHi;  // exact: n·kLn2NHi is exact and Sterbenz applies
  const double r2 = -(nd * kLn2NLo);
  const double r = r1 + r2;
  // exp(r) - 1 = r + r²(1/2 + r/6 + r²/24 + r³/120 + r⁴/720) + O(r⁷): truncation < 3e-20.
  const double q = (r * r) * (kA1 + r * (kA2 + r * (kA3 + r * (kA4 + r * kA5))));
  const double p = r1 + (r2 + q);
  // exp(x) = 2^m · 2^(j/64) · exp(r) ≈ 2^m · (t_hi + (t_lo + s·p)).
  const double thi = kTable[j][0];
  const double tlo = kTable[j][1];
  const double s = thi + tlo;
  const double lo = tlo + s * p;
  const double y = thi + lo;
  if (m > -1022 || (m == -1022 && y >= 1.0)) return scale_pow2(y, m);
  return scale_subnormal(thi, lo, m);
}

// ---- operations ------------------------------------------------------------------------------------

double fma_narrow(Prec p, double a, double b, double c) {
  const double prod = a * b;  // exact: at most 2·24 significand bits, far from over/underflow
  const double s = prod + c;
  if (!std::isfinite(s)) return round_to(p, s);
  // TwoSum: s + e == prod + c exactly.
  const double t = s - prod;
  const double e = (prod - (s - t)) + (c - t);
  double odd = s;
  if (e != 0.0 && (bits_of(s) & 1) == 0) {
    // Round to odd: the other neighbour of the exact sum, one ulp toward e. Rounding a
    // round-to-odd 53-bit value to p <= 51 bits is a correct single rounding.
    const bool away = (e > 0) == (s > 0);
    odd = from_bits(away ? bits_of(s) + 1 : bits_of(s) - 1);
  }
  return round_to(p, odd);
}

double apply_unop(UnOp op, Prec p, double a) {
  if (p == Prec::I32) {
    const std::int64_t x = to_i32(a);
    switch (op) {
      case UnOp::Neg:
        return wrap(-x);
      case UnOp::Abs:
        return wrap(x < 0 ? -x : x);
      case UnOp::Cast:
        return round_i32(a);
      case UnOp::Exp:
      case UnOp::Sqrt:
        break;
    }
    FP_INTERNAL_CHECK(false, "{}.i32 is float-only (the checker rejects it)", unop_name(op));
  }
  switch (op) {
    case UnOp::Neg:
      return -a;
    case UnOp::Abs:
      return std::fabs(a);
    case UnOp::Cast:
      return round_to(p, a);
    case UnOp::Exp:
      return round_to(p, fp_exp64(a));
    case UnOp::Sqrt:
      return round_to(p, std::sqrt(a));
  }
  FP_INTERNAL_CHECK(false, "unknown unary op {}", static_cast<int>(op));
}

double apply_binop(BinOp op, Prec p, double a, double b) {
  if (p == Prec::I32) return i32_binop(op, a, b);
  // Binary64 add/sub/mul/div of values of at most 24 significand bits, rounded once more to p, is
  // correctly rounded (53 >= 2p + 2), so every float precision computes in double and rounds.
  switch (op) {
    case BinOp::Add:
      return round_to(p, a + b);
    case BinOp::Sub:
      return round_to(p, a - b);
    case BinOp::Mul:
      return round_to(p, a * b);
    case BinOp::Div:
      return round_to(p, a / b);
    case BinOp::Max:
      return fmax_nan(a, b);
    case BinOp::Min:
      return fmin_nan(a, b);
    case BinOp::Pow:
      return round_to(p, std::pow(a, b));
    case BinOp::Eq:
      return a == b ? 1.0 : 0.0;
    case BinOp::Lt:
      return a < b ? 1.0 : 0.0;
  }
  FP_INTERNAL_CHECK(false, "unknown binary op {}", static_cast<int>(op));
}

double apply_ternop(TernOp op, Prec p, double a, double b, double c) {
  switch (op) {
    case TernOp::Where:
      return a != 0.0 ? b : c;  // NaN counts as true
    case TernOp::Fma:
      FP_INTERNAL_CHECK(p != Prec::I32, "fma.i32 is float-only (the checker rejects it)");
      return p == Prec::F64 ? std::fma(a, b, c) : fma_narrow(p, a, b, c);
  }
  FP_INTERNAL_CHECK(false, "unknown ternary op {}", static_cast<int>(op));
}

}  // namespace fp
