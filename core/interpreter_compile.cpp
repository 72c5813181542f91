// Lowering of a routine to the interpreter's register bytecode (core/interpreter_program.h).
// Names are resolved here once: nodes to indices, loop symbols to counter slots, locals to
// registers (with lexical scoping), constants to pre-rounded registers. Every access is proved in
// bounds over its loop box when possible; the few that are not get a checked instruction.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/diagnostic.h"
#include "core/interpreter_program.h"
#include "core/numerics.h"

namespace fp::interp {

namespace {

Code arith(Code f64_code, Prec p) {
  return static_cast<Code>(static_cast<int>(f64_code) + static_cast<int>(p));
}

std::int32_t pack_op(std::uint8_t op, Prec p) {
  return op | (static_cast<std::int32_t>(p) << 8);
}

class Compiler {
 public:
  explicit Compiler(const Routine& r) : routine_(r) {
    for (std::size_t i = 0; i < r.nodes.size(); ++i)
      node_index_.emplace(r.nodes[i].name, static_cast<std::int32_t>(i));
  }

  Program run() {
    FP_INTERNAL_CHECK(routine_.body != nullptr, "routine '{}' has no body", routine_.name);
    stmt(*routine_.body);
    emit(Code::Halt);
    return std::move(prog_);
  }

 private:
  struct LocalBinding {
    std::string name;
    std::int32_t reg;
    Prec prec;
  };
  struct SymBinding {
    std::string name;
    std::int32_t slot;
  };

  // ---- emission helpers ----

  std::int32_t emit(Code c, std::int32_t d = 0, std::int32_t a = 0, std::int32_t b = 0, std::int32_t cc = 0) {
    prog_.code.push_back(Insn{c, d, a, b, cc});
    return static_cast<std::int32_t>(prog_.code.size() - 1);
  }
  std::int32_t here() const { return static_cast<std::int32_t>(prog_.code.size()); }

  std::int32_t new_reg(double init = 0.0) {
    prog_.reg_init.push_back(init);
    return static_cast<std::int32_t>(prog_.reg_init.size() - 1);
  }
  // A fresh register that only the instruction about to be emitted writes: SetLocal may retarget
  // that instruction to write the local directly.
  std::int32_t temp() {
    std::int32_t r = new_reg();
    last_temp_ = r;
    return r;
  }

  std::int32_t const_reg(double v, Prec p) {
    const double rounded = round_to(p, v);
    const auto key = std::bit_cast<std::uint64_t>(rounded);
    auto it = consts_.find(key);
    if (it != consts_.end()) return it->second;
    std::int32_t r = new_reg(rounded);
    consts_.emplace(key, r);
    return r;
  }

  // ---- scopes ----

  const Node& node(const std::string& name, std::int32_t* index) const {
    auto it = node_index_.find(name);
    FP_INTERNAL_CHECK(it != node_index_.end(), "unknown node '{}'", name);
    *index = it->second;
    return routine_.nodes[static_cast<std::size_t>(it->second)];
  }
  const LocalBinding& local(const std::string& name) const {
    for (auto it = locals_.rbegin(); it != locals_.rend(); ++it)
      if (it->name == name) return *it;
    FP_UNREACHABLE("unknown local '{}'", name);
  }
  std::int32_t sym_slot(const std::string& name) const {
    for (auto it = syms_.rbegin(); it != syms_.rend(); ++it)
      if (it->name == name) return it->slot;
    FP_UNREACHABLE("unknown loop symbol '{}'", name);
  }

  // ---- affine indices ----

  // Adds coef · (index) to the per-slot coefficient map and the constant.
  void accumulate(const Index& idx, std::int64_t scale, std::map<std::int32_t, std::int64_t>& coefs,
                  std::int64_t& base) const {
    base += scale * idx.offset;
    for (const auto& t : idx.terms) coefs[sym_slot(t.sym)] += scale * t.coef;
  }

  Affine make_affine(const std::map<std::int32_t, std::int64_t>& coefs, std::int64_t base) {
    Affine a;
    a.base = base;
    a.spill_first = static_cast<std::int32_t>(prog_.terms.size());
    for (const auto& [slot, coef] : coefs) {
      if (coef == 0) continue;
      if (a.nterms < kMaxInlineTerms) {
        a.slot[a.nterms] = slot;
        a.coef[a.nterms] = coef;
      } else {
        prog_.terms.push_back(Term{slot, coef});
      }
      ++a.nterms;
    }
    return a;
  }

