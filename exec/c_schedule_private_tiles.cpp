// Row-private tiles (exec/c_generator.h, exec/row_private.h): in a statement run in lanes, a node
// every access of which lies in the statement and follows the band's rows lives as one slice per lane
// block on the stack (kLaneWidth lanes of the cells the rows do not index), zeroed when the block
// starts, instead of as a whole buffer on the heap. Applies where the slices fit the stack limit
// together and a slice is smaller than the buffer; the lemma of exec/row_private.h says why the
// values are the same.

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "exec/c_generator.h"
#include "exec/row_private.h"

namespace fp::codegen {

// Per statement run in lanes, the row-private nodes of its chain up to the band's end whose
// slices fit the stack limit together (first come first served), and only where a slice is
// smaller than the buffer. Decided before any code is emitted: position() and run() skip their
// buffers.
void CGenerator::plan_private_tiles() {
  for (std::size_t p = 0; p < plan_.top.size(); ++p) {
    if (plan_.replayed[p]) continue;
    const std::optional<LanePlan> lp = lane_plan(*plan_.top[p]);
    if (!lp) continue;
    const std::vector<const Stmt*> rows(
        lp->chain.begin(), lp->chain.begin() + static_cast<std::ptrdiff_t>(lp->first + lp->band.size()));
    const std::size_t lane_row =
        static_cast<std::size_t>(std::find(rows.begin(), rows.end(), lp->lane) - rows.begin());
    std::int64_t budget = opts_.stack_limit;
    std::vector<PrivateTile> tiles;
    for (const codegen::RowPrivateNode& r : codegen::row_private_nodes(plan_, static_cast<int>(p), rows)) {
      const Node& n = node_at(r.node);
      if (stack_buffer(r.node)) continue;
      PrivateTile t;
      t.node = r.node;
      t.row.assign(n.dims.size(), false);
      for (std::size_t a : r.axis) t.row[a] = true;
      t.lane_axis = r.axis[lane_row];
      t.slice_cells = saturating_mul(kLaneWidth, codegen::slice_cells(n, r));
      t.slice_bytes =
          saturating_mul(t.slice_cells, em_.node_bytes(n) / std::max<std::int64_t>(n.cell_count(), 1));
      if (t.slice_bytes >= em_.node_bytes(n) || t.slice_bytes > budget) continue;
      budget -= t.slice_bytes;
      private_nodes_.insert(r.node);
      tiles.push_back(std::move(t));
    }
    if (tiles.empty()) continue;
    std::int64_t bytes = 0;
    for (const PrivateTile& t : tiles) bytes += t.slice_bytes;
    private_tiles_[static_cast<int>(p)] =
        PrivateTiles{std::move(tiles), lp->parallel ? fmt::format("{}LL * (int64_t)fpx_nt", bytes)
                                                    : fmt::format("{}LL", bytes)};
  }
}

// Declares and zeroes the statement's slices at the top of a lane block and points the emitter
// at them.
void CGenerator::open_private_tiles(const std::vector<PrivateTile>& tiles, const LanePlan& lp) {
  for (const PrivateTile& t : tiles) {
    const Node& n = node_at(t.node);
    const std::string b = em_.buffer(n.name);
    em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));  /* row-private slice of '{}' */",
                         codegen::stype(n.prec), b, t.slice_cells, sanitize_comment(n.name)));
    em_.line(fmt::format("memset({0}, 0, sizeof {0});", b));
    codegen::Emitter::PrivateSlice slice;
    slice.row = t.row;
    slice.lane_axis = t.lane_axis;
    slice.origin = Aff{{{lane_block_, kLaneWidth}}, lp.lane->from};
    slice.width = kLaneWidth;
    em_.privatize(n.name, std::move(slice));
  }
}

}  // namespace fp::codegen
