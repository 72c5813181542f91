// Raw lowering of tensor expressions to loop nests (lower.h).
#include "frontend/lower.h"

#include <cmath>
#include <limits>
#include <utility>

#include "core/diagnostic.h"
#include "core/numerics.h"

namespace fp::fe {

Node node_of(const TensorDecl& t) {
  Node n;
  n.name = t.name;
  n.dims = t.dims;
  n.prec = t.prec;
  n.mode = MemMode::Materialized;
  n.is_input = t.is_input;
  n.is_output = t.is_output;
  return n;
}

std::vector<fp::Index> iterators(const std::vector<std::string>& axes) {
  std::vector<fp::Index> out;
  out.reserve(axes.size());
  for (const auto& a : axes) out.push_back(fp::Index::iter(a));
  return out;
}

StmtP nest(const Program& p, const std::vector<std::string>& axes, StmtP body) {
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    const AxisDecl* ad = p.find_axis(*it);
    FP_INTERNAL_CHECK(ad != nullptr, "nest over unknown axis '{}'", *it);
    body = for_loop(*it, 0, ad->extent - 1, {std::move(body)});
  }
  return body;
}

std::vector<std::string> loop_axes(const Assignment& a) {
  std::vector<std::string> out = a.axes;
  out.insert(out.end(), a.reduced.begin(), a.reduced.end());
  return out;
}

namespace {

// Lowers one expression at one precision. Conditions (comparisons and logical connectives) are
// lowered to 0/1 values; a condition built only from axis index comparisons stays at i32 so a
// mask never needs a tensor, let alone a [seq, seq] one.
class ExprLowerer {
 public:
  ExprLowerer(const Program& p, Prec prec) : p_(p), prec_(prec) {}

  ExprP value(const Te& e) {
    if (auto idx = as_index(e)) {
      if (idx->is_fixed()) return constant(static_cast<double>(idx->offset), prec_);
      return embed_index(*idx, prec_);
    }
    switch (e->op) {
      case TeOp::Read: {
        const TensorDecl* t = p_.find_tensor(e->tensor);
        FP_INTERNAL_CHECK(t != nullptr, "read of unknown tensor '{}'", e->tensor);
        return get(e->tensor, iterators(e->axes), t->prec);
      }
      // Rounded here rather than at each evaluation (same value): the printed routine then shows
      // the constant it really computes with.
      case TeOp::Const:
        return constant(round_to(prec_, e->value), prec_);
      case TeOp::Index:
        FP_UNREACHABLE("index expression not caught by as_index");
      case TeOp::Neg:
        return fp::unary(UnOp::Neg, value(e->args[0]), prec_);
      case TeOp::Exp:
        return fp::unary(UnOp::Exp, value(e->args[0]), prec_);
      case TeOp::Add:
        return bin(BinOp::Add, e);
      case TeOp::Sub:
        return bin(BinOp::Sub, e);
      case TeOp::Mul:
        return bin(BinOp::Mul, e);
      case TeOp::Div:
        return bin(BinOp::Div, e);
      case TeOp::Where: {
        ExprP c = is_boolean(e->args[0]->op) ? condition(e->args[0]).first : value(e->args[0]);
        return ternary(TernOp::Where, c, value(e->args[1]), value(e->args[2]), prec_);
      }
      default:
        return condition(e).first;
    }
  }

 private:
  ExprP bin(BinOp op, const Te& e) { return binary(op, value(e->args[0]), value(e->args[1]), prec_); }

  static ExprP index_operand(const fp::Index& i) {
    if (i.is_fixed()) return constant(static_cast<double>(i.offset), Prec::I32);
    return embed_index(i, Prec::I32);
  }

  static fp::Index plus_one(fp::Index i) {
    i.offset += 1;
    return i;
  }

  // A 0/1 value and the precision it was computed at.
  std::pair<ExprP, Prec> condition(const Te& e) {
    if (is_comparison(e->op)) return comparison(e);
    if (e->op == TeOp::Not) {
      auto [t, q] = truth(e->args[0]);
      return {binary(BinOp::Eq, t, constant(0, q), q), q};
    }
    FP_INTERNAL_CHECK(e->op == TeOp::And || e->op == TeOp::Or, "not a condition");
    auto [a, qa] = truth(e->args[0]);
    auto [b, qb] = truth(e->args[1]);
    Prec q = (qa == Prec::I32 && qb == Prec::I32) ? Prec::I32 : prec_;
    return {binary(e->op == TeOp::And ? BinOp::Min : BinOp::Max, a, b, q), q};
  }

