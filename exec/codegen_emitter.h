#pragma once
// The statement and expression emitter shared by the C and the CUDA generators (internal to exec/).
// It turns IR into C99 (or CUDA C++) that computes exactly core/ir.h's SEMANTICS:
//
//  - values: f64 as double, f32 as float (IEEE single; every f32 operation is one float operation,
//    which equals the interpreter's binary64-then-round by the double-rounding theorem, 53 >= 2*24+2),
//    f16 and bf16 as double holding the exact value, rounded after every operation with
//    core/numerics_c.h (the interpreter's own functions), i32 as int32 with numerics_c.h's wrapping
//    rules; conversions are numerics_c.h's; exp is fpc_exp64 at f64, fpc_exp32 at f32 and it
//    rounded at f16/bf16 (exp_call); fma is C's fma at f64 and
//    fpc_fma_narrow below;
//  - storage: every buffer holds cells at the node's width (f16/bf16 as their 16-bit patterns),
//    so the bytes allocated are the memory report's;
//  - locals are C locals (a fresh C name per declaration, so shadowing and redeclaration follow the
//    IR's scoping exactly); scans are loops with carried locals rotated after the body;
//  - a read of a virtual node replays its definition at the read (pointwise: the value with the
//    definition's loop symbols bound to the read's indices; reduction: the fill, then the
//    accumulation over the reduced loops in their order, in a scalar), converted to the node's
//    precision exactly as the store would have been.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "exec/program_plan.h"

namespace fp::codegen {

enum class Dialect { C, Cuda };

// An affine integer expression over C variables: Σ coef·var + off.
struct Aff {
  std::map<std::string, std::int64_t> terms;
  std::int64_t off = 0;
  std::string str() const;
};

const char* ctype(Prec p, Dialect d);  // the type a value of precision p is carried in
const char* stype(Prec p);             // the type of one stored cell
// exp.p of `arg`, the C of a value of precision p (f32: a float, or a double holding an f32
// value; f16/bf16: a double): numerics_c.h's fpc_exp64, fpc_exp32, fpc_exp_f16, fpc_exp_bf16.
std::string exp_call(Prec p, const std::string& arg);

class Emitter {
 public:
  Emitter(const ProgramPlan& plan, Dialect dialect) : plan_(plan), dialect_(dialect) {}

  // Text output.
  std::string& out() { return out_; }
  void line(const std::string& s);
  void open(const std::string& s);  // "s {" and indent
  void close(const std::string& s = "}");
  int indent() const { return indent_; }

  std::string fresh(const std::string& base);  // t12, i3, ...
  std::string fresh_named(char prefix, const std::string& name);

  // The C pointer variable holding node `name`'s buffer.
  std::string buffer(const std::string& name) const;
  std::int64_t node_bytes(const Node& n) const;

  // Loop symbol bindings.
  void bind_sym(const std::string& sym, Aff a) { env_[sym] = std::move(a); }
  void unbind_sym(const std::string& sym) { env_.erase(sym); }
  Aff index_aff(const Index& idx) const;
  // Flat cell offset of node[indices] under the current bindings.
  Aff offset(const Node& n, const std::vector<Index>& indices) const;
  // A row-private node (exec/row_private.h) held, while privatized, in a private slice of
  // `width` lanes: its row axes (`row[k]`) dropped, its lane axis at index − `origin` (the lane,
  // 0 ≤ lane < width) with stride 1, its other axes in order after it (strides ×width).
  struct PrivateSlice {
    std::vector<bool> row;
    std::size_t lane_axis = 0;
    Aff origin;
    std::int64_t width = 16;
  };
  void privatize(const std::string& node, PrivateSlice slice) { private_[node] = std::move(slice); }
  void unprivatize(const std::string& node) { private_.erase(node); }
  // A node staged in a block-shared copy (the CUDA row kernel, exec/cuda_codegen.cpp): while
  // staged, a load of node[idx] reads `array` at the box offset of idx − base (row-major over
  // `extent`, the last axis fastest). Only loads: a staged node is never written where it is staged.
  struct StagedBox {
    std::string array;
    std::vector<Aff> base;
    std::vector<std::int64_t> extent;
  };
  void stage(const std::string& node, StagedBox box) { staged_[node] = std::move(box); }
  void unstage(const std::string& node) { staged_.erase(node); }
  // A hook on one scan (the CUDA row kernel): `prologue` emits code at the top of every iteration,
  // before the body, which is emitted under `if (guard)`; the carried locals rotate outside it.
  struct ScanHook {
    std::function<void()> prologue;
    std::string guard;
  };
  void hook_scan(const Stmt* scan, ScanHook hook) { scan_hooks_[scan] = std::move(hook); }
  void unhook_scan(const Stmt* scan) { scan_hooks_.erase(scan); }

