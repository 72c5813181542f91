#include "verify/symbolic/term.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <unordered_set>

#include "core/diagnostic.h"
#include "core/numerics.h"
#include "core/support/deadline.h"
#include "core/text_printer.h"

namespace fp::verify {

namespace {

TermOp of_unop(UnOp op) {
  switch (op) {
    case UnOp::Neg:
      return TermOp::Neg;
    case UnOp::Exp:
      return TermOp::Exp;
    case UnOp::Sqrt:
      return TermOp::Sqrt;
    case UnOp::Abs:
      return TermOp::Abs;
    case UnOp::Cast:
      return TermOp::Cvt;
  }
  return TermOp::Cvt;
}

TermOp of_binop(BinOp op) {
  switch (op) {
    case BinOp::Add:
      return TermOp::Add;
    case BinOp::Sub:
      return TermOp::Sub;
    case BinOp::Mul:
      return TermOp::Mul;
    case BinOp::Div:
      return TermOp::Div;
    case BinOp::Max:
      return TermOp::Max;
    case BinOp::Min:
      return TermOp::Min;
    case BinOp::Pow:
      return TermOp::Pow;
    case BinOp::Eq:
      return TermOp::Eq;
    case BinOp::Lt:
      return TermOp::Lt;
  }
  return TermOp::Add;
}

UnOp to_unop(TermOp op) {
  switch (op) {
    case TermOp::Neg:
      return UnOp::Neg;
    case TermOp::Exp:
      return UnOp::Exp;
    case TermOp::Sqrt:
      return UnOp::Sqrt;
    default:
      return UnOp::Abs;
  }
}

BinOp to_binop(TermOp op) {
  switch (op) {
    case TermOp::Add:
      return BinOp::Add;
    case TermOp::Sub:
      return BinOp::Sub;
    case TermOp::Mul:
      return BinOp::Mul;
    case TermOp::Div:
      return BinOp::Div;
    case TermOp::Max:
      return BinOp::Max;
    case TermOp::Min:
      return BinOp::Min;
    case TermOp::Pow:
      return BinOp::Pow;
    case TermOp::Eq:
      return BinOp::Eq;
    default:
      return BinOp::Lt;
  }
}

// Bit pattern used for hashing and identity: every NaN is one value, -0 and +0 differ.
std::uint64_t value_key(double v) {
  if (std::isnan(v)) return 0x7ff8000000000000ull;
  return std::bit_cast<std::uint64_t>(v);
}

// One multiply-xorshift round per word (the finalizer of MurmurHash3's 64-bit variant after the
// combination), so that the low bits used for the slot depend on every bit of every field.
std::size_t mix(std::size_t h, std::size_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

double apply(TermOp op, Prec p, const double* a) {
  switch (op) {
    case TermOp::Cvt:
      return round_to(p, a[0]);
    case TermOp::Neg:
    case TermOp::Exp:
    case TermOp::Sqrt:
    case TermOp::Abs:
      return apply_unop(to_unop(op), p, a[0]);
    case TermOp::Where:
      return apply_ternop(TernOp::Where, p, a[0], a[1], a[2]);
    case TermOp::Fma:
      return apply_ternop(TernOp::Fma, p, a[0], a[1], a[2]);
    case TermOp::Var:
    case TermOp::Const:
      break;
    default:
      return apply_binop(to_binop(op), p, a[0], a[1]);
  }
  return 0;
}

}  // namespace

const char* term_op_name(TermOp op) {
  switch (op) {
    case TermOp::Var:
      return "var";
    case TermOp::Const:
      return "const";
    case TermOp::Cvt:
      return "cvt";
    case TermOp::Neg:
      return "neg";
    case TermOp::Exp:
      return "exp";
    case TermOp::Sqrt:
      return "sqrt";
    case TermOp::Abs:
      return "abs";
    case TermOp::Add:
      return "add";
    case TermOp::Sub:
      return "sub";
    case TermOp::Mul:
      return "mul";
    case TermOp::Div:
      return "div";
    case TermOp::Max:
      return "max";
    case TermOp::Min:
      return "min";
    case TermOp::Pow:
      return "pow";
    case TermOp::Eq:
      return "eq";
    case TermOp::Lt:
      return "lt";
    case TermOp::Where:
      return "where";
    case TermOp::Fma:
      return "fma";
  }
  return "?";
}

TermLimitExceeded::TermLimitExceeded(std::size_t limit)
    : std::runtime_error(fmt::format("symbolic execution exceeded its budget of {} terms (--max-terms {}: raise it "
                                     "to decide this obligation at these sizes, or verify a smaller instance)",
                                     limit, limit)),
      limit_(limit) {}

// Ids are 32-bit (a slot holds id + 1), so no store holds more than 2^32 - 2 terms.
TermStore::TermStore(std::size_t max_terms) : max_terms_(std::min<std::size_t>(max_terms, 0xfffffffeu)) {}

bool TermStore::same_structure(const Term& a, const Term& b) {
  if (a.op != b.op || a.prec != b.prec || a.nargs != b.nargs) return false;
  for (int i = 0; i < a.nargs; ++i)
    if (a.args[i] != b.args[i]) return false;
  if (a.op == TermOp::Const) return value_key(a.value) == value_key(b.value);
  if (a.op == TermOp::Var) return a.var == b.var;
  return true;
}

void TermStore::grow_slots() {
  const std::size_t size = slots_.empty() ? 1024 : slots_.size() * 2;
  std::vector<Slot> slots(size);
  for (const Term& t : terms_) {
    std::size_t i = t.hash & (size - 1);
    while (slots[i].id_plus_1 != 0) i = (i + 1) & (size - 1);
    slots[i] = Slot{t.id + 1, static_cast<std::uint32_t>(t.hash >> 32)};
  }
  slots_ = std::move(slots);
}

TermP TermStore::intern(Term t) {
  std::size_t h = mix(static_cast<std::size_t>(t.op) * 131 + static_cast<std::size_t>(t.prec), t.nargs);
  for (int i = 0; i < t.nargs; ++i) h = mix(h, reinterpret_cast<std::uintptr_t>(t.args[i]));
  if (t.op == TermOp::Const) h = mix(h, value_key(t.value));
  if (t.op == TermOp::Var) h = mix(h, t.var);
  t.hash = h;
  if (2 * (terms_.size() + 1) > slots_.size()) grow_slots();
  const std::size_t mask = slots_.size() - 1;
  std::size_t slot = h & mask;
  const auto high = static_cast<std::uint32_t>(h >> 32);
  for (; slots_[slot].id_plus_1 != 0; slot = (slot + 1) & mask) {
    const Slot& s = slots_[slot];
    if (s.hash_high == high && same_structure(terms_[s.id_plus_1 - 1], t)) return &terms_[s.id_plus_1 - 1];
  }
  if (terms_.size() >= max_terms_) throw TermLimitExceeded(max_terms_);
  if ((terms_.size() & 0xffff) == 0) check_deadline("symbolic execution");
  t.id = static_cast<std::uint32_t>(terms_.size());
  t.approx = t.op == TermOp::Exp || t.op == TermOp::Pow;
  for (int i = 0; i < t.nargs; ++i) t.approx = t.approx || t.args[i]->approx;
  terms_.push_back(t);
  slots_[slot] = Slot{t.id + 1, high};
  return &terms_.back();
}

TermP TermStore::var(const std::string& node, std::int64_t cell, Prec p) {
  Term t;
  t.op = TermOp::Var;
  t.prec = p;
  auto [it, fresh] = var_index_.try_emplace({node, cell}, static_cast<std::uint32_t>(vars_.size()));
  if (fresh) vars_.push_back(VarInfo{node, cell, p});
  t.var = it->second;
  return intern(t);
}

TermP TermStore::constant(double v, Prec p) {
  Term t;
  t.op = TermOp::Const;
  t.prec = p;
  double r = round_to(p, v);
  t.value = std::isnan(r) ? std::numeric_limits<double>::quiet_NaN() : r;
  return intern(t);
}

TermP TermStore::make(TermOp op, Prec p, std::initializer_list<TermP> args) {
  Term t;
  t.op = op;
  t.prec = p;
  bool all_const = true;
  double vals[3] = {0, 0, 0};
  for (TermP a : args) {
    all_const = all_const && a->op == TermOp::Const;
    vals[t.nargs] = a->value;
    t.args[t.nargs++] = a;
  }
  if (all_const) return constant(apply(op, p, vals), p);
  return intern(t);
}

namespace {
// t's value is always a value of precision p, with t built from exact widenings of p-terms,
// p-representable constants, and max/min of such (max and min return one of their operands, or
// NaN, so their result stays representable).
bool narrowable(TermP t, Prec p, int depth = 0) {
  if (depth > 64 || !is_float(p) || !is_float(t->prec)) return false;
  switch (t->op) {
    case TermOp::Cvt:
      return t->args[0]->prec == p && converts_exactly(p, t->prec);
    case TermOp::Const:
      return representable(p, t->value);
    case TermOp::Max:
    case TermOp::Min:
      return narrowable(t->args[0], p, depth + 1) && narrowable(t->args[1], p, depth + 1);
    default:
      return false;
  }
}
}  // namespace

TermP TermStore::narrow(TermP t, Prec p) {
  switch (t->op) {
    case TermOp::Cvt:
      return t->args[0];
    case TermOp::Const:
      return constant(t->value, p);
    default:
      return make(t->op, p, {narrow(t->args[0], p), narrow(t->args[1], p)});
  }
}

TermP TermStore::convert(TermP a, Prec to) {
  if (a->prec == to) return a;
  if (a->op == TermOp::Const) return constant(round_to(to, a->value), to);
  // Narrowing a value that is exactly a `to` value gives that value: the narrowing of an exact
  // widening, and max/min of such values computed at the wider precision (max.f32 of widened f16
  // scores is max.f16 of the scores).
  if (narrowable(a, to)) return narrow(a, to);
  return make(TermOp::Cvt, to, {a});
}

TermP TermStore::unary(UnOp op, TermP a, Prec p) {
  if (op == UnOp::Cast) return convert(a, p);
  return make(of_unop(op), p, {convert(a, p)});
}

TermP TermStore::binary(BinOp op, TermP a, TermP b, Prec p) {
  TermP ca = convert(a, p), cb = convert(b, p);
  // max(x, -inf) = max(-inf, x) = x for every float x (core/ir.h SEMANTICS: NaN propagates, -inf
  // is the least value, max(-inf, -inf) = -inf): a max reduction's -inf start and its fully
  // masked cells leave no trace, so equal maxima are equal terms.
  if (op == BinOp::Max && is_float(p)) {
    auto neg_inf = [](TermP t) { return t->op == TermOp::Const && std::isinf(t->value) && t->value < 0; };
    if (neg_inf(cb)) return ca;
    if (neg_inf(ca)) return cb;
  }
  return make(of_binop(op), p, {ca, cb});
}

TermP TermStore::ternary(TernOp op, TermP a, TermP b, TermP c, Prec p) {
  if (op == TernOp::Where) {
    if (a->op == TermOp::Const) return convert(a->value != 0 || std::isnan(a->value) ? b : c, p);
    TermP tb = convert(b, p), tc = convert(c, p);
    if (tb == tc) return tb;
    return make(TermOp::Where, p, {a, tb, tc});
  }
  return make(TermOp::Fma, p, {convert(a, p), convert(b, p), convert(c, p)});
}

TermEvaluator::TermEvaluator(const TermStore& store, const TensorMap& inputs)
    : store_(store), inputs_(inputs), memo_(store.size()), done_(store.size(), 0) {}

double TermEvaluator::eval(TermP root) {
  if (root->id >= done_.size()) {
    memo_.resize(store_.size());
    done_.resize(store_.size(), 0);
  }
  std::vector<TermP> stack{root};
  while (!stack.empty()) {
    TermP t = stack.back();
    if (done_[t->id]) {
      stack.pop_back();
      continue;
    }
    bool ready = true;
    for (int i = 0; i < t->nargs; ++i)
      if (!done_[t->args[i]->id]) {
        ready = false;
        stack.push_back(t->args[i]);
      }
    if (!ready) continue;
    stack.pop_back();
    double v = 0;
    if (t->op == TermOp::Const) {
      v = t->value;
    } else if (t->op == TermOp::Var) {
      const VarInfo& vi = store_.vars()[t->var];
      auto it = inputs_.find(vi.node);
      FP_INTERNAL_CHECK(it != inputs_.end() && vi.cell < it->second.size(), "no value for input {}[{}]",
                        vi.node, vi.cell);
      v = round_to(vi.prec, it->second.data[static_cast<std::size_t>(vi.cell)]);
    } else {
      double a[3] = {0, 0, 0};
      for (int i = 0; i < t->nargs; ++i) a[i] = memo_[t->args[i]->id];
      v = apply(t->op, t->prec, a);
    }
    memo_[t->id] = v;
    done_[t->id] = 1;
  }
  return memo_[root->id];
}

std::string print_term(TermP t, int max_depth) {
  if (t->op == TermOp::Const) return print_constant(t->value, t->prec) + ":" + prec_name(t->prec);
  if (t->op == TermOp::Var) return fmt::format("${}", t->var);
  if (max_depth <= 0) return "…";
  std::string s = fmt::format("{}.{}(", term_op_name(t->op), prec_name(t->prec));
  for (int i = 0; i < t->nargs; ++i) s += (i ? ", " : "") + print_term(t->args[i], max_depth - 1);
  return s + ")";
}

std::size_t reachable_count(const std::vector<TermP>& roots) {
  std::unordered_set<TermP> seen;
  std::vector<TermP> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    TermP t = stack.back();
    stack.pop_back();
    if (!seen.insert(t).second) continue;
    for (int i = 0; i < t->nargs; ++i) stack.push_back(t->args[i]);
  }
  return seen.size();
}

}  // namespace fp::verify
