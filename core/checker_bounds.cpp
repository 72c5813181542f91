// The checker's range analysis: the values an affine index takes over every iteration of the loops
// enclosing it, narrowed by the guards around it. Linear in the size of the index and the number
// of guards in scope; never enumerates iterations (extents can be 10^6 and more).

#include <algorithm>
#include <cmath>

#include "core/checker_internal.h"

namespace fp::checker_detail {

namespace {

// Far beyond any int64 value, far below where __int128 overflows: a sum of up to 2^26 clamped
// terms still fits, and any clamped value is out of every node's bounds anyway.
constexpr __int128 kClamp = static_cast<__int128>(1) << 100;

__int128 clamp(__int128 v) {
  return std::clamp(v, -kClamp, kClamp);
}

// Canonical form with terms in symbol order, so that two spellings of one affine form compare
// equal whatever order their terms first appeared in.
Index sorted_canonical(const Index& idx) {
  Index c = idx.canonical();
  std::sort(c.terms.begin(), c.terms.end(),
            [](const Index::Term& a, const Index::Term& b) { return a.sym < b.sym; });
  return c;
}

// Largest magnitude below which every integer is exactly representable at `p`.
double exact_integer_limit(Prec p) {
  switch (p) {
    case Prec::F64:
      return 9007199254740992.0;  // 2^53
    case Prec::F32:
      return 16777216.0;  // 2^24
    case Prec::F16:
      return 2048.0;  // 2^11
    case Prec::BF16:
      return 256.0;  // 2^8
    case Prec::I32:
      return 2147483647.0;  // the i32 range (its lower end is one wider)
  }
  return 0.0;
}

bool exact_at(__int128 v, Prec p) {
  double lim = exact_integer_limit(p);
  double d = static_cast<double>(v);
  if (p == Prec::I32) return d >= -2147483648.0 && d <= lim;
  return std::fabs(d) <= lim;
}

bool range_exact_at(const Range& r, Prec p) {
  return exact_at(r.lo, p) && exact_at(r.hi, p);
}

std::string i128_str(__int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  std::string s;
  while (v != 0) {
    int digit = static_cast<int>(v % 10);
    s.push_back(static_cast<char>('0' + (neg ? -digit : digit)));
    v /= 10;
  }
  if (neg) s.push_back('-');
  std::reverse(s.begin(), s.end());
  return s;
}

}  // namespace

std::string format_range(const Range& r) {
  return i128_str(r.lo) + ".." + i128_str(r.hi);
}

void AffineScope::push_loop(const std::string& sym, std::int64_t from, std::int64_t to) {
  loops_.push_back({sym, from, to});
  if (to < from) ++dead_loops_;
}

void AffineScope::pop_loop() {
  if (loops_.back().to < loops_.back().from) --dead_loops_;
  loops_.pop_back();
}

const AffineScope::Loop* AffineScope::find(const std::string& sym) const {
  for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
    if (it->sym == sym) return &*it;
  return nullptr;
}

bool AffineScope::is_bound(const std::string& sym) const {
  return find(sym) != nullptr;
}

Range AffineScope::unrefined(const Index& canonical) const {
  Range r{canonical.offset, canonical.offset};
  for (const auto& t : canonical.terms) {
    const Loop* l = find(t.sym);
    if (!l) continue;  // unbound symbols are reported by the walker; they add nothing here
    __int128 a = clamp(static_cast<__int128>(t.coef) * l->from);
    __int128 b = clamp(static_cast<__int128>(t.coef) * l->to);
    r.lo = clamp(r.lo + std::min(a, b));
    r.hi = clamp(r.hi + std::max(a, b));
  }
  return r;
}

Range AffineScope::range_of(const Index& idx) const {
  Index c = sorted_canonical(idx);
  Range r = unrefined(c);
  if (c.terms.empty()) return r;
  for (const auto& f : facts_) {
    if (f.form.terms != c.terms) continue;
    // idx = form + c.offset, and the fact bounds form.
    if (f.max) r.hi = std::min(r.hi, clamp(*f.max + c.offset));
    if (f.min) r.lo = std::max(r.lo, clamp(*f.min + c.offset));
  }
  return r;
}

std::optional<AffineFact> AffineScope::fact_of_condition(const Expr& cond) const {
  if (cond.kind != ExprKind::Binary || cond.binop() != BinOp::Lt || cond.args.size() != 2)
    return std::nullopt;
  const ExprP& a = cond.args[0];
  const ExprP& b = cond.args[1];
  if (!a || !b) return std::nullopt;
  bool index_left = a->kind == ExprKind::EmbedIndex && b->kind == ExprKind::Const;
  bool index_right = a->kind == ExprKind::Const && b->kind == ExprKind::EmbedIndex;
  if (!index_left && !index_right) return std::nullopt;
  const Expr& emb = index_left ? *a : *b;
  const Expr& con = index_left ? *b : *a;
  if (emb.indices.size() != 1) return std::nullopt;
  for (const auto& t : emb.indices[0].terms)
    if (!is_bound(t.sym)) return std::nullopt;

  double c = con.value;
  if (!std::isfinite(c) || std::trunc(c) != c) return std::nullopt;
  auto ci = static_cast<__int128>(c);
  if (!exact_at(ci, con.prec) || !exact_at(ci, cond.prec)) return std::nullopt;
  Index form = sorted_canonical(emb.indices[0]);
  Range values = range_of(form);
  if (!range_exact_at(values, emb.prec) || !range_exact_at(values, cond.prec)) return std::nullopt;

  AffineFact f;
  __int128 off = form.offset;
  form.offset = 0;
  f.form = std::move(form);
  // A = form + off; lt(A, C) proves A <= C - 1, lt(C, A) proves A >= C + 1.
  if (index_left)
    f.max = ci - 1 - off;
  else
    f.min = ci + 1 - off;
  return f;
}

}  // namespace fp::checker_detail
