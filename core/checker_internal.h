#pragma once
// Internals shared by the checker's translation units (checker.cpp walks the routine,
// checker_bounds.cpp proves accesses in bounds). Not part of the public API: include
// core/checker.h instead.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/checker.h"
#include "core/ir.h"

namespace fp::checker_detail {

// Collects diagnostics and knows where the walk is: a stack of enclosing constructs ("'for t'"),
// so that a routine built in memory still gets a message that says where.
class Reporter {
 public:
  void enter(std::string crumb) { crumbs_.push_back(std::move(crumb)); }
  void leave() { crumbs_.pop_back(); }
  // The innermost enclosing construct, or "" at the top level.
  const std::string& innermost() const;
  // `leaf` names the construct itself ("set s"); empty when the path alone says it.
  void report(SrcLoc loc, const std::string& leaf, const std::string& message);
  std::vector<Diagnostic> take();

 private:
  std::vector<std::string> crumbs_;
  std::vector<Diagnostic> out_;
};

// An inclusive range of integers; empty when lo > hi. Wide enough that no affine index over int64
// symbols overflows it (products are clamped, see checker_bounds.cpp).
struct Range {
  __int128 lo = 0;
  __int128 hi = -1;
  bool empty() const { return lo > hi; }
};

std::string format_range(const Range& r);

// What an enclosing `if` proves about one affine form: A <= max and/or A >= min.
struct AffineFact {
  Index form;  // canonical, terms sorted by symbol, offset 0
  std::optional<__int128> max;
  std::optional<__int128> min;
};

// Loop symbol ranges and guard facts in scope at one point of the walk. Loop ranges are constant
// boxes, so the range of an affine index follows from the signs of its coefficients; a guard
// `lt(idx(A), C)` narrows every index whose canonical form is A plus a constant.
class AffineScope {
 public:
  void push_loop(const std::string& sym, std::int64_t from, std::int64_t to);
  void pop_loop();
  bool is_bound(const std::string& sym) const;
  // A loop enclosing this point runs zero times: nothing here ever executes.
  bool unreachable() const { return dead_loops_ > 0; }

  void push_fact(AffineFact f) { facts_.push_back(std::move(f)); }
  void pop_fact() { facts_.pop_back(); }

  // Range of `idx` over every iteration of the enclosing loops, refined by enclosing guards.
  // Every symbol of idx must be bound.
  Range range_of(const Index& idx) const;
  // The fact an `if` condition proves, when it is `lt.p(idx.q(A), C)` or `lt.p(C, idx.q(A))` with
  // every integer involved exactly representable at p and q (otherwise rounding could make the
  // comparison disagree with the integer one, and nothing is proved).
  std::optional<AffineFact> fact_of_condition(const Expr& cond) const;

 private:
  struct Loop {
    std::string sym;
    std::int64_t from;
    std::int64_t to;
  };
  Range unrefined(const Index& canonical) const;
  const Loop* find(const std::string& sym) const;

  std::vector<Loop> loops_;
  std::vector<AffineFact> facts_;
  int dead_loops_ = 0;
};

}  // namespace fp::checker_detail
