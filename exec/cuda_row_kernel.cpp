// The CUDA row kernel's plan (exec/cuda_row_kernel.h).

#include "exec/cuda_row_kernel.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/ir_visit.h"

namespace fp::codegen {

namespace {

constexpr std::int64_t kMaxBlocks = std::numeric_limits<std::int32_t>::max();

// The symbols of the loops and scans inside `body`, with their ranges.
using Ranges = std::map<std::string, std::pair<std::int64_t, std::int64_t>>;

// One read's split of an axis index: the uniform part (terms of uniform symbols) and the range of
// the rest (offset plus the terms of inner loop symbols, over their ranges).
struct AxisRead {
  Index uniform;
  std::int64_t lo = 0, hi = 0;
};

std::optional<AxisRead> split_axis(const Index& idx, const std::set<std::string>& uniform,
                                   const Ranges& inner) {
  AxisRead a;
  a.lo = a.hi = idx.offset;
  for (const Index::Term& t : idx.canonical().terms) {
    if (uniform.count(t.sym)) {
      a.uniform.terms.push_back(t);
      continue;
    }
    auto r = inner.find(t.sym);
    if (r == inner.end()) return std::nullopt;  // the row spread over threads, or unknown
    const std::int64_t x = t.coef * r->second.first, y = t.coef * r->second.second;
    a.lo += std::min(x, y);
    a.hi += std::max(x, y);
  }
  return a;
}

// Reads of each node in the scan's body (direct Gets), and the nodes read through replays.
struct BodyReads {
  std::map<std::string, std::vector<const std::vector<Index>*>> direct;
  std::set<std::string> replayed;
  Ranges inner;
  bool inner_rebinds = false;  // two inner loops bind one symbol over different ranges
};

BodyReads body_reads(const ProgramPlan& plan, const Stmt& scan) {
  BodyReads out;
  for (const auto& b : scan.body) {
    for_each_stmt(b, [&](const Stmt& t) {
      if (t.kind == StmtKind::For || t.kind == StmtKind::Scan) {
        auto [it, fresh] = out.inner.try_emplace(t.sym, t.from, t.to);
        if (!fresh && it->second != std::pair(t.from, t.to)) out.inner_rebinds = true;
      }
      for_each_own_expr(t, [&](const ExprP& e) {
        for_each_expr(e, [&](const Expr& x) {
          if (x.kind != ExprKind::Get) return;
          if (plan.is_virtual(x.name)) {
            const auto& via = plan.replay_reads(x.name);
            out.replayed.insert(via.begin(), via.end());
          } else {
            out.direct[x.name].push_back(&x.indices);
          }
        });
      });
    });
  }
  return out;
}

std::optional<StagedNode> stage_node(const Node& n, int index, const std::vector<const std::vector<Index>*>& reads,
                                     const std::set<std::string>& uniform, const Ranges& inner) {
  StagedNode s;
  s.node = index;
  std::vector<std::int64_t> lo(n.dims.size()), hi(n.dims.size());
  for (std::size_t r = 0; r < reads.size(); ++r) {
    if (reads[r]->size() != n.dims.size()) return std::nullopt;
    for (std::size_t k = 0; k < n.dims.size(); ++k) {
      std::optional<AxisRead> a = split_axis((*reads[r])[k], uniform, inner);
      if (!a) return std::nullopt;
      if (r == 0) {
        s.base.push_back(a->uniform);
        lo[k] = a->lo;
        hi[k] = a->hi;
      } else {
        if (!(a->uniform == s.base[k])) return std::nullopt;
        lo[k] = std::min(lo[k], a->lo);
        hi[k] = std::max(hi[k], a->hi);
      }
    }
  }
  for (std::size_t k = 0; k < n.dims.size(); ++k) {
    s.base[k].offset = lo[k];
    s.extent.push_back(hi[k] - lo[k] + 1);
  }
  return s;
}

// The nodes staged for scan `scan` when the row loop rows[spread] is spread over the threads (the
// other rows and the scan's symbol uniform over a block), in node order while they fit.
std::vector<StagedNode> staged_nodes(const ProgramPlan& plan, int position, const RowKernelPlan& k,
                                     std::size_t spread, const BodyReads& reads) {
  std::set<std::string> uniform{k.scan->sym};
  for (std::size_t i = 0; i < k.rows.size(); ++i)
    if (i != spread) uniform.insert(k.rows[i]->sym);
  const std::set<std::string> written = written_nodes(*plan.top[static_cast<std::size_t>(position)]);
  std::vector<StagedNode> out;
  std::int64_t budget = kSharedBudget;
  for (std::size_t i = 0; i < plan.placed.nodes.size(); ++i) {
    const Node& n = plan.placed.nodes[i];
    auto it = reads.direct.find(n.name);
    if (it == reads.direct.end() || written.count(n.name) || reads.replayed.count(n.name)) continue;
    if (std::any_of(k.tiles.begin(), k.tiles.end(), [&](const RowPrivateNode& t) { return t.node == static_cast<int>(i); }))
      continue;
    std::optional<StagedNode> st = stage_node(n, static_cast<int>(i), it->second, uniform, reads.inner);
    if (!st) continue;
    const std::int64_t cells = st->cells();
    if (cells <= 0 || cells >= n.cell_count() || cells > budget / prec_bytes(n.prec)) continue;
    budget -= cells * prec_bytes(n.prec);
    out.push_back(std::move(*st));
  }
  return out;
}

std::int64_t extent_of(const Stmt& loop) { return loop.to - loop.from + 1; }

}  // namespace

std::int64_t StagedNode::cells() const {
  std::int64_t c = 1;
  for (std::int64_t e : extent) c = e > 0 && c > std::numeric_limits<std::int64_t>::max() / e ? -1 : c * e;
  return c;
}

std::optional<RowKernelPlan> plan_row_kernel(const ProgramPlan& plan, int position,
                                             const std::vector<const Stmt*>& rows) {
  if (rows.empty()) return std::nullopt;
  for (const Stmt* r : rows)
    if (extent_of(*r) <= 0) return std::nullopt;  // a dead row: nothing runs (and no empty grid)
  const Stmt& last = *rows.back();
  RowKernelPlan k;
  k.rows = rows;
  k.body = &last.body;
  for (;;) {  // a row body that is one block: its statements
    const Stmt* only = nullptr;
    int live = 0;
    for (const auto& b : *k.body)
      if (b && b->kind != StmtKind::Comment && b->kind != StmtKind::Noop) {
        only = b.get();
        ++live;
      }
    if (live != 1 || only->kind != StmtKind::Seq) break;
    k.body = &only->body;
  }
  for (const auto& b : *k.body)
    if (b && b->kind == StmtKind::Scan && !b->is_dead_loop()) {
      k.scan = b.get();
      break;
    }
  if (!k.scan) return std::nullopt;

  for (RowPrivateNode& r : row_private_nodes(plan, position, rows))
    if (slice_cells(plan.placed.nodes[static_cast<std::size_t>(r.node)], r) <= kTileCellLimit)
      k.tiles.push_back(std::move(r));

  // The spread row: the one leaving the most bytes staged, then the longest (the most threads).
  const BodyReads reads = body_reads(plan, *k.scan);
  bool rebinds = reads.inner_rebinds || reads.inner.count(k.scan->sym);
  for (const Stmt* r : rows) rebinds = rebinds || reads.inner.count(r->sym);
  std::int64_t best_bytes = -1;
  for (std::size_t j = 0; j < rows.size(); ++j) {
    if (extent_of(*rows[j]) <= 0 || (extent_of(*rows[j]) + 31) / 32 > kMaxBlocks) continue;
    std::vector<StagedNode> staged;
    if (!rebinds) staged = staged_nodes(plan, position, k, j, reads);
    std::int64_t bytes = 0;
    for (const StagedNode& st : staged)
      bytes += st.cells() * prec_bytes(plan.placed.nodes[static_cast<std::size_t>(st.node)].prec);
    if (bytes > best_bytes || (bytes == best_bytes && extent_of(*rows[j]) > extent_of(*rows[k.spread]))) {
      best_bytes = bytes;
      k.spread = j;
      k.staged = std::move(staged);
    }
  }
  if (best_bytes < 0 || (k.tiles.empty() && k.staged.empty())) return std::nullopt;
  return k;
}

}  // namespace fp::codegen
