#pragma once
// Tensor expressions: the frontend's program representation and its C++ builder.
//
// A Program is a list of named axes (each with an extent), tensors declared over those axes at a
// precision, and single assignments `name[axes] = rhs` in program order. An rhs is an expression
// over reads `t[a, b, ...]` (every index is an axis name), constants, axis index expressions,
// pointwise operations, comparisons and `where`; an assignment may reduce (sum or max) over the
// axes its rhs mentions that its target does not. docs/frontend.md is the user-facing description
// of the language and of how each assignment lowers to one loop nest (frontend/lower.h).
//
// The builder validates every call as it is made, so a program that finished building is well
// formed: every read names a defined tensor through axes whose extents match its dims, every
// tensor is assigned once, before it is read. Errors are UserError(kExitMalformed) located at the
// SrcLoc passed with the offending construct (line 0 for programs built in memory).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ir.h"

namespace fp::fe {

// ---- expressions ---------------------------------------------------------------------------

enum class TeOp : std::uint8_t {
  Read,   // tensor[axes]
  Const,  // a number (inf and nan included)
  Index,  // an affine expression of axis positions (its integer value)
  Neg,
  Exp,
  Add,
  Sub,
  Mul,
  Div,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,  // comparisons: 1 when true, 0 when false
  And,
  Or,
  Not,    // on truth values: nonzero (NaN included) is true
  Where,  // where(cond, a, b)
};

struct TeNode;
// Immutable and shared, like ir.h's expressions.
using Te = std::shared_ptr<const TeNode>;

struct TeNode {
  TeOp op = TeOp::Const;
  std::string tensor;             // Read
  std::vector<std::string> axes;  // Read: one axis name per tensor dimension
  double value = 0.0;             // Const
  bool integer_literal = false;   // Const written as an integer: may take part in index arithmetic
  fp::Index index;                // Index: symbols are axis names
  std::vector<Te> args;           // operands
  SrcLoc loc;
};

// Builders (loc is where the construct was written; default: built in memory).
Te read(std::string tensor, std::vector<std::string> axes, SrcLoc loc = {});
Te cst(double v, SrcLoc loc = {});
Te int_literal(std::int64_t v, SrcLoc loc = {});
Te ix(fp::Index idx, SrcLoc loc = {});
Te ix(std::string axis, SrcLoc loc = {});
Te unary(TeOp op, Te a, SrcLoc loc = {});
Te binary(TeOp op, Te a, Te b, SrcLoc loc = {});
Te where(Te cond, Te a, Te b, SrcLoc loc = {});
inline Te neg(Te a) {
  return unary(TeOp::Neg, std::move(a));
}
inline Te exp(Te a) {
  return unary(TeOp::Exp, std::move(a));
}
inline Te operator+(Te a, Te b) {
  return binary(TeOp::Add, std::move(a), std::move(b));
}
inline Te operator-(Te a, Te b) {
  return binary(TeOp::Sub, std::move(a), std::move(b));
}
inline Te operator*(Te a, Te b) {
  return binary(TeOp::Mul, std::move(a), std::move(b));
}
inline Te operator/(Te a, Te b) {
  return binary(TeOp::Div, std::move(a), std::move(b));
}
inline Te lt(Te a, Te b) {
  return binary(TeOp::Lt, std::move(a), std::move(b));
}
inline Te le(Te a, Te b) {
  return binary(TeOp::Le, std::move(a), std::move(b));
}
inline Te or_(Te a, Te b) {
  return binary(TeOp::Or, std::move(a), std::move(b));
}
inline Te and_(Te a, Te b) {
  return binary(TeOp::And, std::move(a), std::move(b));
}

bool is_comparison(TeOp op);
// True for comparisons and the logical connectives: their value is always 0 or 1.
bool is_boolean(TeOp op);

// The expression as one affine index when it is built only from axis positions, integer
// literals, +, -, negation and multiplication by an integer literal; nullopt otherwise.
std::optional<fp::Index> as_index(const Te& e);

// Calls f on e and every sub-expression, pre-order.
void for_each_te(const Te& e, const std::function<void(const TeNode&)>& f);

// ---- programs ------------------------------------------------------------------------------

struct AxisDecl {
  std::string name;
  std::int64_t extent = 1;
  SrcLoc loc;
};

struct TensorDecl {
  std::string name;
  std::vector<std::string> axes;   // the axes it was declared (or first assigned) over
  std::vector<std::int64_t> dims;  // their extents
  Prec prec = Prec::F32;
  bool is_input = false;
  bool is_output = false;
  SrcLoc loc;
};

enum class Reduce : std::uint8_t { None, Sum, Max };

// target[axes] = rhs, or a reduction of rhs over `reduced` (the axes rhs mentions that the target
// does not, in the order the program listed them or, implicitly, in order of first appearance).
struct Assignment {
  std::string target;
  std::vector<std::string> axes;
  Prec prec = Prec::F32;
  Reduce reduce = Reduce::None;
  std::vector<std::string> reduced;
  Te rhs;
  SrcLoc loc;
};

struct Program {
  std::string name = "main";
  std::map<std::string, std::int64_t> attrs;
  std::vector<AxisDecl> axes;
  std::vector<TensorDecl> tensors;  // declaration order: inputs as declared, others as assigned
  std::vector<Assignment> assignments;

  const AxisDecl* find_axis(std::string_view n) const;
  const TensorDecl* find_tensor(std::string_view n) const;
  TensorDecl* find_tensor(std::string_view n);
};

// Largest extent of one axis and largest cell count of one tensor the frontend accepts (the text
// format's limit on one node).
inline constexpr std::int64_t kMaxCells = std::int64_t{1} << 40;

// Builds a Program, validating each step (see the header comment). `file` names the source in
// error messages.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::string name = "main", std::string file = "");

  void set_name(std::string name, SrcLoc loc = {});
  void attr(std::string key, std::int64_t value, SrcLoc loc = {});
  void axis(std::string name, std::int64_t extent, SrcLoc loc = {});
  void input(std::string name, std::vector<std::string> axes, Prec prec, SrcLoc loc = {});
  // target[axes] = rhs. With reduce None, axes the rhs mentions beyond the target are summed
  // (einsum-style contraction); with Sum or Max, `over` must list exactly those axes.
  void assign(std::string target, std::vector<std::string> axes, Prec prec, Te rhs,
              Reduce reduce = Reduce::None, std::vector<std::string> over = {}, SrcLoc loc = {});
  void output(std::string name, SrcLoc loc = {});

  const Program& program() const { return prog_; }
  // The program; throws when it has no output.
  Program finish() const;

 private:
  [[noreturn]] void fail(SrcLoc loc, const std::string& msg) const;
  void check_new_name(const std::string& name, SrcLoc loc) const;
  void check_rhs(const Te& e) const;
  void check_index_comparison(const TeNode& n) const;
  std::vector<std::string> mentioned_axes(const Te& e) const;

  Program prog_;
  std::string file_;
};

// Names reserved by the IR text format or by the frontend language; they cannot name an axis,
// a tensor or the routine.
bool is_reserved_name(std::string_view name);
bool is_identifier(std::string_view name);

}  // namespace fp::fe