  // Interval of an affine form over the current loop box, as 128-bit integers (no overflow).
  std::pair<__int128, __int128> interval(const std::map<std::int32_t, std::int64_t>& coefs,
                                         std::int64_t base) const {
    __int128 lo = base, hi = base;
    for (const auto& [slot, coef] : coefs) {
      const Loop& range = slot_range_[static_cast<std::size_t>(slot)];
      const __int128 x = static_cast<__int128>(coef) * range.from;
      const __int128 y = static_cast<__int128>(coef) * range.to;
      lo += std::min(x, y);
      hi += std::max(x, y);
    }
    return {lo, hi};
  }

  std::int32_t access(const std::string& name, const std::vector<Index>& indices) {
    std::int32_t ni = 0;
    const Node& n = node(name, &ni);
    FP_INTERNAL_CHECK(indices.size() == n.dims.size(), "access to '{}' has {} indices for {} axes", name,
                      indices.size(), n.dims.size());
    Access acc;
    acc.node = ni;
    std::map<std::int32_t, std::int64_t> flat;
    std::int64_t flat_base = 0;
    std::int64_t stride = 1;
    bool proven = true;
    std::vector<Affine> axes(indices.size());
    for (std::size_t k = indices.size(); k-- > 0;) {
      std::map<std::int32_t, std::int64_t> axis;
      std::int64_t axis_base = 0;
      accumulate(indices[k], 1, axis, axis_base);
      auto [lo, hi] = interval(axis, axis_base);
      if (lo < 0 || hi >= n.dims[k]) proven = false;
      axes[k] = make_affine(axis, axis_base);
      accumulate(indices[k], stride, flat, flat_base);
      stride *= n.dims[k];
    }
    acc.flat = make_affine(flat, flat_base);
    if (!proven) {
      acc.checked = true;
      acc.axes = std::move(axes);
      acc.extents = n.dims;
    }
    prog_.accesses.push_back(std::move(acc));
    return static_cast<std::int32_t>(prog_.accesses.size() - 1);
  }

  // ---- expressions ----

  // Returns the register holding `reg` (a value at `from`) converted to `to`.
  std::int32_t convert(std::int32_t reg, Prec from, Prec to) {
    if (converts_exactly(from, to)) return reg;
    std::int32_t d = temp();
    emit(Code::Cvt, d, reg, static_cast<std::int32_t>(to));
    return d;
  }

  std::int32_t operand(const ExprP& arg, Prec to) {
    FP_INTERNAL_CHECK(arg != nullptr, "missing operand");
    return convert(expr(*arg), arg->prec, to);
  }

  // Compiles e; returns the register that holds its value at e.prec.
  std::int32_t expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Get: {
        std::int32_t ni = 0;
        FP_INTERNAL_CHECK(node(e.name, &ni).prec == e.prec, "read of '{}' at the wrong precision", e.name);
        const std::int32_t acc = access(e.name, e.indices);
        const std::int32_t d = temp();
        emit(prog_.accesses[static_cast<std::size_t>(acc)].checked ? Code::LoadChecked : Code::Load, d, acc);
        return d;
      }
      case ExprKind::GetLocal: {
        const LocalBinding& b = local(e.name);
        FP_INTERNAL_CHECK(b.prec == e.prec, "read of local '{}' at the wrong precision", e.name);
        return b.reg;
      }
      case ExprKind::Const:
        return const_reg(e.value, e.prec);
      case ExprKind::EmbedIndex: {
        FP_INTERNAL_CHECK(e.indices.size() == 1, "idx takes one index");
        std::map<std::int32_t, std::int64_t> coefs;
        std::int64_t base = 0;
        accumulate(e.indices[0], 1, coefs, base);
        prog_.affines.push_back(make_affine(coefs, base));
        const std::int32_t d = temp();
        emit(Code::Embed, d, static_cast<std::int32_t>(prog_.affines.size() - 1),
             static_cast<std::int32_t>(e.prec));
        return d;
      }
      case ExprKind::Unary:
        return unary(e);
      case ExprKind::Binary:
        return binary(e);
      case ExprKind::Ternary:
        return ternary(e);
    }
    FP_UNREACHABLE("unknown expression kind {}", static_cast<int>(e.kind));
  }

