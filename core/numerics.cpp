// Exact scalar numerics: see core/numerics.h. The operation table here is the reference every
// executor is tested against; fp_exp64 and fp_exp32 are spelled out step by step in
// docs/semantics.md and the code generators embed the same C (core/numerics_c.h).

#include "core/numerics.h"

#include <cstdint>
#include <limits>

#include "core/diagnostic.h"

namespace fp {

namespace {

// ---- i32 ----------------------------------------------------------------------------------------

std::int32_t to_i32(double v) {
  return static_cast<std::int32_t>(v);
}

double i32_binop(BinOp op, double a, double b) {
  const std::int32_t x = to_i32(a), y = to_i32(b);
  switch (op) {
    case BinOp::Add:
      return fpc_i32_add(x, y);
    case BinOp::Sub:
      return fpc_i32_sub(x, y);
    case BinOp::Mul:
      return fpc_i32_mul(x, y);
    case BinOp::Div:
      // x / 0 = 0; INT32_MIN / -1 = INT32_MIN (the wrapped quotient 2^31).
      return fpc_i32_div(x, y);
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
  FP_UNREACHABLE("unknown binary op {}", static_cast<int>(op));
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
  return fpc_f16_bits(x);
}
double f16_value(std::uint16_t bits) {
  return fpc_f16_value(bits);
}
std::uint16_t bf16_bits(double x) {
  return fpc_bf16_bits(x);
}
double bf16_value(std::uint16_t bits) {
  return fpc_bf16_value(bits);
}

double lowest_finite(Prec state) {
  return -max_finite(state == Prec::F64 ? Prec::F64 : Prec::F32);
}

double max_finite(Prec p) {
  switch (p) {
    case Prec::F64:
      return std::numeric_limits<double>::max();
    case Prec::F32:
      return std::numeric_limits<float>::max();
    case Prec::F16:
      return 65504.0;
    case Prec::BF16:
      return 0x1.fep127;
    case Prec::I32:
      return 2147483647.0;
  }
  return 0;
}

int min_normal_exponent(Prec p) {
  switch (p) {
    case Prec::F64:
      return -1022;
    case Prec::F32:
    case Prec::BF16:
      return -126;
    case Prec::F16:
      return -14;
    case Prec::I32:
      return 0;
  }
  return 0;
}

double min_normal(Prec p) {
  return std::ldexp(1.0, min_normal_exponent(p));
}

double min_positive(Prec p) {
  switch (p) {
    case Prec::F64:
      return std::numeric_limits<double>::denorm_min();
    case Prec::F32:
      return std::numeric_limits<float>::denorm_min();
    case Prec::F16:
      return 0x1p-24;
    case Prec::BF16:
      return 0x1p-133;
    case Prec::I32:
      return 1;
  }
  return 0;
}

// ---- exp ----------------------------------------------------------------------------------------

namespace exp64 {
// 2^(j/64) = kTable[j][0] + kTable[j][1] (the one table, in core/numerics_c.h).
const double kTable[64][2] = FPC_EXP64_TABLE_INIT;
}  // namespace exp64

double fp_exp64(double x) {
  return fpc_exp64(x);
}

float fp_exp32(float x) {
  return fpc_exp32(x);
}

double exp_narrow(Prec p, double x) {
  switch (p) {
    case Prec::F32:
      return static_cast<double>(fpc_exp32(static_cast<float>(x)));
    case Prec::F16:
      return fpc_exp_f16(x);
    case Prec::BF16:
      return fpc_exp_bf16(x);
    case Prec::F64:
    case Prec::I32:
      break;
  }
  FP_INTERNAL_CHECK(false, "exp_narrow at {}", prec_name(p));
}

// ---- operations ------------------------------------------------------------------------------------

double fma_narrow(Prec p, double a, double b, double c) {
  return fpc_fma_narrow(static_cast<int>(p), a, b, c);
}

double apply_unop(UnOp op, Prec p, double a) {
  if (p == Prec::I32) {
    const std::int32_t x = to_i32(a);
    switch (op) {
      case UnOp::Neg:
        return fpc_i32_neg(x);
      case UnOp::Abs:
        return fpc_i32_abs(x);
      case UnOp::Cast:
        return round_i32(a);
      case UnOp::Exp:
      case UnOp::Sqrt:
        break;
    }
    FP_UNREACHABLE("{}.i32 is float-only (the checker rejects it)", unop_name(op));
  }
  switch (op) {
    case UnOp::Neg:
      return -a;
    case UnOp::Abs:
      return std::fabs(a);
    case UnOp::Cast:
      return round_to(p, a);
    case UnOp::Exp:
      return p == Prec::F64 ? fp_exp64(a) : exp_narrow(p, a);
    case UnOp::Sqrt:
      return round_to(p, std::sqrt(a));
  }
  FP_UNREACHABLE("unknown unary op {}", static_cast<int>(op));
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
  FP_UNREACHABLE("unknown binary op {}", static_cast<int>(op));
}

double apply_ternop(TernOp op, Prec p, double a, double b, double c) {
  switch (op) {
    case TernOp::Where:
      return a != 0.0 ? b : c;  // NaN counts as true
    case TernOp::Fma:
      FP_INTERNAL_CHECK(p != Prec::I32, "fma.i32 is float-only (the checker rejects it)");
      return p == Prec::F64 ? std::fma(a, b, c) : fma_narrow(p, a, b, c);
  }
  FP_UNREACHABLE("unknown ternary op {}", static_cast<int>(op));
}

}  // namespace fp
