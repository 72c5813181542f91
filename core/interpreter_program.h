#pragma once
// The interpreter's compiled form: a routine lowered once to flat register bytecode (node and
// local names resolved to slots, affine indices to strides over loop-counter slots, expressions
// to three-address instructions specialised by precision), then executed by a switch loop.
// interpret() compiles and runs; callers that run one routine many times (benchmarks, the
// equivalence checker's sampling) keep a CompiledRoutine and call run() repeatedly.

#include <cstdint>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"

namespace fp {

namespace interp {

// Instruction codes. Float arithmetic comes in one code per rounding precision (the operands are
// already converted); i32 arithmetic, pow and everything rare go through the generic codes, which
// call core/numerics.h's apply_* (the reference definitions) directly.
enum class Code : std::uint8_t {
  Halt,
  Jump,         // pc = d
  JumpIfZero,   // if r[a] == 0 (NaN is not zero): pc = d
  LoopInit,     // loop a: counter := first value
  LoopNext,     // loop a: step; if still in range: pc = d
  Zero,         // node a: every cell := +0
  Load,         // r[d] = node cell at access a
  Store,        // node cell at access a = r[b]
  LoadChecked,  // Load/Store whose bounds the compiler could not prove: checked per axis
  StoreChecked,
  Embed,    // r[d] = round_to(prec b, value of affine a)
  Mov,      // r[d] = r[a]
  SetZero,  // r[d] = +0
  Cvt,      // r[d] = round_to(prec b, r[a])
  // Per rounding precision: F64, F32, F16, BF16 (in that order, see arith()).
  // clang-format off
  AddF64, AddF32, AddF16, AddBF16,
  SubF64, SubF32, SubF16, SubBF16,
  MulF64, MulF32, MulF16, MulBF16,
  DivF64, DivF32, DivF16, DivBF16,
  SqrtF64, SqrtF32, SqrtF16, SqrtBF16,
  ExpF64, ExpF32, ExpF16, ExpBF16,
  FmaF64, FmaF32, FmaF16, FmaBF16,
  // clang-format on
  // Independent of the precision (operands already converted, result exact).
  MaxF,
  MinF,  // floats: NaN propagates, signed zeros ordered; also exact for i32 values
  Eq,
  Lt,
  NegF,
  AbsF,
  Where,  // r[d] = r[a] != 0 ? r[b] : r[c]
  // Reference definitions: b/c hold (op | prec << 8).
  UnGeneric,   // r[d] = apply_unop(op, prec, r[a]); prec/op in b
  BinGeneric,  // r[d] = apply_binop(op, prec, r[a], r[b]); prec/op in c
};

struct Insn {
  Code code = Code::Halt;
  std::int32_t d = 0;
  std::int32_t a = 0;
  std::int32_t b = 0;
  std::int32_t c = 0;
};

// Σ coef · counter[slot] + base, at most kMaxInlineTerms terms held inline (deeper nests spill to
// the shared `terms` table).
constexpr int kMaxInlineTerms = 4;
struct Affine {
  std::int64_t base = 0;
  std::int32_t nterms = 0;
  std::int32_t slot[kMaxInlineTerms] = {};
  std::int64_t coef[kMaxInlineTerms] = {};
  std::int32_t spill_first = 0;  // terms beyond the inline ones: terms[spill_first ...]
};

struct Term {
  std::int32_t slot = 0;
  std::int64_t coef = 0;
};

// One node access: the flat cell offset, plus (for checked accesses) the per-axis indices.
struct Access {
  std::int32_t node = 0;
  Affine flat;
  bool checked = false;
  std::vector<Affine> axes;  // checked only
  std::vector<std::int64_t> extents;
};

struct Loop {
  std::int32_t slot = 0;
  std::int64_t from = 0;
  std::int64_t to = 0;
  bool backward = false;
};

struct Program {
  std::vector<Insn> code;
  std::vector<Access> accesses;
  std::vector<Affine> affines;  // Embed
  std::vector<Term> terms;      // spilled affine terms
  std::vector<Loop> loops;
  std::vector<double> reg_init;  // constants hold their rounded value, everything else +0
  std::int32_t counter_slots = 0;
  std::int32_t scalar_ops = 0;  // arithmetic instructions in the program text (for statistics)
};

// Lowers a checked routine. Structural violations the checker rules out (unknown names, wrong
// arity or index count, exp/sqrt/fma at i32, a Get whose precision differs from its node's) are
// internal errors.
Program compile(const Routine& routine);

}  // namespace interp

class CompiledRoutine {
 public:
  explicit CompiledRoutine(const Routine& routine);
  // Same contract as interpret().
  TensorMap run(const TensorMap& inputs, const InterpretOptions& opts = {}) const;
  const interp::Program& program() const { return program_; }

 private:
  std::vector<Node> nodes_;
  interp::Program program_;
};

}  // namespace fp
