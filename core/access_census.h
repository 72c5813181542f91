#pragma once
// The access census: who reads and writes which node, in which top-level statement, under which
// loops, guards and scans, and how many times per cell. Placement decides virtual versus stored
// from it, the memory report derives liveness from it, and the rewrite tier relates nests through
// it. It describes a routine that passes the checker (core/checker.h); on any other it describes
// what it can and never fails.
//
// Positions: the routine body's statements, with nested `seq`s spliced in (a seq at the top level
// only groups), form the top-level list; every access belongs to one position.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir.h"

namespace fp {

// A `for` or `scan` enclosing an access within its top-level statement.
struct EnclosingLoop {
  const Stmt* stmt = nullptr;
  std::string sym;
  std::int64_t from = 0;
  std::int64_t to = -1;
  bool is_scan = false;
  // Number of iterations; 0 for a dead loop; saturates at INT64_MAX.
  std::int64_t extent() const;
};

enum class AccessKind : std::uint8_t {
  Read,      // a Get
  Write,     // a set of one cell
  ZeroFill,  // `zero`: every cell
};

struct Access {
  AccessKind kind = AccessKind::Read;
  std::string node;
  std::size_t top = 0;               // position in AccessCensus::top_level()
  const Stmt* stmt = nullptr;        // the set/zero that writes, or the statement whose own expression reads
  const Expr* get = nullptr;         // Read: the Get expression
  std::vector<Index> indices;        // Read, Write: one per axis; ZeroFill: none
  std::vector<EnclosingLoop> loops;  // outermost first; a scan's init is outside its scan
  int guards = 0;                    // enclosing `if` bodies (an if's own condition is outside its body)
  int scan_bodies = 0;               // enclosing scan bodies
  // How many times one cell is accessed, at most, per run of the top-level statement: the product
  // of the extents of the enclosing loops whose iteration the indices do not determine. 0 when an
  // enclosing loop is dead (the access never runs).
  std::int64_t per_cell = 0;

  bool is_write() const { return kind != AccessKind::Read; }
};

// The upper bound Access::per_cell states, for any indices under any loops. An axis determines the
// symbols of its index when its terms, ordered by |coefficient|, form a mixed radix over their
// loop extents (each |coef| exceeds the span of the smaller terms): then no two iterations that
// differ in those symbols reach the same cell.
std::int64_t per_cell_multiplicity(const std::vector<Index>& indices,
                                   const std::vector<EnclosingLoop>& loops);

// Saturating product of non-negative counts (INT64_MAX stands for "too many").
std::int64_t saturating_mul(std::int64_t a, std::int64_t b);

// A plain nest: serial `for`s, each holding exactly one statement, around one `set` (zero loops is
// a bare top-level set). Anything else — a guard, a scan, a local, several statements — is not a
// nest.
struct Nest {
  std::vector<const Stmt*> loops;  // outermost first
  const Stmt* set = nullptr;
};
std::optional<Nest> as_nest(const Stmt& s);
// The loops of a nest as EnclosingLoops (for per_cell_multiplicity).
std::vector<EnclosingLoop> nest_loops(const Nest& n);

class AccessCensus {
 public:
  explicit AccessCensus(const Routine& r);

  const std::vector<const Stmt*>& top_level() const { return top_; }
  // Every access, in program order (a set's reads before its write; a scan's inits before its body).
  const std::vector<Access>& accesses() const { return accesses_; }
  // Accesses of one top-level statement, in program order.
  std::vector<const Access*> at(std::size_t top) const;
  std::vector<const Access*> reads_of(std::string_view node) const;
  std::vector<const Access*> writes_of(std::string_view node) const;  // Write and ZeroFill
  // Sorted, distinct positions writing / reading `node`.
  std::vector<std::size_t> writer_positions(std::string_view node) const;
  std::vector<std::size_t> reader_positions(std::string_view node) const;

 private:
  struct Context;
  void visit(const Stmt& s, Context& ctx);
  void visit_reads(const ExprP& e, const Stmt& holder, const Context& ctx);
  void add(Access a);

  std::vector<const Stmt*> top_;
  std::vector<Access> accesses_;
  std::vector<std::size_t> first_of_top_;  // accesses_[first_of_top_[p] .. first_of_top_[p+1])
  std::map<std::string, std::vector<std::size_t>, std::less<>> reads_;
  std::map<std::string, std::vector<std::size_t>, std::less<>> writes_;
};

}  // namespace fp