  std::int32_t unary(const Expr& e) {
    FP_INTERNAL_CHECK(e.args.size() == 1, "{} takes one operand", unop_name(e.unop()));
    const std::int32_t a = operand(e.args[0], e.prec);
    const UnOp op = e.unop();
    if (op == UnOp::Cast) return a;  // the conversion is the whole operation
    const bool fl = is_float(e.prec);
    FP_INTERNAL_CHECK(fl || (op != UnOp::Exp && op != UnOp::Sqrt), "{}.i32 is float-only", unop_name(op));
    ++prog_.scalar_ops;
    const std::int32_t d = temp();
    if (fl && op == UnOp::Neg)
      emit(Code::NegF, d, a);
    else if (fl && op == UnOp::Abs)
      emit(Code::AbsF, d, a);
    else if (fl && op == UnOp::Sqrt)
      emit(arith(Code::SqrtF64, e.prec), d, a);
    else if (fl && op == UnOp::Exp)
      emit(arith(Code::ExpF64, e.prec), d, a);
    else
      emit(Code::UnGeneric, d, a, pack_op(e.op, e.prec));
    return d;
  }

  // The f64 code of a float add, sub, mul or div (arith() picks the precision's variant).
  static std::optional<Code> float_arith_f64(BinOp op) {
    switch (op) {
      case BinOp::Add:
        return Code::AddF64;
      case BinOp::Sub:
        return Code::SubF64;
      case BinOp::Mul:
        return Code::MulF64;
      case BinOp::Div:
        return Code::DivF64;
      default:
        return std::nullopt;
    }
  }

  std::int32_t binary(const Expr& e) {
    FP_INTERNAL_CHECK(e.args.size() == 2, "{} takes two operands", binop_name(e.binop()));
    const std::int32_t a = operand(e.args[0], e.prec);
    const std::int32_t b = operand(e.args[1], e.prec);
    ++prog_.scalar_ops;
    const std::int32_t d = temp();
    if (is_float(e.prec))
      if (const std::optional<Code> c = float_arith_f64(e.binop())) return emit(arith(*c, e.prec), d, a, b), d;
    switch (e.binop()) {
      case BinOp::Max:
        return emit(Code::MaxF, d, a, b), d;
      case BinOp::Min:
        return emit(Code::MinF, d, a, b), d;
      case BinOp::Eq:
        return emit(Code::Eq, d, a, b), d;
      case BinOp::Lt:
        return emit(Code::Lt, d, a, b), d;
      default:
        break;
    }
    emit(Code::BinGeneric, d, a, b, pack_op(e.op, e.prec));
    return d;
  }

  std::int32_t ternary(const Expr& e) {
    FP_INTERNAL_CHECK(e.args.size() == 3, "{} takes three operands", ternop_name(e.ternop()));
    ++prog_.scalar_ops;
    if (e.ternop() == TernOp::Where) {
      const std::int32_t c = expr(*e.args[0]);  // the condition keeps its own precision
      const std::int32_t a = operand(e.args[1], e.prec);
      const std::int32_t b = operand(e.args[2], e.prec);
      const std::int32_t d = temp();
      emit(Code::Where, d, c, a, b);
      return d;
    }
    FP_INTERNAL_CHECK(is_float(e.prec), "fma.i32 is float-only");
    const std::int32_t a = operand(e.args[0], e.prec);
    const std::int32_t b = operand(e.args[1], e.prec);
    const std::int32_t c = operand(e.args[2], e.prec);
    const std::int32_t d = temp();
    emit(arith(Code::FmaF64, e.prec), d, a, b, c);
    return d;
  }

  // Compiles `value` and leaves it, converted to `to`, in register `dest`: the last instruction
  // is retargeted when it produced a fresh temporary, otherwise a Mov is added.
  void assign(std::int32_t dest, const ExprP& value, Prec to) {
    last_temp_ = -1;
    const auto regs_before = static_cast<std::int32_t>(prog_.reg_init.size());
    const std::int32_t v = operand(value, to);
    if (v == dest) return;
    if (v == last_temp_ && v >= regs_before && prog_.code.back().d == v) {
      prog_.code.back().d = dest;
      return;
    }
    emit(Code::Mov, dest, v);
  }

  // ---- statements ----

  void stmt_list(const std::vector<StmtP>& body) {
    const std::size_t nl = locals_.size(), ns = syms_.size();
    for (const auto& s : body) {
      FP_INTERNAL_CHECK(s != nullptr, "null statement");
      stmt(*s);
    }
    locals_.resize(nl);
    syms_.resize(ns);
  }

