// The reference interpreter: input validation, the bytecode machine that executes a compiled
// routine (core/interpreter_program.h, lowered by interpreter_compile.cpp) and interpret().
// Every arithmetic instruction computes exactly what core/numerics.h's apply_* define; the
// per-precision codes only inline the common cases.

#include "core/interpreter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/diagnostic.h"
#include "core/input_validation.h"
#include "core/interpreter_program.h"
#include "core/numerics.h"

namespace fp {

namespace {

using interp::Access;
using interp::Affine;
using interp::Code;
using interp::Insn;
using interp::kMaxInlineTerms;
using interp::Loop;
using interp::Program;
using interp::Term;

// ---- input validation ------------------------------------------------------------------------

// Checks the tensor bound to input node `n` and copies it into `cells`. i32 cells are
// canonicalised (-0 becomes 0); float cells are copied as they are.
void bind_input(const Node& n, const TensorMap& inputs, const std::string& source,
                std::vector<double>& cells) {
  const Tensor& t = validated_input(n, inputs, source);
  cells.resize(t.data.size());
  for (std::size_t i = 0; i < t.data.size(); ++i) {
    const double v = t.data[i];
    cells[i] = n.prec == Prec::I32 ? v + 0.0 : v;
  }
}

// ---- affine evaluation --------------------------------------------------------------------------

inline std::int64_t eval_affine(const Affine& a, const Term* spill, const std::int64_t* iv) {
  switch (a.nterms) {
    case 0:
      return a.base;
    case 1:
      return a.base + a.coef[0] * iv[a.slot[0]];
    case 2:
      return a.base + a.coef[0] * iv[a.slot[0]] + a.coef[1] * iv[a.slot[1]];
    case 3:
      return a.base + a.coef[0] * iv[a.slot[0]] + a.coef[1] * iv[a.slot[1]] + a.coef[2] * iv[a.slot[2]];
    default:
      break;
  }
  std::int64_t v = a.base;
  for (int t = 0; t < kMaxInlineTerms; ++t) v += a.coef[t] * iv[a.slot[t]];
  for (int t = kMaxInlineTerms; t < a.nterms; ++t) {
    const Term& x = spill[a.spill_first + t - kMaxInlineTerms];
    v += x.coef * iv[x.slot];
  }
  return v;
}

// The flat offset of an access the compiler could not prove in bounds: every axis index is
// checked, so a checker bug stops the program instead of touching memory it does not own.
std::int64_t checked_offset(const Access& x, const Term* spill, const std::int64_t* iv) {
  std::int64_t flat = 0;
  for (std::size_t k = 0; k < x.axes.size(); ++k) {
    const Affine& a = x.axes[k];
    __int128 v = a.base;
    for (int t = 0; t < a.nterms; ++t) {
      const bool inl = t < kMaxInlineTerms;
      const std::int64_t coef = inl ? a.coef[t] : spill[a.spill_first + t - kMaxInlineTerms].coef;
      const std::int32_t slot = inl ? a.slot[t] : spill[a.spill_first + t - kMaxInlineTerms].slot;
      v += static_cast<__int128>(coef) * iv[slot];
    }
    FP_INTERNAL_CHECK(v >= 0 && v < x.extents[k],
                      "access out of bounds on axis {} (index {}, extent {}): the checker must "
                      "reject this program",
                      k, static_cast<std::int64_t>(v), x.extents[k]);
    flat = flat * x.extents[k] + static_cast<std::int64_t>(v);
  }
  return flat;
}

// ---- the machine ----------------------------------------------------------------------------------

void execute(const Program& p, double* r, std::int64_t* iv, double* const* mem, const std::int64_t* sizes) {
  const Insn* const code = p.code.data();
  const Access* const acc = p.accesses.data();
  const Loop* const loops = p.loops.data();
  const Term* const spill = p.terms.data();
  const Insn* pc = code;
#define A r[in.a]
#define B r[in.b]
#define C r[in.c]
#define FP_ROUNDED_CASES(NAME, EXPR) \
  case Code::NAME##F64:              \
    r[in.d] = (EXPR);                \
    break;                           \
  case Code::NAME##F32:              \
    r[in.d] = round_f32(EXPR);       \
    break;                           \
  case Code::NAME##F16:              \
    r[in.d] = round_f16(EXPR);       \
    break;                           \
  case Code::NAME##BF16:             \
    r[in.d] = round_bf16(EXPR);      \
    break;
  for (;;) {
    const Insn& in = *pc++;
    switch (in.code) {
      case Code::Halt:
        return;
      case Code::Jump:
        pc = code + in.d;
        break;
      case Code::JumpIfZero:
        if (A == 0.0) pc = code + in.d;  // NaN != 0: the body runs
        break;
      case Code::LoopInit: {
        const Loop& l = loops[in.a];
        iv[l.slot] = l.backward ? l.to : l.from;
        break;
      }
      case Code::LoopNext: {
        const Loop& l = loops[in.a];
        if (l.backward) {
          if (--iv[l.slot] >= l.from) pc = code + in.d;
        } else if (++iv[l.slot] <= l.to) {
          pc = code + in.d;
        }
        break;
      }
      case Code::Zero:
        std::fill(mem[in.a], mem[in.a] + sizes[in.a], 0.0);
        break;
      case Code::Load: {
        const Access& x = acc[in.a];
        r[in.d] = mem[x.node][eval_affine(x.flat, spill, iv)];
        break;
      }
      case Code::Store: {
        const Access& x = acc[in.a];
        mem[x.node][eval_affine(x.flat, spill, iv)] = B;
        break;
      }
      case Code::LoadChecked: {
        const Access& x = acc[in.a];
        r[in.d] = mem[x.node][checked_offset(x, spill, iv)];
        break;
      }
      case Code::StoreChecked: {
        const Access& x = acc[in.a];
        mem[x.node][checked_offset(x, spill, iv)] = B;
        break;
      }
      case Code::Embed:
        r[in.d] =
            round_to(static_cast<Prec>(in.b),
                     static_cast<double>(eval_affine(p.affines[static_cast<std::size_t>(in.a)], spill, iv)));
        break;
      case Code::Mov:
        r[in.d] = A;
        break;
      case Code::SetZero:
        r[in.d] = 0.0;
        break;
      case Code::Cvt:
        r[in.d] = round_to(static_cast<Prec>(in.b), A);
        break;
        FP_ROUNDED_CASES(Add, A + B)
        FP_ROUNDED_CASES(Sub, A - B)
        FP_ROUNDED_CASES(Mul, A * B)
        FP_ROUNDED_CASES(Div, A / B)
        FP_ROUNDED_CASES(Sqrt, std::sqrt(A))
        case Code::ExpF64:
          r[in.d] = fp_exp64(A);
          break;
        case Code::ExpF32:  // A is an f32 value: exact as a float
          r[in.d] = static_cast<double>(fpc_exp32(static_cast<float>(A)));
          break;
        case Code::ExpF16:
          r[in.d] = fpc_exp_f16(A);
          break;
        case Code::ExpBF16:
          r[in.d] = fpc_exp_bf16(A);
          break;
      case Code::FmaF64:
        r[in.d] = std::fma(A, B, C);
        break;
      case Code::FmaF32:
        r[in.d] = fma_narrow(Prec::F32, A, B, C);
        break;
      case Code::FmaF16:
        r[in.d] = fma_narrow(Prec::F16, A, B, C);
        break;
      case Code::FmaBF16:
        r[in.d] = fma_narrow(Prec::BF16, A, B, C);
        break;
      case Code::MaxF:
        r[in.d] = fmax_nan(A, B);
        break;
      case Code::MinF:
        r[in.d] = fmin_nan(A, B);
        break;
      case Code::Eq:
        r[in.d] = A == B ? 1.0 : 0.0;
        break;
      case Code::Lt:
        r[in.d] = A < B ? 1.0 : 0.0;
        break;
      case Code::NegF:
        r[in.d] = -A;
        break;
      case Code::AbsF:
        r[in.d] = std::fabs(A);
        break;
      case Code::Where:
        r[in.d] = A != 0.0 ? B : C;
        break;
      case Code::UnGeneric:
        r[in.d] = apply_unop(static_cast<UnOp>(in.b & 0xff), static_cast<Prec>(in.b >> 8), A);
        break;
      case Code::BinGeneric:
        r[in.d] = apply_binop(static_cast<BinOp>(in.c & 0xff), static_cast<Prec>(in.c >> 8), A, B);
        break;
    }
  }
#undef FP_ROUNDED_CASES
#undef A
#undef B
#undef C
}

}  // namespace

CompiledRoutine::CompiledRoutine(const Routine& routine)
    : nodes_(routine.nodes), program_(interp::compile(routine)) {}

TensorMap CompiledRoutine::run(const TensorMap& inputs, const InterpretOptions& opts) const {
  std::vector<std::vector<double>> cells(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (n.is_input)
      bind_input(n, inputs, opts.source_name, cells[i]);
    else
      cells[i].assign(static_cast<std::size_t>(n.cell_count()), 0.0);
  }
  std::vector<double*> mem(cells.size());
  std::vector<std::int64_t> sizes(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    mem[i] = cells[i].data();
    sizes[i] = static_cast<std::int64_t>(cells[i].size());
  }
  // At least one register and one counter, so operand fields of 0 always name valid storage.
  std::vector<double> regs = program_.reg_init;
  regs.resize(std::max<std::size_t>(regs.size(), 1));
  std::vector<std::int64_t> counters(static_cast<std::size_t>(std::max(program_.counter_slots, 1)), 0);
  execute(program_, regs.data(), counters.data(), mem.data(), sizes.data());

  TensorMap out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!n.is_output) continue;
    Tensor t;
    t.prec = n.prec;
    t.dims = n.dims;
    t.data = std::move(cells[i]);
    out.emplace(n.name, std::move(t));
  }
  return out;
}

TensorMap interpret(const Routine& routine, const TensorMap& inputs, const InterpretOptions& opts) {
  return CompiledRoutine(routine).run(inputs, opts);
}

}  // namespace fp
