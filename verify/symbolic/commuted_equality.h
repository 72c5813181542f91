#pragma once
// Equality of two terms up to the order of the operands of +, · and the product inside fma: IEEE
// 754 addition and multiplication are commutative (the result is the correctly rounded exact sum
// or product, which does not depend on the order; every NaN counts as equal to every NaN in the
// semantics), so two terms that differ only there have the same value on every input. Used to
// prove a pair exact without the solver when a program only reorders such operands.
//
// Memoized on pairs of term ids and filtered by a hash invariant under those swaps, so a shared
// DAG is walked once per pair of nodes, never once per path.

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "verify/symbolic/term.h"

namespace fp::verify {

class CommutedEquality {
 public:
  bool operator()(TermP a, TermP b);

 private:
  std::size_t hash_of(TermP t);
  std::unordered_map<std::uint32_t, std::size_t> hash_;
  std::unordered_map<std::uint64_t, bool> equal_;  // key: (a->id << 32) | b->id
};

}  // namespace fp::verify
