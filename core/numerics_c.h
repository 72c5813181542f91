/* The exact scalar numerics of the IR (core/ir.h SEMANTICS, docs/semantics.md) in plain C99 that
 * also compiles as CUDA C++ device code. This is the ONE implementation of the rounding helpers,
 * the f16/bf16 encodings, the narrow fma, the i32 rules, fp_exp64 and fp_exp32: core/numerics.{h,cpp}
 * (the interpreter's arithmetic) call these functions, and the compiled C and CUDA executors
 * (exec/) paste this file's text verbatim into every program they generate, so every executor
 * computes the same bits by construction.
 *
 * Rules for this file: C99 only (no C++ features), every function `FPC_FN` (static inline; a
 * device function under CUDA), every bit reinterpretation through memcpy (defined in C and C++;
 * CUDA's bit-cast intrinsics on the device), no floating-point expression that a compiler could
 * contract (callers compile with -ffp-contract=off, nvcc with -fmad=false), constants as exact
 * hexadecimal literals. exec_executor_test compiles it as strict C99 at -O3 -march=native and
 * checks it against the library bitwise; exec_cuda_test compiles it with nvcc and NVRTC.
 *
 * fp_exp64, fp_exp32, max and min are written without data-dependent branches (every path is computed and
 * the result is selected at the end) so that loops calling them vectorize; the operations on the
 * selected path are exactly the sequence docs/semantics.md spells out (fp_exp32: the same values,
 * see its comment), so the value is the same. */
#ifndef FLASHPROOF_CORE_NUMERICS_C_H
#define FLASHPROOF_CORE_NUMERICS_C_H

#if defined(__CUDACC_RTC__)
/* NVRTC has no C library headers: the few types and functions used here are built in. */
typedef unsigned long long fpc_u64;
typedef long long fpc_i64;
typedef unsigned int fpc_u32;
typedef int fpc_i32;
typedef unsigned short fpc_u16;
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
typedef uint64_t fpc_u64;
typedef int64_t fpc_i64;
typedef uint32_t fpc_u32;
typedef int32_t fpc_i32;
typedef uint16_t fpc_u16;
#endif

#if defined(__CUDACC__)
#define FPC_FN static __device__ __forceinline__
#define FPC_TABLE static __device__ const
#else
#define FPC_FN static inline
#define FPC_TABLE static const
#endif

/* Precision codes: the order of fp::Prec (core/ir.h). */
#define FPC_F64 0
#define FPC_F32 1
#define FPC_F16 2
#define FPC_BF16 3
#define FPC_I32 4

#define FPC_SIGN_BIT 0x8000000000000000ull
#define FPC_EXP_MASK 0x7ff0000000000000ull
#define FPC_QUIET_BIT 0x0008000000000000ull