  // Any value as a 0/1 truth value (nonzero, NaN included, is true, as `where` reads it).
  std::pair<ExprP, Prec> truth(const Te& e) {
    if (is_boolean(e->op)) return condition(e);
    ExprP v = value(e);
    return {binary(BinOp::Sub, constant(1, prec_), binary(BinOp::Eq, v, constant(0, prec_), prec_), prec_),
            prec_};
  }

  std::pair<ExprP, Prec> comparison(const Te& e) {
    auto ia = as_index(e->args[0]);
    auto ib = as_index(e->args[1]);
    if (ia && ib && !(ia->is_fixed() && ib->is_fixed()))
      return {index_comparison(e->op, *ia, *ib), Prec::I32};
    ExprP a = value(e->args[0]);
    ExprP b = value(e->args[1]);
    Prec q = prec_;
    auto lt_ = [&](ExprP x, ExprP y) { return binary(BinOp::Lt, x, y, q); };
    auto eq_ = [&](ExprP x, ExprP y) { return binary(BinOp::Eq, x, y, q); };
    switch (e->op) {
      case TeOp::Lt:
        return {lt_(a, b), q};
      case TeOp::Gt:
        return {lt_(b, a), q};
      // `a <= b` is not `!(b < a)` when NaN is involved; both halves are 0/1 and exclusive.
      case TeOp::Le:
        return {binary(BinOp::Max, lt_(a, b), eq_(a, b), q), q};
      case TeOp::Ge:
        return {binary(BinOp::Max, lt_(b, a), eq_(a, b), q), q};
      case TeOp::Eq:
        return {eq_(a, b), q};
      case TeOp::Ne:
        return {binary(BinOp::Sub, constant(1, q), eq_(a, b), q), q};
      default:
        FP_UNREACHABLE("not a comparison");
    }
  }

  // Integer comparisons, exact: `a <= b` is `a < b + 1`.
  static ExprP index_comparison(TeOp op, const fp::Index& a, const fp::Index& b) {
    auto lt_ = [](const fp::Index& x, const fp::Index& y) {
      return binary(BinOp::Lt, index_operand(x), index_operand(y), Prec::I32);
    };
    auto eq_ = [](const fp::Index& x, const fp::Index& y) {
      return binary(BinOp::Eq, index_operand(x), index_operand(y), Prec::I32);
    };
    switch (op) {
      case TeOp::Lt:
        return lt_(a, b);
      case TeOp::Gt:
        return lt_(b, a);
      case TeOp::Le:
        return lt_(a, plus_one(b));
      case TeOp::Ge:
        return lt_(b, plus_one(a));
      case TeOp::Eq:
        return eq_(a, b);
      case TeOp::Ne:
        return binary(BinOp::Sub, constant(1, Prec::I32), eq_(a, b), Prec::I32);
      default:
        FP_UNREACHABLE("not a comparison");
    }
  }

  const Program& p_;
  Prec prec_;
};

}  // namespace

ExprP lower_expr(const Program& p, const Te& e, Prec prec) {
  return ExprLowerer(p, prec).value(e);
}

std::vector<StmtP> lower_assignment(const Program& p, const Assignment& a) {
  const Prec prec = a.prec;
  auto target = [&] { return get(a.target, iterators(a.axes), prec); };
  ExprP rhs = lower_expr(p, a.rhs, prec);
  switch (a.reduce) {
    case Reduce::None:
      return {nest(p, a.axes, set(a.target, iterators(a.axes), rhs))};
    case Reduce::Sum:
      return {
          zero(a.target),
          nest(p, loop_axes(a), set(a.target, iterators(a.axes), binary(BinOp::Add, target(), rhs, prec)))};
    case Reduce::Max: {
      ExprP minus_inf = constant(-std::numeric_limits<double>::infinity(), prec);
      return {
          nest(p, a.axes, set(a.target, iterators(a.axes), minus_inf)),
          nest(p, loop_axes(a), set(a.target, iterators(a.axes), binary(BinOp::Max, target(), rhs, prec)))};
    }
  }
  return {};
}

Routine lower(const Program& p) {
  Routine r;
  r.name = p.name;
  r.attrs = p.attrs;
  for (const auto& t : p.tensors) r.nodes.push_back(node_of(t));
  std::vector<StmtP> body;
  for (const auto& a : p.assignments)
    for (auto& s : lower_assignment(p, a)) body.push_back(std::move(s));
  r.body = seq(std::move(body));
  return r;
}

}  // namespace fp::fe
