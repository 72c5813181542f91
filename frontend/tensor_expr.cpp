// Tensor expressions and the validating program builder (tensor_expr.h).
#include "frontend/tensor_expr.h"

#include <algorithm>
#include <limits>
#include <array>
#include <cctype>

#include "core/diagnostic.h"
#include "core/text_parser.h"

namespace fp::fe {

// ---- expressions ---------------------------------------------------------------------------

namespace {
Te make(TeNode n) {
  return std::make_shared<const TeNode>(std::move(n));
}
}  // namespace

Te read(std::string tensor, std::vector<std::string> axes, SrcLoc loc) {
  TeNode n;
  n.op = TeOp::Read;
  n.tensor = std::move(tensor);
  n.axes = std::move(axes);
  n.loc = loc;
  return make(std::move(n));
}

Te cst(double v, SrcLoc loc) {
  TeNode n;
  n.op = TeOp::Const;
  n.value = v;
  n.loc = loc;
  return make(std::move(n));
}

Te int_literal(std::int64_t v, SrcLoc loc) {
  TeNode n;
  n.op = TeOp::Const;
  n.value = static_cast<double>(v);
  n.integer_literal = true;
  n.loc = loc;
  return make(std::move(n));
}

Te ix(fp::Index idx, SrcLoc loc) {
  TeNode n;
  n.op = TeOp::Index;
  n.index = idx.canonical();
  n.loc = loc;
  return make(std::move(n));
}

Te ix(std::string axis, SrcLoc loc) {
  return ix(fp::Index::iter(std::move(axis)), loc);
}

Te unary(TeOp op, Te a, SrcLoc loc) {
  TeNode n;
  n.op = op;
  n.args = {std::move(a)};
  n.loc = loc;
  return make(std::move(n));
}

Te binary(TeOp op, Te a, Te b, SrcLoc loc) {
  TeNode n;
  n.op = op;
  n.args = {std::move(a), std::move(b)};
  n.loc = loc;
  return make(std::move(n));
}

Te where(Te cond, Te a, Te b, SrcLoc loc) {
  TeNode n;
  n.op = TeOp::Where;
  n.args = {std::move(cond), std::move(a), std::move(b)};
  n.loc = loc;
  return make(std::move(n));
}

bool is_comparison(TeOp op) {
  return op == TeOp::Lt || op == TeOp::Le || op == TeOp::Gt || op == TeOp::Ge || op == TeOp::Eq ||
         op == TeOp::Ne;
}

bool is_boolean(TeOp op) {
  return is_comparison(op) || op == TeOp::And || op == TeOp::Or || op == TeOp::Not;
}

namespace {
fp::Index scaled(const fp::Index& i, std::int64_t k) {
  fp::Index out = i;
  for (auto& t : out.terms) t.coef *= k;
  out.offset *= k;
  return out.canonical();
}

fp::Index summed(const fp::Index& a, const fp::Index& b) {
  fp::Index out = a;
  out.terms.insert(out.terms.end(), b.terms.begin(), b.terms.end());
  out.offset += b.offset;
  return out.canonical();
}
}  // namespace

std::optional<fp::Index> as_index(const Te& e) {
  switch (e->op) {
    case TeOp::Index:
      return e->index;
    case TeOp::Const:
      if (!e->integer_literal) return std::nullopt;
      return fp::Index::fixed(static_cast<std::int64_t>(e->value));
    case TeOp::Neg: {
      auto a = as_index(e->args[0]);
      if (!a) return std::nullopt;
      return scaled(*a, -1);
    }
    case TeOp::Add:
    case TeOp::Sub: {
      auto a = as_index(e->args[0]);
      auto b = as_index(e->args[1]);
      if (!a || !b) return std::nullopt;
      return summed(*a, e->op == TeOp::Sub ? scaled(*b, -1) : *b);
    }
    case TeOp::Mul: {
      // Affine only: one factor must be a constant.
      auto a = as_index(e->args[0]);
      auto b = as_index(e->args[1]);
      if (!a || !b) return std::nullopt;
      if (a->is_fixed()) return scaled(*b, a->offset);
      if (b->is_fixed()) return scaled(*a, b->offset);
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

void for_each_te(const Te& e, const std::function<void(const TeNode&)>& f) {
  f(*e);
  for (const auto& a : e->args) for_each_te(a, f);
}

// ---- programs ------------------------------------------------------------------------------

const AxisDecl* Program::find_axis(std::string_view n) const {
  for (const auto& a : axes)
    if (a.name == n) return &a;
  return nullptr;
}

const TensorDecl* Program::find_tensor(std::string_view n) const {
  for (const auto& t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}

TensorDecl* Program::find_tensor(std::string_view n) {
  for (auto& t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}

bool is_identifier(std::string_view name) {
  if (name.empty() || name.size() > 4096) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is_reserved_name(std::string_view name) {
  // The IR text format's keywords and operation names (a routine printed from a lowered program
  // must parse back), then the frontend language's own words.
  static constexpr std::array kReserved = {
      "routine", "attr",         "node",      "zero", "local",     "for",  "in",   "scan",
      "forward", "backward",     "carry",     "if",   "comment",   "noop", "idx",  "input",
      "output",  "inf",          "nan",       "f64",  "f32",       "f16",  "bf16", "i32",
      "virtual", "materialized", "requested", "neg",  "exp",       "sqrt", "abs",  "cast",
      "add",     "sub",          "mul",       "div",  "max",       "min",  "pow",  "eq",
      "lt",      "where",        "fma",       "axes", "precision", "sum",  "loss", "grad"};
  return is_text_keyword(name) || std::find(kReserved.begin(), kReserved.end(), name) != kReserved.end();
}

ProgramBuilder::ProgramBuilder(std::string name, std::string file) : file_(std::move(file)) {
  set_name(std::move(name));
}

void ProgramBuilder::fail(SrcLoc loc, const std::string& msg) const {
  throw UserError(kExitMalformed, file_, loc.line, loc.col, msg);
}

void ProgramBuilder::check_new_name(const std::string& name, SrcLoc loc) const {
  if (!is_identifier(name)) fail(loc, fmt::format("'{}' is not a valid name", name));
  if (is_reserved_name(name)) fail(loc, fmt::format("'{}' is a reserved word and cannot be a name", name));
  if (prog_.find_axis(name)) fail(loc, fmt::format("'{}' is already an axis", name));
  if (prog_.find_tensor(name)) fail(loc, fmt::format("tensor '{}' is already defined", name));
}

void ProgramBuilder::set_name(std::string name, SrcLoc loc) {
  if (!is_identifier(name) || is_reserved_name(name))
    fail(loc, fmt::format("'{}' is not a valid routine name", name));
  prog_.name = std::move(name);
}

void ProgramBuilder::attr(std::string key, std::int64_t value, SrcLoc loc) {
  if (!is_identifier(key) || is_reserved_name(key))
    fail(loc, fmt::format("'{}' is not a valid attribute name", key));
  if (prog_.attrs.count(key)) fail(loc, fmt::format("attribute '{}' is set twice", key));
  prog_.attrs[key] = value;
}

void ProgramBuilder::axis(std::string name, std::int64_t extent, SrcLoc loc) {
  check_new_name(name, loc);
  if (extent < 1 || extent > kMaxCells)
    fail(loc, fmt::format("axis '{}' has extent {}; expected 1 to 2^40", name, extent));
  prog_.axes.push_back({std::move(name), extent, loc});
}

namespace {
// Cell count with overflow saturating past kMaxCells.
std::int64_t cells(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) {
    if (n > kMaxCells / d) return kMaxCells + 1;
    n *= d;
  }
  return n;
}
}  // namespace

void ProgramBuilder::input(std::string name, std::vector<std::string> axes, Prec prec, SrcLoc loc) {
  check_new_name(name, loc);
  if (axes.empty()) fail(loc, fmt::format("tensor '{}' needs at least one axis", name));
  TensorDecl t;
  for (const auto& a : axes) {
    const AxisDecl* ad = prog_.find_axis(a);
    if (!ad) fail(loc, fmt::format("unknown axis '{}' in the declaration of '{}'", a, name));
    t.dims.push_back(ad->extent);
  }
  if (cells(t.dims) > kMaxCells) fail(loc, fmt::format("tensor '{}' has more than 2^40 cells", name));
  t.name = std::move(name);
  t.axes = std::move(axes);
  t.prec = prec;
  t.is_input = true;
  t.loc = loc;
  prog_.tensors.push_back(std::move(t));
}

// A comparison of two index expressions (not both constants) is lowered to 32-bit integer
// arithmetic (lower.cpp, idx.i32): each side's values over its axes' ranges must fit in i32.
// (`flashproof fuzz`'s .te harness found `t < 222222222222223 - 4` lowered to an i32 constant the
// checker rejects.)
void ProgramBuilder::check_index_comparison(const TeNode& n) const {
  if (!is_comparison(n.op) || n.args.size() != 2) return;
  const auto a = as_index(n.args[0]), b = as_index(n.args[1]);
  if (!a || !b || (a->is_fixed() && b->is_fixed())) return;
  for (const fp::Index* i : {&*a, &*b}) {
    long double lo = static_cast<long double>(i->offset), hi = lo;
    for (const auto& term : i->terms) {
      const AxisDecl* ad = prog_.find_axis(term.sym);
      const long double last = static_cast<long double>(term.coef) * static_cast<long double>(ad ? ad->extent - 1 : 0);
      lo += std::min(0.0L, last);
      hi += std::max(0.0L, last);
    }
    if (lo < std::numeric_limits<std::int32_t>::min() || hi > std::numeric_limits<std::int32_t>::max())
      fail(n.loc, fmt::format("an index comparison works in 32-bit integers: this side ranges over [{:.0Lf}, {:.0Lf}]; "
                              "expected values from -2^31 to 2^31 - 1",
                              lo, hi));
  }
}

void ProgramBuilder::check_rhs(const Te& e) const {
  for_each_te(e, [&](const TeNode& n) {
    check_index_comparison(n);
    if (n.op == TeOp::Index) {
      for (const auto& term : n.index.terms)
        if (!prog_.find_axis(term.sym)) fail(n.loc, fmt::format("unknown axis '{}'", term.sym));
      return;
    }
    if (n.op != TeOp::Read) return;
    const TensorDecl* t = prog_.find_tensor(n.tensor);
    if (!t)
      fail(n.loc, fmt::format("unknown tensor '{}' (a tensor is read only after it is defined)", n.tensor));
    if (n.axes.size() != t->dims.size())
      fail(n.loc,
           fmt::format("tensor '{}' has {} axes; read with {}", n.tensor, t->dims.size(), n.axes.size()));
    for (std::size_t i = 0; i < n.axes.size(); ++i) {
      const AxisDecl* ad = prog_.find_axis(n.axes[i]);
      if (!ad) fail(n.loc, fmt::format("unknown axis '{}' in a read of '{}'", n.axes[i], n.tensor));
      if (ad->extent != t->dims[i])
        fail(n.loc, fmt::format("axis '{}' has extent {} but dimension {} of '{}' has extent {}", n.axes[i],
                                ad->extent, i, n.tensor, t->dims[i]));
      for (std::size_t j = 0; j < i; ++j)
        if (n.axes[j] == n.axes[i])
          fail(n.loc,
               fmt::format("axis '{}' indexes two dimensions of '{}' (diagonal reads are not supported)",
                           n.axes[i], n.tensor));
    }
  });
}

std::vector<std::string> ProgramBuilder::mentioned_axes(const Te& e) const {
  std::vector<std::string> out;
  auto add = [&](const std::string& a) {
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  };
  for_each_te(e, [&](const TeNode& n) {
    if (n.op == TeOp::Read)
      for (const auto& a : n.axes) add(a);
    if (n.op == TeOp::Index)
      for (const auto& t : n.index.terms) add(t.sym);
  });
  return out;
}

void ProgramBuilder::assign(std::string target, std::vector<std::string> axes, Prec prec, Te rhs,
                            Reduce reduce, std::vector<std::string> over, SrcLoc loc) {
  check_new_name(target, loc);
  if (!is_float(prec))
    fail(loc, fmt::format("'{}' must be computed at a float precision, not {}", target, prec_name(prec)));
  if (axes.empty()) fail(loc, fmt::format("tensor '{}' needs at least one axis", target));
  TensorDecl t;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const AxisDecl* ad = prog_.find_axis(axes[i]);
    if (!ad) fail(loc, fmt::format("unknown axis '{}' in the target '{}'", axes[i], target));
    if (std::find(axes.begin(), axes.begin() + static_cast<std::ptrdiff_t>(i), axes[i]) !=
        axes.begin() + static_cast<std::ptrdiff_t>(i))
      fail(loc, fmt::format("axis '{}' appears twice in the target '{}'", axes[i], target));
    t.dims.push_back(ad->extent);
  }
  if (cells(t.dims) > kMaxCells) fail(loc, fmt::format("tensor '{}' has more than 2^40 cells", target));
  check_rhs(rhs);

  std::vector<std::string> extra;
  for (const auto& a : mentioned_axes(rhs))
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) extra.push_back(a);
  if (reduce == Reduce::None) {
    // Einsum convention: what the target does not keep is summed.
    over = extra;
    if (!over.empty()) reduce = Reduce::Sum;
  } else {
    if (over.empty()) fail(loc, "a reduction needs at least one axis");
    for (std::size_t i = 0; i < over.size(); ++i) {
      if (!prog_.find_axis(over[i])) fail(loc, fmt::format("unknown axis '{}' in the reduction", over[i]));
      if (std::find(axes.begin(), axes.end(), over[i]) != axes.end())
        fail(loc, fmt::format("axis '{}' is both kept in the target and reduced", over[i]));
      if (std::find(over.begin(), over.begin() + static_cast<std::ptrdiff_t>(i), over[i]) !=
          over.begin() + static_cast<std::ptrdiff_t>(i))
        fail(loc, fmt::format("axis '{}' is reduced twice", over[i]));
      if (std::find(extra.begin(), extra.end(), over[i]) == extra.end())
        fail(loc, fmt::format("reduced axis '{}' does not appear in the operand", over[i]));
    }
    for (const auto& a : extra)
      if (std::find(over.begin(), over.end(), a) == over.end())
        fail(loc,
             fmt::format(
                 "axis '{}' appears in the operand but neither in the target nor among the reduced axes", a));
  }

  t.name = target;
  t.axes = axes;
  t.prec = prec;
  t.loc = loc;
  prog_.tensors.push_back(std::move(t));
  prog_.assignments.push_back(
      {std::move(target), std::move(axes), prec, reduce, std::move(over), std::move(rhs), loc});
}

void ProgramBuilder::output(std::string name, SrcLoc loc) {
  TensorDecl* t = prog_.find_tensor(name);
  if (!t) fail(loc, fmt::format("unknown tensor '{}' in output", name));
  if (t->is_input) fail(loc, fmt::format("'{}' is an input; an output must be computed", name));
  if (t->is_output) fail(loc, fmt::format("'{}' is already an output", name));
  t->is_output = true;
}

Program ProgramBuilder::finish() const {
  bool any = std::any_of(prog_.tensors.begin(), prog_.tensors.end(),
                         [](const TensorDecl& t) { return t.is_output; });
  if (!any) fail({}, "the program has no output");
  return prog_;
}

}  // namespace fp::fe
