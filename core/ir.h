#pragma once
// The flashproof loop IR.
//
// ============================================================================================
// SEMANTICS — the one definition every consumer implements (the interpreter, the SMT encoding,
// the C and CUDA code generators). docs/semantics.md is the long form of this block; where the
// two differ, fix both.
// ============================================================================================
//
// Values. Every scalar value has a precision: f64 (IEEE binary64), f32 (binary32), f16 (IEEE
// binary16), bf16 (bfloat16: binary32's 8-bit exponent, 7 stored fraction bits) or i32 (two's
// complement 32-bit integer). A tensor node stores every cell at the node's precision; a scalar
// local holds one value at the local's precision.
//
// Rounding. Every operation carries the precision it is computed at (Expr::prec). Its operands
// are first CONVERTED to that precision, the exact mathematical result of the operation on the
// converted operands is computed, and that result is ROUNDED once to the precision:
// round-to-nearest, ties-to-even, with gradual underflow (subnormals kept, never flushed) and
// overflow to ±inf. f16 and bf16 are emulated exactly (the result equals what native IEEE
// arithmetic of that format would give). Nothing is ever contracted (a*b+c is two roundings;
// only the explicit `fma` op rounds once) and no excess precision is kept between operations.
//
// Conversions. float → float: round-to-nearest-even as above (NaN stays NaN, quiet; its payload
// is not part of the semantics: every NaN is the same value). float → i32: truncation toward
// zero, saturating at INT32_MIN/INT32_MAX, NaN → 0. i32 → float: rounded to nearest-even. A store
// (`set` to a node cell, `:=` to a local) converts the value to the destination's precision.
// `cast.p(a)` is a converted to p (the conversion is the whole operation). A constant is its value
// (Expr::value, a binary64: the text format reads a decimal as its nearest double) rounded to the
// expression's precision.
//
// Arithmetic on floats. add, sub, mul, div, sqrt, fma: IEEE 754 correctly rounded, with IEEE
// special values (x/0 = ±inf, 0/0 = NaN, inf-inf = NaN, ...). neg flips the sign (also of 0 and
// NaN). abs clears it.
// max / min: if either operand is NaN the result is NaN (NaN propagates: a NaN score poisons a
// max-reduction, as composed softmax requires). Otherwise the larger (smaller) value, with
// max(-0, +0) = max(+0, -0) = +0 and min(-0, +0) = min(+0, -0) = -0 (IEEE 754-2019
// maximum/minimum).
// eq / lt: the IEEE comparison of the converted operands (any comparison with NaN is false;
// -0 == +0), giving 1 or 0 at the operation's precision.
// where(c, a, b): c is evaluated at its own precision; the result is a if c != 0 (a NaN
// condition counts as true, as in C) else b, converted to the operation's precision. Only the
// selected operand's value matters, but both are evaluated (evaluation has no side effects).
// exp: a deterministic function per precision, identical in every executor:
//   exp.f64(x) = fp_exp64(x), flashproof's own binary64 exponential (core/numerics.h: Cody–Waite
//   reduction by ln2/2^k with k = 6 and a table of 2^(j/64), degree-6 polynomial, exact scaling,
//   no FMA); its maximum error is stated in docs/semantics.md (measured, < 1 ulp).
//   exp.f32(x) = fp_exp32(x), flashproof's own binary32 exponential (a fixed branch-free sequence
//   of binary32 + - *: Cody–Waite reduction by ln2, degree-7 polynomial, scaling in two steps; not
//   correctly rounded: its measured maximum error over all 2^32 inputs is in docs/semantics.md).
//   exp.f16/bf16(x) = round_to_prec(fp_exp32(x)) (x is exact in binary32).
//   exp(-inf) = +0, exp(+inf) = +inf, exp(NaN) = NaN, exp(±0) = 1 exactly.
// pow(a, b): the C library's pow on binary64 of the converted operands, rounded to the precision
//   (at i32: converted by the float → i32 rule) (implementation-defined: the only operation whose
//   value may differ between executors; rewrites never emit it).
//
// Arithmetic on i32. add, sub, mul wrap modulo 2^32; div truncates toward zero with x/0 = 0 and
// INT32_MIN/-1 = INT32_MIN; max/min as usual; eq/lt give 1/0; neg wraps; abs(INT32_MIN) =
// INT32_MIN. exp, sqrt and fma are float-only (the checker rejects them at i32).
//
// Evaluation order. Statements run in program order; `for` runs its body for sym = from, from+1,
// ..., to (inclusive; a loop with to < from runs zero times and is "dead"); `scan` likewise
// (forward: from up to to; backward: to down to from). Within an expression, the order in which
// operands are evaluated is unobservable (expressions have no effects).
//
// Scan. Before the first iteration every carried `prev` local is set to its `init` (evaluated
// once, converted to the carried precision). Each iteration runs the body, which reads the old
// state through `prev` and writes the new state to `next`; after the body, every `prev` takes the
// value of its `next` simultaneously. The final state is not readable after the scan: a body
// that wants it writes it to a tensor cell. Contract (checked by the well-formedness checker):
// prev/next names pairwise distinct; `next` written exactly once, as a top-level statement of
// the body, and read only after that write; nothing writes `prev`; `init` reads no carried local
// and does not mention the scan symbol; the range is non-empty; carried state is never stored as
// a tensor cell of a node (it lives in locals only).
//
// Memory. A node's cells are all 0 at the start of a routine except inputs, which hold the bound
// data. `zero N` sets every cell of N to +0 (0 for i32). `N[i] = e` stores one cell. Reading or
// writing outside a node's extent is not a runtime condition: the checker proves every access in
// bounds for every iteration before anything runs, and rejects the program otherwise.
//
// Locals. `local x : prec` declares a scalar local, scoped to the rest of the enclosing statement
// list (or scan body); each time the declaration runs (e.g. on every iteration of an enclosing
// loop) the local starts again at +0. Carried prev/next locals are scoped to their scan's body.
//
// Memory modes only decide placement (stored buffer or recomputed at each read); they never
// change a value, because recomputation is deterministic.
// ============================================================================================

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fp {

// The version of the SEMANTICS above: bumped whenever a rule changes meaning (docs/semantics.md).
// Cached proofs are keyed by it (verify/proof_cache.h).
inline constexpr const char* kSemanticsVersion = "1";

// ---- precisions and memory modes -------------------------------------------------------------

enum class Prec : std::uint8_t { F64, F32, F16, BF16, I32 };

// Name in the text format: "f64", "f32", "f16", "bf16", "i32".
const char* prec_name(Prec p);
std::optional<Prec> parse_prec(std::string_view s);
bool is_float(Prec p);
// Bytes one cell occupies in a buffer.
int prec_bytes(Prec p);
// The precision a running state (a scan's carried max and sum) is kept at for values of p: f64
// for f64, f32 for every other float.
Prec state_prec(Prec p);

// How a node is placed. The frontend emits Materialized for intermediates; the placement pass may
// turn them Virtual (recomputed at each read) or keep them stored; Requested is never changed.
enum class MemMode : std::uint8_t { Virtual, Local, Materialized, Requested };
const char* mem_mode_name(MemMode m);
std::optional<MemMode> parse_mem_mode(std::string_view s);

// Source position of a construct parsed from text; line 0 means "built in memory".
struct SrcLoc {
  int line = 0;
  int col = 0;
};

// ---- nodes ------------------------------------------------------------------------------------

// A tensor: every cell has the node's precision; dims are extents (each >= 1).
struct Node {
  std::string name;
  std::vector<std::int64_t> dims;
  Prec prec = Prec::F32;
  MemMode mode = MemMode::Materialized;
  bool is_input = false;   // bound by the caller before the routine runs
  bool is_output = false;  // read back by the caller after the routine runs
  SrcLoc loc;

  std::int64_t cell_count() const;
  bool operator==(const Node& o) const;  // ignores loc
};

// ---- indices ----------------------------------------------------------------------------------

// An affine index Σ coef·sym + offset over loop (or scan) symbols. A plain iterator is one term
// with coefficient 1 and offset 0; a fixed index has no terms.
struct Index {
  struct Term {
    std::int64_t coef = 1;
    std::string sym;
    bool operator==(const Term&) const = default;
  };
  std::vector<Term> terms;  // canonical: no zero coefficient, no symbol twice (see canonical())
  std::int64_t offset = 0;

  static Index fixed(std::int64_t k) { return Index{{}, k}; }
  static Index iter(std::string sym) { return Index{{Term{1, std::move(sym)}}, 0}; }
  bool is_fixed() const { return terms.empty(); }
  bool is_plain_iterator() const { return terms.size() == 1 && terms[0].coef == 1 && offset == 0; }
  // Merges repeated symbols and drops zero coefficients, keeping first-appearance order.
  Index canonical() const;
  bool mentions(const std::string& sym) const;
  // This index with each symbol in `by` replaced by its index there (others kept), canonical.
  Index substituted(const std::map<std::string, Index>& by) const;
  bool operator==(const Index&) const = default;
};

// ---- scalar expressions ---------------------------------------------------------------------

// One list of expression kinds drives the enum, the printer, the parser and the visitors.
enum class ExprKind : std::uint8_t {
  Get,         // read of node cell: node[indices]; prec = the node's precision
  GetLocal,    // read of a scalar local; prec = the local's precision
  Const,       // constant value rounded to prec
  EmbedIndex,  // the integer value of an affine index, converted to prec
  Unary,       // op(a) at prec
  Binary,      // op(a, b) at prec
  Ternary,     // op(a, b, c) at prec
};

enum class UnOp : std::uint8_t { Neg, Exp, Sqrt, Abs, Cast };
enum class BinOp : std::uint8_t { Add, Sub, Mul, Div, Max, Min, Pow, Eq, Lt };
enum class TernOp : std::uint8_t { Where, Fma };

const char* unop_name(UnOp op);     // "neg", "exp", "sqrt", "abs", "cast"
const char* binop_name(BinOp op);   // "add", "sub", "mul", "div", "max", "min", "pow", "eq", "lt"
const char* ternop_name(TernOp op); // "where", "fma"
std::optional<UnOp> parse_unop(std::string_view s);
std::optional<BinOp> parse_binop(std::string_view s);
std::optional<TernOp> parse_ternop(std::string_view s);

struct Expr;
using ExprP = std::shared_ptr<const Expr>;

// Immutable; shared freely between routines (a mutator that changes nothing returns the same
// pointer).
struct Expr {
  ExprKind kind = ExprKind::Const;
  Prec prec = Prec::F32;
  std::string name;            // Get: node name; GetLocal: local name
  std::vector<Index> indices;  // Get: one per node axis; EmbedIndex: exactly one
  double value = 0.0;          // Const (an i32 constant is an integral double)
  std::uint8_t op = 0;         // Unary/Binary/Ternary: the UnOp/BinOp/TernOp
  std::vector<ExprP> args;     // Unary: 1, Binary: 2, Ternary: 3
  SrcLoc loc;

  UnOp unop() const { return static_cast<UnOp>(op); }
  BinOp binop() const { return static_cast<BinOp>(op); }
  TernOp ternop() const { return static_cast<TernOp>(op); }
};

// Structural equality (ignores loc). Constants compare by bit pattern of the double, except that
// every NaN equals every NaN.
bool equal(const Expr& a, const Expr& b);
bool equal(const ExprP& a, const ExprP& b);

// Builders.
ExprP get(std::string node, std::vector<Index> idx, Prec node_prec);
ExprP get_local(std::string name, Prec prec);
ExprP constant(double v, Prec prec);
ExprP embed_index(Index idx, Prec prec);
ExprP unary(UnOp op, ExprP a, Prec prec);
ExprP binary(BinOp op, ExprP a, ExprP b, Prec prec);
ExprP ternary(TernOp op, ExprP a, ExprP b, ExprP c, Prec prec);

// ---- statements -----------------------------------------------------------------------------

enum class StmtKind : std::uint8_t {
  Seq,           // body in order
  For,           // for sym in from..to (inclusive, serial) { body }
  Scan,          // loop with carried scalar state (see SEMANTICS above)
  Zero,          // zero node: every cell := +0
  Set,           // node[indices] = value
  DeclareLocal,  // local name : prec
  SetLocal,      // name := value
  If,            // if cond { body }: runs body when cond != 0 (NaN counts as true)
  Comment,       // no effect; text kept by printer/parser
  Noop,          // no effect
};

enum class ScanDir : std::uint8_t { Forward, Backward };

// One carried value of a scan: read as `prev`, written as `next`, both at `prec`.
struct Carried {
  std::string prev;
  std::string next;
  Prec prec = Prec::F32;
  ExprP init;
};

struct Stmt;
using StmtP = std::shared_ptr<const Stmt>;

struct Stmt {
  StmtKind kind = StmtKind::Noop;
  std::vector<StmtP> body;     // Seq, For, Scan, If
  std::string sym;             // For/Scan: loop symbol
  std::int64_t from = 0;       // For/Scan: inclusive lower bound
  std::int64_t to = -1;        // For/Scan: inclusive upper bound
  ScanDir dir = ScanDir::Forward;
  std::vector<Carried> carried;  // Scan
  std::string name;            // Zero/Set: node; DeclareLocal/SetLocal: local; Comment: text
  std::vector<Index> indices;  // Set
  ExprP value;                 // Set/SetLocal value; If condition
  Prec prec = Prec::F32;       // DeclareLocal
  SrcLoc loc;

  bool is_dead_loop() const { return (kind == StmtKind::For || kind == StmtKind::Scan) && to < from; }
};

bool equal(const Stmt& a, const Stmt& b);
bool equal(const StmtP& a, const StmtP& b);

StmtP seq(std::vector<StmtP> body);
StmtP for_loop(std::string sym, std::int64_t from, std::int64_t to, std::vector<StmtP> body);
StmtP scan_loop(std::string sym, std::int64_t from, std::int64_t to, ScanDir dir,
                std::vector<Carried> carried, std::vector<StmtP> body);
StmtP zero(std::string node);
StmtP set(std::string node, std::vector<Index> idx, ExprP value);
StmtP declare_local(std::string name, Prec prec);
StmtP set_local(std::string name, ExprP value);
StmtP if_(ExprP cond, std::vector<StmtP> body);
StmtP comment(std::string text);
StmtP noop();

// Terse builders for routines written in C++ (tests, benchmarks): a materialized node; the plain
// iterators [s0, s1, ...]; and node[s0, s1, ...] read with plain iterators.
Node make_node(std::string name, std::vector<std::int64_t> dims, Prec prec, bool is_input = false,
               bool is_output = false);
std::vector<Index> iters(std::initializer_list<const char*> syms);
ExprP get_iters(std::string node, std::initializer_list<const char*> syms, Prec node_prec);

// ---- routines -------------------------------------------------------------------------------

// A program: named nodes and one statement tree. Node names are unique; inputs and outputs are the
// nodes flagged so, in declaration order.
struct Routine {
  std::string name;
  // Named integer facts about the program that analyses may use, e.g. `seq_q` and `seq_k` (query
  // and key lengths, set by the attention builder; the memory report counts buffers with two axes
  // of these lengths). Never change a value.
  std::map<std::string, std::int64_t> attrs;
  std::vector<Node> nodes;
  StmtP body;  // always a Seq

  const Node* find_node(std::string_view n) const;
  Node* find_node(std::string_view n);
  std::vector<const Node*> inputs() const;
  std::vector<const Node*> outputs() const;
};

bool equal(const Routine& a, const Routine& b);

}  // namespace fp