  // Local scopes.
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() { scopes_.pop_back(); }
  // Declares a local (fresh C name) in the innermost scope and returns the C name.
  std::string declare_local(const std::string& name, Prec p);
  void bind_local(const std::string& name, const std::string& cname, Prec p);

  // A node read replaced by a C lvalue (the scalar a reduction is kept in).
  void substitute(const std::string& node, std::string lvalue) { subst_[node] = std::move(lvalue); }
  void unsubstitute(const std::string& node) { subst_.erase(node); }
  // A node every read of which, in the code emitted until unpin_node, is at one cell whose value
  // `value` holds (a fused row's reduction result: exec/c_schedule_row_fusion.cpp row_fusion checks that every
  // read, also through replays, is at that cell). Unlike substitute(), it applies inside replays.
  void pin_node(const std::string& node, std::string value) { pinned_[node] = std::move(value); }
  void unpin_node(const std::string& node) { pinned_.erase(node); }
  // Gather hoisting, for a loop over lanes `j` (exec/c_schedule_lanes.cpp lane loops): while active, a
  // load whose offset has a stride other than 0 or 1 in `j` and otherwise only variables from
  // `outer` is read from a lane array filled by a separate loop emitted before the lane loop (a
  // plain strided copy vectorizes; the same load inside a loop of exp and friends keeps the whole
  // loop scalar). end_hoist() returns those lines.
  void begin_hoist(const std::string& j, const std::string& count, int width, std::set<std::string> outer);
  std::vector<std::string> end_hoist();
  // Panels, for a scalar loop (variable `t`) around lane loops: a load inside a lane loop whose
  // offset has stride 1 in `t`, a stride other than 0 or 1 in the lane variable, and otherwise only
  // variables from `outer`, is read from a panel [chunk][lanes] filled once per chunk of `t` with
  // row-contiguous reads (a gather per iteration of `t` would touch `lanes` lines each time, all
  // in one cache set when the row stride is a multiple of 4 KiB). end_panel() returns the panel
  // declarations and the fill loops (for the top of each chunk).
  // Nodes in `written` (those the enclosing band writes) are never panelled: a panel is filled
  // before the chunk's iterations run, so it would miss what they write.
  void begin_panel(const std::string& t, const std::string& t0, const std::string& count, int chunk,
                   const std::string& lanes, int width, std::set<std::string> outer,
                   std::set<std::string> written);
  std::pair<std::vector<std::string>, std::vector<std::string>> end_panel();

  // The C variables the current symbol bindings use.
  std::set<std::string> bound_variables() const;

  // One particular expression of the routine replaced by a C rvalue of its type: a read by a
  // packed copy, an exp by its value computed ahead (exec/c_schedule_paired_exps.cpp).
  void substitute_expr(const Expr* read, std::string rvalue) { expr_subst_[read] = std::move(rvalue); }
  void unsubstitute_expr(const Expr* read) { expr_subst_.erase(read); }
  void clear_expr_substitutions() { expr_subst_.clear(); }

