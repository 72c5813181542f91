#pragma once
// The view of a routine the online-softmax recognizers work on: its top-level statements,
// flattened (nested top-level sequences are looked through), each with
//   - its nest, when the statement is exactly `for* -> set` (serial loops, each holding one
//     statement, around one store); anything else — a guard, a scan, a local, several
//     statements — is not a nest and is invisible to the recognizers;
//   - the census: every node it writes and every node it reads, ANYWHERE inside it — loop and
//     scan bodies, guard bodies and conditions, local initializations, scan carried inits — so
//     a guarded or scoped statement that touches a matched node blocks a rewrite it would break,
//     and one that touches none of them does not.
// Positions are 0-based indices into lines(); messages print them 1-based.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir.h"

namespace fp::osm {

struct NestLoop {
  std::string sym;
  std::int64_t from = 0;
  std::int64_t to = -1;
  bool dead() const { return to < from; }
};

struct Nest {
  std::vector<NestLoop> loops;  // outermost first
  const Stmt* store = nullptr;  // the innermost Set

  const NestLoop* loop(const std::string& sym) const;
};

// `s` as a nest, if it is one.
std::optional<Nest> nest_of(const Stmt& s);

// "node[i, j + 1]": a read or store in the text format, for explanations and covers.
std::string read_text(const std::string& node, const std::vector<Index>& idx);
// The cells a claim covers: "node[b, s] for b in 0..1, s in 0..3" (the loops the indices mention).
std::string cells_text(const std::string& node, const std::vector<Index>& idx, const std::vector<NestLoop>& loops);

// A reduction nest: `target[i] = op(target[i], other)` (or `op(other, target[i])` for the
// commutative add and max), the self-read at exactly the stored indices and `other` not reading
// the target node at all.
struct Reduction {
  BinOp op = BinOp::Add;
  Prec prec = Prec::F32;  // the operation's precision
  bool target_first = true;
  ExprP other;
};
std::optional<Reduction> reduction_of(const Nest& n);

// A pointwise nest's value does not read its own target node.
bool is_pointwise(const Nest& n);

// A node read (Get).
inline bool is_get(const ExprP& e) { return e && e->kind == ExprKind::Get; }
// A read of `node`.
inline bool is_get_of(const ExprP& e, const std::string& node) { return is_get(e) && e->name == node; }
// A binary operation `op`.
inline bool is_binary(const ExprP& e, BinOp op) {
  return e && e->kind == ExprKind::Binary && e->binop() == op;
}
// "statement N": a 0-based position, 1-based in messages.
std::string pos_text(int pos);
// Plain iterator of the nest at every axis (fixed allowed on unit axes), no symbol twice, all
// loops used: a store that writes one cell per iteration and every cell of `node`.
bool stores_whole(const Nest& nest, const Node& node);
// A read of a node at exactly the cell the nest stores.
bool reads_at_store(const Expr& g, const Nest& nest);
// Every node read in `e`, in order.
void collect_gets(const ExprP& e, std::vector<const Expr*>& out);

struct Line {
  StmtP stmt;
  std::optional<Nest> nest;
  std::set<std::string> writes;
  std::set<std::string> reads;
};

class RoutineView {
 public:
  explicit RoutineView(const Routine& r);

  const Routine& routine() const { return *routine_; }
  const std::vector<Line>& lines() const { return lines_; }
  const Line& line(int pos) const { return lines_[static_cast<std::size_t>(pos)]; }
  int size() const { return static_cast<int>(lines_.size()); }

  // The declared node of that name, or nullptr (constant time: rewrites look nodes up per match).
  const Node* node(const std::string& name) const;

  // Sorted positions of the statements writing / reading `node`.
  const std::vector<int>& writers(const std::string& node) const;
  const std::vector<int>& readers(const std::string& node) const;
  // The first position strictly between lo and hi that reads (writes) `node`, or -1.
  int read_between(const std::string& node, int lo, int hi) const;
  int write_after(const std::string& node, int pos) const;

  // The single pointwise nest writing `node`, if it has exactly one writer and that writer is one.
  std::optional<int> definition(const std::string& node) const;

  // Source line of the statement at pos (0 when built in memory) — for messages.
  int source_line(int pos) const { return line(pos).stmt->loc.line; }

  // The routine with the statements at the given positions replaced (an empty vector deletes the
  // statement). Every other statement, and the nesting of top-level sequences, is kept as it was
  // (the very same pointers).
  Routine rebuild(const std::map<int, std::vector<StmtP>>& replacements) const;

 private:
  const Routine* routine_;
  std::vector<Line> lines_;
  std::unordered_map<std::string, std::vector<int>> writers_, readers_;
  std::unordered_map<std::string, const Node*> nodes_;
};

}  // namespace fp::osm