#if defined(__CUDACC__)
FPC_FN fpc_u64 fpc_bits_of(double x) {
  return (fpc_u64)__double_as_longlong(x);
}
FPC_FN double fpc_from_bits(fpc_u64 u) {
  return __longlong_as_double((long long)u);
}
FPC_FN fpc_u32 fpc_bits_of_f32(float x) {
  return (fpc_u32)__float_as_uint(x);
}
FPC_FN float fpc_f32_from_bits(fpc_u32 u) {
  return __uint_as_float(u);
}
FPC_FN fpc_i32 fpc_i32_wrap(fpc_u32 u) {
  return (fpc_i32)u; /* two's complement (nvcc) */
}
#else
FPC_FN fpc_u64 fpc_bits_of(double x) {
  fpc_u64 u;
  memcpy(&u, &x, sizeof u);
  return u;
}
FPC_FN double fpc_from_bits(fpc_u64 u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}
FPC_FN fpc_u32 fpc_bits_of_f32(float x) {
  fpc_u32 u;
  memcpy(&u, &x, sizeof u);
  return u;
}
FPC_FN float fpc_f32_from_bits(fpc_u32 u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
FPC_FN fpc_i32 fpc_i32_wrap(fpc_u32 u) {
  fpc_i32 r;
  memcpy(&r, &u, sizeof r);
  return r;
}
#endif
/* 2^e as a double, for e in the normal range [-1022, 1023]. */
FPC_FN double fpc_pow2(int e) {
  return fpc_from_bits((fpc_u64)(e + 1023) << 52);
}

/* ---- rounding ------------------------------------------------------------------------------ */

/* Round-to-nearest-even of x to a binary format with `prec_bits` significand bits (implicit bit
 * included, 2..51), minimum normal exponent `emin` and maximum exponent `emax`, gradual underflow
 * and overflow to +-inf. One rounding, straight from the double: the normal range rounds the bit
 * pattern (the carry into the exponent is the correct binade change), the subnormal range adds a
 * constant whose ulp is the target's subnormal quantum, which makes the double adder do the RNE.
 * The arguments are constants at every call, so inlining folds them. */
FPC_FN double fpc_round_binary(double x, int prec_bits, int emin, int emax) {
  const fpc_u64 u = fpc_bits_of(x);
  const fpc_u64 sign = u & FPC_SIGN_BIT;
  fpc_u64 a = u ^ sign;
  if (a >= FPC_EXP_MASK) {
    /* inf stays inf; NaN stays NaN, quieted. */
    return a == FPC_EXP_MASK ? x : fpc_from_bits(u | FPC_QUIET_BIT);
  }
  if (a < ((fpc_u64)(emin + 1023) << 52)) {
    const double shift = fpc_pow2(emin - prec_bits + 1 + 52);
    const double r = (fpc_from_bits(a) + shift) - shift;
    return fpc_from_bits(fpc_bits_of(r) | sign);
  }
  {
    const int drop = 53 - prec_bits;
    const fpc_u64 low = (((fpc_u64)1) << drop) - 1;
    a += (low >> 1) + ((a >> drop) & 1);
    a &= ~low;
    if (a >= ((fpc_u64)(emax + 1 + 1023) << 52)) a = FPC_EXP_MASK;
    return fpc_from_bits(a | sign);
  }
}

FPC_FN double fpc_round_f32(double x) {
  return (double)(float)x;
}
FPC_FN double fpc_round_f16(double x) {
  return fpc_round_binary(x, 11, -14, 15);
}
FPC_FN double fpc_round_bf16(double x) {
  return fpc_round_binary(x, 8, -126, 127);
}
/* float -> i32: truncation toward zero, saturating, NaN -> 0 (-0 becomes +0). */
FPC_FN double fpc_round_i32(double x) {
  if (x != x) return 0.0;
  if (x >= 2147483647.0) return 2147483647.0;
  if (x <= -2147483648.0) return -2147483648.0;
  return trunc(x) + 0.0;
}
/* The same rule, giving the integer. */
FPC_FN fpc_i32 fpc_to_i32(double x) {
  return (fpc_i32)fpc_round_i32(x);
}

/* RNE to precision code p (identity at f64); also the conversion between precisions. */
FPC_FN double fpc_round_to(int p, double x) {
  switch (p) {
    case FPC_F32:
      return fpc_round_f32(x);
    case FPC_F16:
      return fpc_round_f16(x);
    case FPC_BF16:
      return fpc_round_bf16(x);
    case FPC_I32:
      return fpc_round_i32(x);
    default:
      return x;
  }
}

/* ---- f16 / bf16 bit patterns --------------------------------------------------------------- */

/* Bit pattern of a 16-bit binary format (f16: 5 exponent bits, 10 fraction bits; bf16: 8 and 7)
 * for a double already rounded to that format (or NaN). NaN payload bits are the leading fraction
 * bits of the double, so a pattern -> double -> pattern round trip keeps them. */
FPC_FN fpc_u16 fpc_encode16(double x, int exp_bits, int frac_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int emin = 1 - bias;
  const fpc_u32 inf = ((1u << exp_bits) - 1) << frac_bits;
  const fpc_u64 u = fpc_bits_of(x);
  const fpc_u32 sign = (fpc_u32)(u >> 63) << 15;
  const fpc_u64 a = u & ~FPC_SIGN_BIT;
  if (a > FPC_EXP_MASK) {
    fpc_u32 payload = (fpc_u32)((a >> (52 - frac_bits)) & ((1u << frac_bits) - 1));
    if (payload == 0) payload = 1u << (frac_bits - 1);
    return (fpc_u16)(sign | inf | payload);
  }
  if (a == FPC_EXP_MASK) return (fpc_u16)(sign | inf);
  {
    const double ax = fpc_from_bits(a);
    if (ax < fpc_pow2(emin)) {
      /* Subnormal or zero: the value is an integer multiple of the quantum 2^(emin - frac bits). */
      const double q = ax * fpc_pow2(frac_bits - emin);
      return (fpc_u16)(sign | (fpc_u32)q);
    }
  }
  {
    const int e = (int)(a >> 52) - 1023;
    const fpc_u32 frac = (fpc_u32)((a >> (52 - frac_bits)) & ((1u << frac_bits) - 1));
    return (fpc_u16)(sign | ((fpc_u32)(e + bias) << frac_bits) | frac);
  }
}

FPC_FN double fpc_decode16(fpc_u16 b, int exp_bits, int frac_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const fpc_u32 exp_all = (1u << exp_bits) - 1;
  const fpc_u64 sign = (fpc_u64)(b >> 15) << 63;
  const fpc_u32 ex = ((fpc_u32)b >> frac_bits) & exp_all;
  const fpc_u64 frac = (fpc_u64)(b & ((1u << frac_bits) - 1));
  double mag;
  if (ex == exp_all) return fpc_from_bits(sign | FPC_EXP_MASK | (frac << (52 - frac_bits)));
  if (ex == 0) {
    mag = (double)frac * fpc_pow2(1 - bias - frac_bits);
  } else {
    mag = fpc_from_bits(((fpc_u64)((int)ex - bias + 1023) << 52) | (frac << (52 - frac_bits)));
  }
  return fpc_from_bits(fpc_bits_of(mag) | sign);
}

/* RNE from the double directly (never through float). */
FPC_FN fpc_u16 fpc_f16_bits(double x) {
  return fpc_encode16(x != x ? x : fpc_round_f16(x), 5, 10);
}
FPC_FN double fpc_f16_value(fpc_u16 bits) {
  return fpc_decode16(bits, 5, 10);
}
FPC_FN fpc_u16 fpc_bf16_bits(double x) {
  return fpc_encode16(x != x ? x : fpc_round_bf16(x), 8, 7);
}
FPC_FN double fpc_bf16_value(fpc_u16 bits) {
  return fpc_decode16(bits, 8, 7);
}

/* ---- max / min ---------------------------------------------------------------------------- */

/* IEEE 754-2019 maximum/minimum: NaN propagates, max(-0, +0) = +0, min(-0, +0) = -0. Written as
 * selections of values computed without a trapping operation (no branches, and nothing an
 * if-conversion under -ftrapping-math must not speculate: a NaN operand gives the quiet NaN
 * constant, not a + b), so that loops over them vectorize. Equal operands differ at most in the
 * sign of zero: max keeps the bits both have (AND: +0 unless both are -0), min either has (OR). */
FPC_FN double fpc_fmax_nan(double a, double b) {
  const double larger = a > b ? a : b;
  const double tie = fpc_from_bits(fpc_bits_of(a) & fpc_bits_of(b));
  const double r = a == b ? tie : larger;
  return (a != a || b != b) ? fpc_from_bits(0x7ff8000000000000ull) : r;
}
FPC_FN double fpc_fmin_nan(double a, double b) {
  const double smaller = a < b ? a : b;
  const double tie = fpc_from_bits(fpc_bits_of(a) | fpc_bits_of(b));
  const double r = a == b ? tie : smaller;
  return (a != a || b != b) ? fpc_from_bits(0x7ff8000000000000ull) : r;
}
/* The same on binary32 values (a float operation on floats is exact here: only a selection). */
FPC_FN float fpc_fmaxf_nan(float a, float b) {
  const float larger = a > b ? a : b;
  const float tie = fpc_f32_from_bits(fpc_bits_of_f32(a) & fpc_bits_of_f32(b));
  const float r = a == b ? tie : larger;
  return (a != a || b != b) ? fpc_f32_from_bits(0x7fc00000u) : r;
}
FPC_FN float fpc_fminf_nan(float a, float b) {
  const float smaller = a < b ? a : b;
  const float tie = fpc_f32_from_bits(fpc_bits_of_f32(a) | fpc_bits_of_f32(b));
  const float r = a == b ? tie : smaller;
  return (a != a || b != b) ? fpc_f32_from_bits(0x7fc00000u) : r;
}

/* ---- i32 ---------------------------------------------------------------------------------- */

/* add, sub, mul wrap modulo 2^32; div truncates, x / 0 = 0, INT32_MIN / -1 = INT32_MIN; neg and
 * abs wrap. */
FPC_FN fpc_i32 fpc_i32_add(fpc_i32 a, fpc_i32 b) {
  return fpc_i32_wrap((fpc_u32)a + (fpc_u32)b);
}
FPC_FN fpc_i32 fpc_i32_sub(fpc_i32 a, fpc_i32 b) {
  return fpc_i32_wrap((fpc_u32)a - (fpc_u32)b);
}
FPC_FN fpc_i32 fpc_i32_mul(fpc_i32 a, fpc_i32 b) {
  return fpc_i32_wrap((fpc_u32)a * (fpc_u32)b);
}
FPC_FN fpc_i32 fpc_i32_div(fpc_i32 a, fpc_i32 b) {
  if (b == 0) return 0;
  if (b == -1) return fpc_i32_wrap(0u - (fpc_u32)a);
  return a / b;
}
FPC_FN fpc_i32 fpc_i32_neg(fpc_i32 a) {
  return fpc_i32_wrap(0u - (fpc_u32)a);
}
FPC_FN fpc_i32 fpc_i32_abs(fpc_i32 a) {
  return a < 0 ? fpc_i32_wrap(0u - (fpc_u32)a) : a;
}

/* ---- exp ---------------------------------------------------------------------------------- */

/* The constants of fp_exp64 (docs/semantics.md section 5), exact hexadecimal literals. */
#define FPC_EXP64_INV_LN2N 0x1.71547652b82fep+6 /* RN(64/ln2) */
#define FPC_EXP64_LN2N_HI 0x1.62e42fefap-7      /* ln2/64 to 36 bits: n * hi is exact */
#define FPC_EXP64_LN2N_LO 0x1.cf79abc9e3b3ap-46 /* RN(ln2/64 - hi) */
#define FPC_EXP64_SHIFTER 0x1.8p52              /* x + shifter - shifter rounds x to an integer */
#define FPC_EXP64_A1 0x1p-1                     /* 1/2, 1/6, 1/24, 1/120, 1/720, rounded */
#define FPC_EXP64_A2 0x1.5555555555555p-3
#define FPC_EXP64_A3 0x1.5555555555555p-5
#define FPC_EXP64_A4 0x1.1111111111111p-7
#define FPC_EXP64_A5 0x1.6c16c16c16c17p-10
#define FPC_EXP64_OVERFLOW_ABOVE 710.0   /* exp(x) = +inf for x > this */
#define FPC_EXP64_UNDERFLOW_BELOW -746.0 /* exp(x) = +0 for x < this */

/* 2^(j/64) = T[2j] + T[2j+1], one entry per line: the leading part RN(2^(j/64)) and the correctly
 * rounded remainder (computed with MPFR at 400 bits), as a flat list (a one-dimensional table
 * vectorizes into gathers; core/numerics.cpp initializes its [64][2] view from the same list). */
/* clang-format off */
#define FPC_EXP64_TABLE_INIT \
  { \
    0x1p+0, 0x0p+0, \
    0x1.02c9a3e778061p+0, -0x1.19083535b085dp-56, \
    0x1.059b0d3158574p+0, 0x1.d73e2a475b465p-55, \
    0x1.0874518759bc8p+0, 0x1.186be4bb284ffp-57, \
    0x1.0b5586cf9890fp+0, 0x1.8a62e4adc610bp-54, \
    0x1.0e3ec32d3d1a2p+0, 0x1.03a1727c57b53p-59, \
    0x1.11301d0125b51p+0, -0x1.6c51039449b3ap-54, \
    0x1.1429aaea92dep+0, -0x1.32fbf9af1369ep-54, \
    0x1.172b83c7d517bp+0, -0x1.19041b9d78a76p-55, \
    0x1.1a35beb6fcb75p+0, 0x1.e5b4c7b4968e4p-55, \
    0x1.1d4873168b9aap+0, 0x1.e016e00a2643cp-54, \
    0x1.2063b88628cd6p+0, 0x1.dc775814a8495p-55, \
    0x1.2387a6e756238p+0, 0x1.9b07eb6c70573p-54, \
    0x1.26b4565e27cddp+0, 0x1.2bd339940e9d9p-55, \
    0x1.29e9df51fdee1p+0, 0x1.612e8afad1255p-55, \
    0x1.2d285a6e4030bp+0, 0x1.0024754db41d5p-54, \
    0x1.306fe0a31b715p+0, 0x1.6f46ad23182e4p-55, \
    0x1.33c08b26416ffp+0, 0x1.32721843659a6p-54, \
    0x1.371a7373aa9cbp+0, -0x1.63aeabf42eae2p-54, \
    0x1.3a7db34e59ff7p+0, -0x1.5e436d661f5e3p-56, \
    0x1.3dea64c123422p+0, 0x1.ada0911f09ebcp-55, \
    0x1.4160a21f72e2ap+0, -0x1.ef3691c309278p-58, \
    0x1.44e086061892dp+0, 0x1.89b7a04ef80dp-59, \
    0x1.486a2b5c13cdp+0, 0x1.3c1a3b69062fp-56, \
    0x1.4bfdad5362a27p+0, 0x1.d4397afec42e2p-56, \
    0x1.4f9b2769d2ca7p+0, -0x1.4b309d25957e3p-54, \
    0x1.5342b569d4f82p+0, -0x1.07abe1db13cadp-55, \
    0x1.56f4736b527dap+0, 0x1.9bb2c011d93adp-54, \
    0x1.5ab07dd485429p+0, 0x1.6324c054647adp-54, \
    0x1.5e76f15ad2148p+0, 0x1.ba6f93080e65ep-54, \
    0x1.6247eb03a5585p+0, -0x1.383c17e40b497p-54, \
    0x1.6623882552225p+0, -0x1.bb60987591c34p-54, \
    0x1.6a09e667f3bcdp+0, -0x1.bdd3413b26456p-54, \
    0x1.6dfb23c651a2fp+0, -0x1.bbe3a683c88abp-57, \
    0x1.71f75e8ec5f74p+0, -0x1.16e4786887a99p-55, \
    0x1.75feb564267c9p+0, -0x1.0245957316dd3p-54, \
    0x1.7a11473eb0187p+0, -0x1.41577ee04992fp-55, \
    0x1.7e2f336cf4e62p+0, 0x1.05d02ba15797ep-56, \
    0x1.82589994cce13p+0, -0x1.d4c1dd41532d8p-54, \
    0x1.868d99b4492edp+0, -0x1.fc6f89bd4f6bap-54, \
    0x1.8ace5422aa0dbp+0, 0x1.6e9f156864b27p-54, \
    0x1.8f1ae99157736p+0, 0x1.5cc13a2e3976cp-55, \
    0x1.93737b0cdc5e5p+0, -0x1.75fc781b57ebcp-57, \
    0x1.97d829fde4e5p+0, -0x1.d185b7c1b85d1p-54, \
    0x1.9c49182a3f09p+0, 0x1.c7c46b071f2bep-56, \
    0x1.a0c667b5de565p+0, -0x1.359495d1cd533p-54, \
    0x1.a5503b23e255dp+0, -0x1.d2f6edb8d41e1p-54, \
    0x1.a9e6b5579fdbfp+0, 0x1.0fac90ef7fd31p-54, \
    0x1.ae89f995ad3adp+0, 0x1.7a1cd345dcc81p-54, \
    0x1.b33a2b84f15fbp+0, -0x1.2805e3084d708p-57, \
    0x1.b7f76f2fb5e47p+0, -0x1.5584f7e54ac3bp-56, \
    0x1.bcc1e904bc1d2p+0, 0x1.23dd07a2d9e84p-55, \
    0x1.c199bdd85529cp+0, 0x1.11065895048ddp-55, \
    0x1.c67f12e57d14bp+0, 0x1.2884dff483cadp-54, \
    0x1.cb720dcef9069p+0, 0x1.503cbd1e949dbp-56, \
    0x1.d072d4a07897cp+0, -0x1.cbc3743797a9cp-54, \
    0x1.d5818dcfba487p+0, 0x1.2ed02d75b3707p-55, \
    0x1.da9e603db3285p+0, 0x1.c2300696db532p-54, \
    0x1.dfc97337b9b5fp+0, -0x1.1a5cd4f184b5cp-54, \
    0x1.e502ee78b3ff6p+0, 0x1.39e8980a9cc8fp-55, \
    0x1.ea4afa2a490dap+0, -0x1.e9c23179c2893p-54, \
    0x1.efa1bee615a27p+0, 0x1.dc7f486a4b6bp-54, \
    0x1.f50765b6e454p+0, 0x1.9d3e12dd8a18bp-54, \
    0x1.fa7c1819e90d8p+0, 0x1.74853f3a5931ep-55, \
  }

/* clang-format on */

FPC_TABLE double fpc_exp64_table[128] = FPC_EXP64_TABLE_INIT;

/* The main path of fpc_exp64 for a non-special argument xs: exp(xs) ~ 2^m * y, y = thi + lo. */
typedef struct {
  double y, thi, lo;
  int m;
} fpc_exp64_main_t;
FPC_FN fpc_exp64_main_t fpc_exp64_main(double xs) {
  fpc_exp64_main_t out;
  /* x = n*ln2/64 + r with n = RN(x*64/ln2), |r| <= ln2/128 (slightly more from rounding n). */
  const double nd = (xs * FPC_EXP64_INV_LN2N + FPC_EXP64_SHIFTER) - FPC_EXP64_SHIFTER;
  const int n = (int)nd;
  const int j = n & 63;
  const double r1 = xs - nd * FPC_EXP64_LN2N_HI; /* exact: n*hi is exact and Sterbenz applies */
  const double r2 = -(nd * FPC_EXP64_LN2N_LO);
  const double r = r1 + r2;
  /* exp(r) - 1 = r + r^2 (1/2 + r/6 + r^2/24 + r^3/120 + r^4/720) + O(r^7): truncation < 3e-20. */
  const double q =
      (r * r) *
      (FPC_EXP64_A1 + r * (FPC_EXP64_A2 + r * (FPC_EXP64_A3 + r * (FPC_EXP64_A4 + r * FPC_EXP64_A5))));
  const double p = r1 + (r2 + q);
  /* exp(x) = 2^m * 2^(j/64) * exp(r) ~ 2^m * (t_hi + (t_lo + s*p)). */
  out.m = (n - j) / 64;
  out.thi = fpc_exp64_table[2 * j];
  const double tlo = fpc_exp64_table[2 * j + 1];
  const double s = out.thi + tlo;
  out.lo = tlo + s * p;
  out.y = out.thi + out.lo;
  return out;
}

/* flashproof's deterministic binary64 exponential: the sequence of docs/semantics.md section 5.
 * Every path is computed (on a harmless argument when x is special) and the result selected at the
 * end: no operation on the selected path differs from the step-by-step definition. */
FPC_FN double fpc_exp64(double x) {
  const int special = !(x >= FPC_EXP64_UNDERFLOW_BELOW && x <= FPC_EXP64_OVERFLOW_ABOVE); /* or NaN */
  const double xs = special ? 0.0 : x;
  const fpc_exp64_main_t e64 = fpc_exp64_main(xs);
  const int m = e64.m;
  const double y = e64.y, thi = e64.thi, lo = e64.lo;
  /* Normal result: y * 2^m, exact unless it overflows (then +inf, the correctly rounded overflow
   * since y is already rounded to 53 bits); m in (1023, 1024] scales in two exact steps. The
   * second factor is 2^0 = 1 (exact) whenever m <= 1023. */
  const int m1 = m > 1023 ? 1023 : (m < -1022 ? -1022 : m);
  const int m2 = m > 1023 ? m - 1023 : 0;
  const double normal = (y * fpc_pow2(m1)) * fpc_pow2(m2);
  /* Subnormal result: 2^m * (hi + lo) is formed at a scale where binary64's grid in [1, 2) is the
   * subnormal grid, so the only rounding is the final one (no double rounding). */
  const int ks = m + 1022 < -1022 ? -1022 : (m + 1022 > 0 ? 0 : m + 1022); /* in [-55, 0] here */
  const double k = fpc_pow2(ks);
  const double u = thi * k;
  const double v = lo * k;
  const double h = 1.0 + u;
  const double e = ((1.0 - h) + u) + v; /* (1 - h) + u is exact (Fast2Sum, u <= 1) */
  const double sub = ((h + e) - 1.0) * fpc_pow2(-1022);
  const double res = (m > -1022 || (m == -1022 && y >= 1.0)) ? normal : sub;
  const double edge = x != x ? x + x : (x > 0 ? fpc_from_bits(FPC_EXP_MASK) : 0.0);
  /* A bit blend rather than `special ? edge : res`: the main path is then always used, so no
   * compiler sinks it (and its table loads) into a branch, which would keep loops from
   * vectorizing. */
  const fpc_u64 pick_edge = (fpc_u64)0 - (fpc_u64)special;
  return fpc_from_bits((fpc_bits_of(edge) & pick_edge) | (fpc_bits_of(res) & ~pick_edge));
}

/* ---- exp32: the exponential of exp.f32, exp.f16 and exp.bf16 -------------------------------- */

/* The constants of fpc_exp32 (docs/semantics.md section 5), exact hexadecimal binary32 literals. */
#define FPC_EXP32_INV_LN2 0x1.715476p+0f /* RN(1/ln2) */
#define FPC_EXP32_SHIFTER 0x1.8p23f      /* v + shifter - shifter rounds v to an integer, |v| < 2^22 */
#define FPC_EXP32_LN2_HI 0x1.62e4p-1f    /* ln2 to 15 bits: k * hi is exact for |k| < 2^9 */
#define FPC_EXP32_LN2_LO 0x1.7f7d1cp-20f /* RN(ln2 - hi) */
#define FPC_EXP32_C2 0x1p-1f             /* exp(r) ~ 1 + r + r^2 (C2 + r C3 + ... + r^5 C7) */
#define FPC_EXP32_C3 0x1.555556p-3f
#define FPC_EXP32_C4 0x1.5554e8p-5f
#define FPC_EXP32_C5 0x1.1110ep-7f
#define FPC_EXP32_C6 0x1.6d44d2p-10f
#define FPC_EXP32_C7 0x1.a1267p-13f
#define FPC_EXP32_LOWEST -104.0f /* the definition clamps arguments to [LOWEST, HIGHEST]: */
#define FPC_EXP32_HIGHEST 89.0f  /* exp(-104) rounds to +0 and exp(89) overflows */


/* flashproof's binary32 exponential (exp.f32): a fixed sequence of binary32 + - * (no FMA, no
 * contraction), exactly docs/semantics.md section 5. Within FPC_EXP32_MAX_ULP ulps of exp(x) (of
 * the exact value's binade; the subnormal range: ulps of 2^-149) on every f32 input (measured over
 * all 2^32: bench/exp_ulp_bench).
 *
 * Written for vector loops (issue 11: 0.37 -> 0.27 ns an element with AVX-512), with the same bits
 * as the step-by-step definition on every input (bench/exp32_equality_bench compares all 2^32
 * against the previous, literal form):
 * - The main path runs on x itself, not on the clamped xs, and the clamps become a selection at
 *   the end: for -104 < x < 89 the clamps return x, so the main path computes exactly the defined
 *   operations; for x <= -104 and x >= 89 the definition's result is +0 and +inf (the clamped
 *   argument gives exp(-104) -> +0 and exp(89) -> +inf by the same arithmetic), which are selected
 *   directly. (The literal clamps made GCC split the function into three paths and if-convert them
 *   with masks: eight extra vector operations and the clamp on the critical path.)
 * - The selections are bit blends of masks, not `c ? a : b`: GCC turned the conditional forms into
 *   a branch (no vectorization) or split paths again.
 * - For NaN x every path is computed on NaN (harmless) and x + x is selected, as defined. */
#define FPC_EXP32_MAX_ULP 0.87 /* measured maximum 0.868039638 ulp (x = -0x1.4caf52p+2), rounded up */
FPC_FN float fpc_exp32(float x) {
  /* x = k ln2 + r, k = RN(x/ln2) in [-150, 128] for the selected x, |r| <= ~ln2/2. rh is exact
   * (k * hi is exact and Sterbenz applies); r = rh - rl is used only inside the polynomial: the sum
   * keeps rh and rl apart, so r's own rounding reaches the result only through q. */
  const float v = x * FPC_EXP32_INV_LN2;
  /* t = v + Shifter lies in [2^23, 2^24), where the spacing is 1, so t = Shifter + k exactly and
   * its bits are bits(Shifter) + k: the integer k without a float-to-int conversion (undefined in
   * C for the huge or NaN kf of unselected lanes). */
  const float t = v + FPC_EXP32_SHIFTER;
#if defined(__CUDACC__) || defined(FPC_EXP32_USE_SHIFTER) /* the latter: bench/exp32_equality_bench */
  const float kf = t - FPC_EXP32_SHIFTER;
#else
  /* rintf(v) is the same integer as t - Shifter (both round v once, to nearest even, at the
   * integers) but is one instruction in a vector loop (vroundps/vrndscaleps), off the t chain, so
   * the critical path loses a dependent add. The two differ only in the sign of a zero kf (rint
   * keeps v's sign), which changes no result: kf enters only products and differences whose zero
   * signs are absorbed before y (checked over all 2^32 inputs: bench/exp32_equality_bench). */
  const float kf = rintf(v);
#endif
  const float rh = x - kf * FPC_EXP32_LN2_HI;
  const float rl = kf * FPC_EXP32_LN2_LO;
  const float r = rh - rl;
  const float q =
      (r * r) *
      (FPC_EXP32_C2 +
       r * (FPC_EXP32_C3 + r * (FPC_EXP32_C4 + r * (FPC_EXP32_C5 + r * (FPC_EXP32_C6 + r * FPC_EXP32_C7)))));
  const float y = 1.0f + (rh + (q - rl)); /* exp(r), in [0.70, 1.42] */
  /* y * 2^k in two steps: k1 = floor(k/2) and k2 = k - k1 are in [-75, 64], so 2^k1 and 2^k2 are
   * normal binary32 values built from their biased exponents e1 = k1 + 127 = (k + 254) >> 1 and
   * e2 = k2 + 127 = (k + 254) - e1 (k + 254 > 0: a logical shift), y * 2^k1 is exact and the second
   * product is the only rounding (gradual underflow, or overflow to +inf). kb = k + 254 from t's
   * bits (0x4b400000 = bits(Shifter)); unsigned, so unselected lanes wrap harmlessly. */
  const fpc_u32 kb = fpc_bits_of_f32(t) - (0x4b400000u - 254u);
  const fpc_u32 e1 = kb >> 1;
  const fpc_u32 e2 = kb - e1;
  const float s1 = fpc_f32_from_bits(e1 << 23);
  const float s2 = fpc_f32_from_bits(e2 << 23);
  const float res = (y * s1) * s2;
  /* `&`, not `&&`: both comparisons are evaluated (no branch); NaN fails both. */
  const fpc_u32 m_main = 0u - (fpc_u32)((x > FPC_EXP32_LOWEST) & (x < FPC_EXP32_HIGHEST));
  const fpc_u32 m_inf = 0u - (fpc_u32)(x >= FPC_EXP32_HIGHEST);
  const fpc_u32 m_nan = 0u - (fpc_u32)(x != x);
  /* The three masks are disjoint; none set (x <= LOWEST) leaves the bits of +0. */
  return fpc_f32_from_bits((fpc_bits_of_f32(res) & m_main) | (0x7f800000u & m_inf) |
                           (fpc_bits_of_f32(x + x) & m_nan));
}

/* exp.f16 and exp.bf16 of an f16/bf16 value x (held exactly as a double): fpc_exp32 of the same
 * value (exact in binary32), rounded once more to the narrow format. */
FPC_FN double fpc_exp_f16(double x) {
  return fpc_round_f16((double)fpc_exp32((float)x));
}
FPC_FN double fpc_exp_bf16(double x) {
  return fpc_round_bf16((double)fpc_exp32((float)x));
}

/* ---- fma ---------------------------------------------------------------------------------- */

/* fma(a, b, c) rounded once to precision code p (f32, f16, bf16 operands): a*b is exact in
 * binary64; the sum is formed exactly with TwoSum and rounded to odd, so the final rounding to p is
 * the only one (round-to-odd at 53 bits, then RNE at <= 51 bits, is one correct rounding). */
FPC_FN double fpc_fma_narrow(int p, double a, double b, double c) {
  const double prod = a * b;
  const double s = prod + c;
  double t, e, odd;
  if (!(s - s == 0.0)) return fpc_round_to(p, s); /* inf or NaN */
  t = s - prod;
  e = (prod - (s - t)) + (c - t);
  odd = s;
  if (e != 0.0 && (fpc_bits_of(s) & 1) == 0) {
    const int away = (e > 0) == (s > 0);
    odd = fpc_from_bits(away ? fpc_bits_of(s) + 1 : fpc_bits_of(s) - 1);
  }
  return fpc_round_to(p, odd);
}

#endif /* FLASHPROOF_CORE_NUMERICS_C_H */