  std::int32_t new_loop(const Stmt& s) {
    const auto slot = prog_.counter_slots++;
    Loop l{slot, s.from, s.to, s.kind == StmtKind::Scan && s.dir == ScanDir::Backward};
    slot_range_.push_back(l);
    prog_.loops.push_back(l);
    return static_cast<std::int32_t>(prog_.loops.size() - 1);
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Seq:
        stmt_list(s.body);
        return;
      case StmtKind::For:
        for_loop(s);
        return;
      case StmtKind::Scan:
        scan(s);
        return;
      case StmtKind::Zero: {
        std::int32_t ni = 0;
        node(s.name, &ni);
        emit(Code::Zero, 0, ni);
        return;
      }
      case StmtKind::Set: {
        std::int32_t ni = 0;
        const Node& n = node(s.name, &ni);
        const std::int32_t v = operand(s.value, n.prec);
        const std::int32_t acc = access(s.name, s.indices);
        emit(prog_.accesses[static_cast<std::size_t>(acc)].checked ? Code::StoreChecked : Code::Store, 0, acc,
             v);
        return;
      }
      case StmtKind::DeclareLocal: {
        const std::int32_t r = new_reg();
        locals_.push_back(LocalBinding{s.name, r, s.prec});
        emit(Code::SetZero, r);
        return;
      }
      case StmtKind::SetLocal: {
        const LocalBinding b = local(s.name);
        assign(b.reg, s.value, b.prec);
        return;
      }
      case StmtKind::If: {
        FP_INTERNAL_CHECK(s.value != nullptr, "if without condition");
        const std::int32_t c = expr(*s.value);
        const std::int32_t jump = emit(Code::JumpIfZero, 0, c);
        stmt_list(s.body);
        prog_.code[static_cast<std::size_t>(jump)].d = here();
        return;
      }
      case StmtKind::Comment:
      case StmtKind::Noop:
        return;
    }
    FP_UNREACHABLE("unknown statement kind {}", static_cast<int>(s.kind));
  }

  void for_loop(const Stmt& s) {
    if (s.is_dead_loop()) return;  // runs zero times
    const std::int32_t loop = new_loop(s);
    emit(Code::LoopInit, 0, loop);
    const std::int32_t top = here();
    syms_.push_back(SymBinding{s.sym, prog_.loops[static_cast<std::size_t>(loop)].slot});
    stmt_list(s.body);
    syms_.pop_back();
    emit(Code::LoopNext, top, loop);
  }

  void scan(const Stmt& s) {
    if (s.is_dead_loop()) return;  // zero iterations; init has no effects
    // Inits are evaluated once, in the enclosing scope, before any carried local exists.
    std::vector<std::int32_t> init_regs;
    for (const auto& c : s.carried) init_regs.push_back(operand(c.init, c.prec));
    const std::size_t nl = locals_.size();
    std::vector<std::pair<std::int32_t, std::int32_t>> prev_next;
    for (std::size_t k = 0; k < s.carried.size(); ++k) {
      const std::int32_t prev = new_reg(), next = new_reg();
      emit(Code::Mov, prev, init_regs[k]);
      emit(Code::SetZero, next);
      prev_next.emplace_back(prev, next);
    }
    for (std::size_t k = 0; k < s.carried.size(); ++k) {
      locals_.push_back(LocalBinding{s.carried[k].prev, prev_next[k].first, s.carried[k].prec});
      locals_.push_back(LocalBinding{s.carried[k].next, prev_next[k].second, s.carried[k].prec});
    }
    const std::int32_t loop = new_loop(s);
    emit(Code::LoopInit, 0, loop);
    const std::int32_t top = here();
    syms_.push_back(SymBinding{s.sym, prog_.loops[static_cast<std::size_t>(loop)].slot});
    stmt_list(s.body);
    syms_.pop_back();
    // prev := next for every carried value at once: prev registers are distinct from next ones,
    // so sequential moves are simultaneous.
    for (const auto& [prev, next] : prev_next) emit(Code::Mov, prev, next);
    emit(Code::LoopNext, top, loop);
    locals_.resize(nl);
  }

  const Routine& routine_;
  Program prog_;
  std::unordered_map<std::string, std::int32_t> node_index_;
  std::unordered_map<std::uint64_t, std::int32_t> consts_;
  std::vector<LocalBinding> locals_;
  std::vector<SymBinding> syms_;
  std::vector<Loop> slot_range_;  // indexed by counter slot
  std::int32_t last_temp_ = -1;
};

}  // namespace

Program compile(const Routine& routine) {
  return Compiler(routine).run();
}

}  // namespace fp::interp
