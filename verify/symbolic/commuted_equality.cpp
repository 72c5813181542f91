#include "verify/symbolic/commuted_equality.h"

#include <cstring>

namespace fp::verify {

namespace {

bool commutes(const Term& t) {
  return t.op == TermOp::Add || t.op == TermOp::Mul || t.op == TermOp::Fma;
}

std::size_t mix(std::size_t h, std::size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

// The leaf's own identity: a constant by its bits, a variable by its index.
std::size_t leaf_hash(const Term& t) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &t.value, sizeof bits);
  return mix(mix(static_cast<std::size_t>(t.op), static_cast<std::size_t>(t.prec)), t.op == TermOp::Var ? t.var : bits);
}

}  // namespace

std::size_t CommutedEquality::hash_of(TermP t) {
  if (auto it = hash_.find(t->id); it != hash_.end()) return it->second;
  std::size_t h = leaf_hash(*t);
  if (t->nargs > 0) {
    h = mix(static_cast<std::size_t>(t->op), static_cast<std::size_t>(t->prec));
    std::size_t first = hash_of(t->args[0]);
    std::size_t second = t->nargs > 1 ? hash_of(t->args[1]) : 0;
    if (commutes(*t)) {  // symmetric in the two swapped operands
      h = mix(h, first + second);
      h = mix(h, first ^ second);
    } else {
      h = mix(mix(h, first), second);
    }
    if (t->nargs > 2) h = mix(h, hash_of(t->args[2]));
  }
  hash_.emplace(t->id, h);
  return h;
}

bool CommutedEquality::operator()(TermP a, TermP b) {
  if (a == b) return true;
  if (a->op != b->op || a->prec != b->prec || a->nargs != b->nargs) return false;
  if (a->nargs == 0) return false;  // leaves are hash-consed: distinct pointers differ
  if (hash_of(a) != hash_of(b)) return false;
  const std::uint64_t key = (static_cast<std::uint64_t>(a->id) << 32) | b->id;
  if (auto it = equal_.find(key); it != equal_.end()) return it->second;
  equal_.emplace(key, false);  // terms are acyclic: a re-entry cannot happen, but stay finite
  bool same = true;
  for (std::uint8_t i = 0; i < a->nargs && same; ++i) same = (*this)(a->args[i], b->args[i]);
  if (!same && commutes(*a))
    same = (*this)(a->args[0], b->args[1]) && (*this)(a->args[1], b->args[0]) &&
           (a->nargs < 3 || (*this)(a->args[2], b->args[2]));
  equal_[key] = same;
  return same;
}

}  // namespace fp::verify
