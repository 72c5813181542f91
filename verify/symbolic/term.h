#pragma once
// Hash-consed terms: the values a routine computes, as expressions over its input cells.
//
// A term is one operation of core/ir.h's SEMANTICS at one precision, applied to terms. The store
// builds every term exactly once (structurally equal ⇒ the same pointer), so comparing two cells'
// values for syntactic identity is one pointer comparison, and a term DAG is shared between the
// source and the target of a rewrite when both run into the same store.
//
// Meaning (the encodings in verify/smt/ and the evaluator below implement exactly this):
//   Var    the value of one input cell (node, flat cell index) at the node's precision
//   Const  a value representable at `prec` (NaN is one value; -0 and +0 are two)
//   Cvt    conversion of args[0] to `prec` (core/ir.h "Conversions")
//   Neg … Fma  the IR operation at `prec`, whose operands are ALREADY at `prec` (the store inserts
//          the conversions, as the semantics says: operands are first converted), except Where's
//          condition args[0], which keeps its own precision (only "!= 0" matters; NaN is true)
//   Exp    exp.prec: a deterministic function per precision (fp_exp64 rounded). The SMT encoding
//          treats it as an uninterpreted function (plus its exactly specified special values),
//          which is sound for bitwise equality: a proof holds for every implementation of exp.
//   Pow    the C library's pow (implementation-defined): uninterpreted as well.
//
// The store folds operations on constants (with core/numerics.h, i.e. the semantics themselves),
// drops conversions to a term's own precision, and narrows a conversion of a value that is exactly
// a value of the target precision: cvt.f16(cvt.f32(x.f16)) = x, and cvt.f16(max.f32(cvt.f32(a),
// cvt.f32(b))) = max.f16(a, b) (max and min return an operand or NaN, the same at every
// precision). Nothing else is simplified: every rule is an identity of the semantics, checked by
// the evaluator tests; anything beyond that is left to the solver.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"

namespace fp::verify {

enum class TermOp : std::uint8_t {
  Var,
  Const,
  Cvt,
  Neg,
  Exp,
  Sqrt,
  Abs,
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  Pow,
  Eq,
  Lt,
  Where,
  Fma,
};
const char* term_op_name(TermOp op);

struct Term {
  TermOp op = TermOp::Const;
  Prec prec = Prec::F32;
  std::uint8_t nargs = 0;
  // An Exp or Pow occurs in this term (the value depends on an approximated function).
  bool approx = false;
  std::uint32_t id = 0;  // dense, in creation order: every argument has a smaller id
  const Term* args[3] = {nullptr, nullptr, nullptr};
  double value = 0;       // Const
  std::uint32_t var = 0;  // Var: index into TermStore::vars()
  std::size_t hash = 0;
};
using TermP = const Term*;

struct VarInfo {
  std::string node;
  std::int64_t cell = 0;  // row-major flat index
  Prec prec = Prec::F32;
};

// Thrown when a store would exceed its term budget (a resource limit, reported as unknown).
class TermLimitExceeded : public std::runtime_error {
 public:
  explicit TermLimitExceeded(std::size_t limit);
  std::size_t limit() const { return limit_; }

 private:
  std::size_t limit_;
};

inline constexpr std::size_t kDefaultMaxTerms = 4'000'000;

class TermStore {
 public:
  explicit TermStore(std::size_t max_terms = kDefaultMaxTerms);
  TermStore(const TermStore&) = delete;
  TermStore& operator=(const TermStore&) = delete;

  TermP var(const std::string& node, std::int64_t cell, Prec p);
  TermP constant(double v, Prec p);  // v is rounded to p
  TermP convert(TermP a, Prec to);
  TermP unary(UnOp op, TermP a, Prec p);
  TermP binary(BinOp op, TermP a, TermP b, Prec p);
  TermP ternary(TernOp op, TermP a, TermP b, TermP c, Prec p);

  std::size_t size() const { return terms_.size(); }
  std::size_t max_terms() const { return max_terms_; }
  const std::vector<VarInfo>& vars() const { return vars_; }
  TermP term(std::uint32_t id) const { return &terms_[id]; }

 private:
  static bool same_structure(const Term& a, const Term& b);
  TermP intern(Term t);
  void grow_slots();
  TermP make(TermOp op, Prec p, std::initializer_list<TermP> args);
  TermP narrow(TermP t, Prec p);

  std::size_t max_terms_;
  std::deque<Term> terms_;
  // Open addressing, linear probing, at most half full: a slot holds a term's id + 1 (0: empty) and
  // the high half of its hash, so a probe touches the term only when those agree. (A node-based
  // set spent 35-45% of a verify run in its find and rehash: a cache miss per node per probe.)
  struct Slot {
    std::uint32_t id_plus_1 = 0;
    std::uint32_t hash_high = 0;
  };
  std::vector<Slot> slots_;
  std::vector<VarInfo> vars_;
  std::map<std::pair<std::string, std::int64_t>, std::uint32_t> var_index_;
};

// The value of a term on concrete inputs (one tensor per input node, as the interpreter takes
// them), by core/numerics.h. Memoized over the store; iterative, so deep terms (long summation
// chains) do not recurse.
class TermEvaluator {
 public:
  TermEvaluator(const TermStore& store, const TensorMap& inputs);
  double eval(TermP t);

 private:
  const TermStore& store_;
  const TensorMap& inputs_;
  std::vector<double> memo_;
  std::vector<std::uint8_t> done_;
};

// A short printed form for messages, cut at `max_depth` levels ("…").
std::string print_term(TermP t, int max_depth = 4);

// Counts the distinct terms reachable from `roots`.
std::size_t reachable_count(const std::vector<TermP>& roots);

}  // namespace fp::verify