  // Expressions: returns C text of ctype(e->prec); replays of virtual reductions emit statements
  // at the current position first.
  std::string expr(const ExprP& e);
  // idx.i32 of `idx` never saturates: its magnitude stays below 2^31 for every value its symbols
  // can take (the loops' ranges and the nodes' dimensions bound them).
  bool fits_i32(const Index& idx);
  // The 64-bit index expression an i32 operand equals exactly (an idx.i32 that fits), if any.
  std::optional<std::string> wide_index(const Expr& e);
  std::string convert(const std::string& code, Prec from, Prec to) const;
  std::string literal(double v, Prec p) const;
  std::string load(const Node& n, const Aff& off);
  std::string store(const Node& n, const Aff& off, const std::string& value) const;  // a statement

  // Statements (any depth). A loop may carry a pragma line emitted just before it.
  void stmt(const Stmt& s);
  void stmt_list(const std::vector<StmtP>& body);
  // "for (fpc_i64 v = from; v <= to; ++v)" header for loop `s` bound to a fresh variable; returns it.
  std::string loop_header(const Stmt& s);
  void zero_node(const Node& n);
  // One cell of a reduction nest, every target symbol bound: the cell loaded into a scalar, the
  // reduced loops accumulating into it in their order, the store.
  void reduce_cell_in_scalar(const NestShape& shape);
  // Calls `each` on every statement of `seq` that is not a Seq, a nested Seq becoming a C block
  // (and a scope) of its own.
  void walk_blocks(const Stmt& seq, const std::function<void(const Stmt&)>& each);

  const ProgramPlan& plan() const { return plan_; }
  Dialect dialect() const { return dialect_; }

 private:
  struct LocalVar {
    std::string cname;
    Prec prec;
  };
  const LocalVar& find_local(const std::string& name) const;
  Aff private_offset(const Node& n, const std::vector<Index>& indices, const PrivateSlice& p) const;
  std::string replay(const Node& n, const std::vector<Index>& read);
  std::string unary(const Expr& e);
  std::string binary(const Expr& e);
  std::string ternary(const Expr& e);

  const ProgramPlan& plan_;
  Dialect dialect_;
  std::string out_;
  int indent_ = 0;
  int counter_ = 0;
  std::map<std::string, Aff> env_;
  std::vector<std::map<std::string, LocalVar>> scopes_;
  std::map<std::string, std::string> subst_;
  std::map<std::string, std::string> pinned_;  // pin_node
  std::map<std::string, PrivateSlice> private_;  // privatize
  std::map<std::string, StagedBox> staged_;      // stage
  std::map<const Stmt*, ScanHook> scan_hooks_;   // hook_scan
  std::int64_t symbol_bound_ = -1;  // fits_i32: the largest |symbol value|, computed once
  std::map<const Expr*, std::string> expr_subst_;
  struct Hoist {
    std::string j, count;
    int width = 16;
    std::set<std::string> outer;
    std::vector<std::string> lines;
    std::map<std::string, std::string> memo;  // load text -> lane array
  };
  std::optional<Hoist> hoist_;
  struct Panel {
    std::string t, t0, count, lanes;
    int chunk = 64, width = 16;
    std::set<std::string> outer;
    std::set<std::string> written;
    std::vector<std::string> decls, fills;
    std::map<std::string, std::string> memo;  // load text -> panel name
  };
  std::vector<Panel> panels_;
  std::string raw_load(const Node& n, const Aff& off) const;
  mutable int hoist_counter_ = 0;
};

// ---- loop analysis shared by the generators ------------------------------------------------

// The perfect chain of `for` loops at the top of a statement: s, its only child if that is a
// live `for`, and so on.
std::vector<const Stmt*> loop_chain(const Stmt& s);
// True when the iterations of `loop` (a `for` at the top of or inside a top-level statement) touch
// disjoint cells of every node written inside it and write no local declared outside it: every
// access to a node written inside has, at one common axis, the plain iterator of loop's symbol; no
// `zero` inside; nothing read through a virtual node's replay is written inside.
bool parallel_safe(const ProgramPlan& plan, const Stmt& loop);

// The product of the loops' extents (saturating).
std::int64_t trip_count(const std::vector<const Stmt*>& loops);

}  // namespace fp::codegen
