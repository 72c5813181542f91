// A zero folded into the accumulation that follows it (exec/c_generator.h): a top-level `zero W`
// whose next statement is a reduction nest storing every cell of W is deferred to that nest, whose
// schedules that load each cell once start it at the literal +0 the buffer would hold; the others,
// and any other next statement, run the memset first. Saves a write and a read of W per run.

#include <optional>
#include <string>
#include <vector>

#include "exec/c_generator.h"

namespace fp::codegen {

// `zero W` followed (only replayed definitions and zeros of other nodes in between) by a reduction
// nest that stores every cell of W (each axis a target loop over the whole dimension, or a fixed 0
// of a dimension of 1): the memset is deferred to that nest (pending_zeros_), whose schedules that load each
// cell once (lanes, order_free_rows) start the cell at the literal +0 the buffer would hold — the same value
// — and never read the buffer's old contents; the schedules that reload cells (rows in panels, a
// single cell) run the memset first (zero_now). Saves a write and a read of W per run (the score
// matrix of attention).
bool CGenerator::zero_taken_by_next(int p) const {
  if (!opts_.jam) return false;
  const Stmt& z = *plan_.top[static_cast<std::size_t>(p)];
  if (plan_.is_virtual(z.name)) return false;
  // Past replayed definitions and zeros of other nodes (they neither read nor write W).
  std::size_t q = static_cast<std::size_t>(p) + 1;
  while (q < plan_.top.size() &&
         (plan_.replayed[q] || (plan_.top[q]->kind == StmtKind::Zero && plan_.top[q]->name != z.name)))
    ++q;
  if (q >= plan_.top.size()) return false;
  const std::optional<NestShape> shape = nest_shape(*plan_.top[q]);
  if (!shape || shape->reduced.empty() || shape->nest.set->name != z.name) return false;
  const Node& w = plan_.node(z.name);
  const std::vector<Index>& idx = shape->nest.set->indices;
  for (std::size_t a = 0; a < w.dims.size(); ++a) {
    const Index i = idx[a].canonical();
    if (i.is_fixed()) {
      if (w.dims[a] != 1 || i.offset != 0) return false;
      continue;
    }
    if (!i.is_plain_iterator()) return false;
    bool full = false;
    for (const Stmt* t : shape->target)
      if (t->sym == i.terms[0].sym && t->from == 0 && t->to == w.dims[a] - 1) full = true;
    if (!full) return false;
  }
  return true;
}

// Before a statement that is not the reduction nest taking a deferred zero: the memset now.
void CGenerator::emit_pending_zero(const Stmt& s) {
  if (pending_zeros_.empty()) return;
  if (s.kind == StmtKind::Zero) return;  // of another node (zero_taken_by_next looked past it)
  const std::optional<NestShape> shape = nest_shape(s);
  std::vector<std::string> kept;
  for (const std::string& z : pending_zeros_) {
    if (shape && opts_.jam && !shape->reduced.empty() && shape->nest.set->name == z)
      kept.push_back(z);
    else
      em_.zero_node(plan_.node(z));
  }
  pending_zeros_ = std::move(kept);
}

// In a schedule that reads W's cells from the buffer: the deferred zero as a memset.
void CGenerator::zero_now(const Node& w) {
  if (!zero_start_) return;
  em_.zero_node(w);
  zero_start_ = false;
}

}  // namespace fp::codegen
