// The memory report (core/memory_report.h). Liveness is over the top-level statements as they run
// after placement: a virtual node's defining nest does not run where it stands; its reads happen
// at every statement that reads the node (through any chain of virtual nodes).

#include "core/memory_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "core/access_census.h"

namespace fp {

namespace {

constexpr std::int64_t kMany = std::numeric_limits<std::int64_t>::max();

bool is_square(const Node& n, const std::map<std::string, std::int64_t>& attrs) {
  std::set<std::int64_t> lengths;
  for (const char* key : {"seq_q", "seq_k"}) {
    auto it = attrs.find(key);
    if (it != attrs.end()) lengths.insert(it->second);
  }
  int axes = 0;
  for (auto d : n.dims)
    if (lengths.count(d)) ++axes;
  return axes >= 2;
}

std::int64_t buffer_bytes(const Node& n) {
  std::int64_t b = prec_bytes(n.prec);
  for (auto d : n.dims) b = saturating_mul(b, d);
  return b;
}

// Which buffers each top-level statement reads and writes once virtual nodes are replayed at
// their reads.
class Effects {
 public:
  explicit Effects(const Routine& r) : census_(r) {
    for (const Node& n : r.nodes)
      if (n.mode == MemMode::Virtual) virtual_.insert(n.name);
  }

  std::size_t size() const { return census_.top_level().size(); }

  // A statement that only writes virtual nodes is their definition: it runs where they are read.
  bool replayed_elsewhere(std::size_t pos) const {
    bool wrote = false;
    for (const Access* a : census_.at(pos)) {
      if (!a->is_write()) continue;
      if (!virtual_.count(a->node)) return false;
      wrote = true;
    }
    return wrote;
  }

  std::set<std::string> reads(std::size_t pos) {
    std::set<std::string> out;
    if (replayed_elsewhere(pos)) return out;
    for (const Access* a : census_.at(pos))
      if (!a->is_write()) add_read(a->node, out);
    return out;
  }

  std::set<std::string> writes(std::size_t pos) const {
    std::set<std::string> out;
    if (replayed_elsewhere(pos)) return out;
    for (const Access* a : census_.at(pos))
      if (a->is_write() && !virtual_.count(a->node)) out.insert(a->node);
    return out;
  }

 private:
  void add_read(const std::string& node, std::set<std::string>& out) {
    if (!virtual_.count(node)) {
      out.insert(node);
      return;
    }
    const auto& via = replay_reads(node);
    out.insert(via.begin(), via.end());
  }

  // The buffers one replay of virtual `node` reads (memoized; a cycle, impossible after
  // placement, contributes nothing twice).
  const std::set<std::string>& replay_reads(const std::string& node) {
    auto it = replay_.find(node);
    if (it != replay_.end()) return it->second;
    std::set<std::string>& out = replay_[node];
    for (std::size_t pos : census_.writer_positions(node))
      for (const Access* a : census_.at(pos))
        if (!a->is_write() && a->node != node) add_read(a->node, out);
    return out;
  }

  AccessCensus census_;
  std::set<std::string> virtual_;
  std::map<std::string, std::set<std::string>> replay_;
};

// Bytes live at once, at most: each buffer is live over [first access, last access], inputs from
// the start and outputs to the end.
std::int64_t peak(const Routine& r, const std::vector<BufferInfo>& buffers) {
  Effects fx(r);
  std::size_t n = std::max<std::size_t>(fx.size(), 1);
  std::map<std::string, std::pair<std::size_t, std::size_t>> span;
  auto touch = [&](const std::string& node, std::size_t pos) {
    auto [it, fresh] = span.try_emplace(node, pos, pos);
    if (!fresh) {
      it->second.first = std::min(it->second.first, pos);
      it->second.second = std::max(it->second.second, pos);
    }
  };
  for (std::size_t p = 0; p < fx.size(); ++p) {
    for (const auto& node : fx.reads(p)) touch(node, p);
    for (const auto& node : fx.writes(p)) touch(node, p);
  }
  for (const Node& node : r.nodes) {
    if (node.is_input) touch(node.name, 0);
    if (node.is_output) touch(node.name, n - 1);
  }
  // Bytes becoming live (+) and dead (-) at each position; the running sum is what is live.
  std::vector<__int128> delta(n + 1, 0);
  for (const auto& b : buffers) {
    auto it = span.find(b.name);
    if (it == span.end()) continue;  // never touched: allocated, never live
    delta[it->second.first] += b.bytes;
    delta[it->second.second + 1] -= b.bytes;
  }
  __int128 live = 0, most = 0;
  for (std::size_t p = 0; p < n; ++p) most = std::max(most, live += delta[p]);
  return most > kMany ? kMany : static_cast<std::int64_t>(most);
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

}  // namespace

MemoryReport memory_report(const Routine& placed) {
  MemoryReport m;
  for (const Node& n : placed.nodes) {
    if (n.mode == MemMode::Virtual) continue;
    BufferInfo b{n.name, n.dims, n.prec, n.mode, buffer_bytes(n), is_square(n, placed.attrs)};
    m.total_bytes = m.total_bytes > kMany - b.bytes ? kMany : m.total_bytes + b.bytes;
    if (b.square) ++m.square_buffers;
    m.buffers.push_back(std::move(b));
  }
  m.peak_bytes = peak(placed, m.buffers);
  return m;
}

std::string format_memory_report(const MemoryReport& m) {
  std::size_t wn = 6, wd = 4, wm = 4, wb = 5;  // widths of the header words
  for (const auto& b : m.buffers) {
    wn = std::max(wn, b.name.size());
    wd = std::max(wd, dims_text(b.dims).size());
    wm = std::max(wm, std::string(mem_mode_name(b.mode)).size());
    wb = std::max(wb, fmt::format("{}", b.bytes).size());
  }
  std::string out = fmt::format("{:<{}}  {:<4}  {:<{}}  {:<{}}  {:>{}}\n", "buffer", wn, "prec", "dims", wd,
                                "mode", wm, "bytes", wb);
  for (const auto& b : m.buffers)
    out += fmt::format("{:<{}}  {:<4}  {:<{}}  {:<{}}  {:>{}}{}\n", b.name, wn, prec_name(b.prec),
                       dims_text(b.dims), wd, mem_mode_name(b.mode), wm, b.bytes, wb,
                       b.square ? "  square" : "");
  out += fmt::format("total {} bytes in {} buffer{} ({} square), peak {} bytes\n", m.total_bytes,
                     m.buffers.size(), m.buffers.size() == 1 ? "" : "s", m.square_buffers, m.peak_bytes);
  return out;
}

}  // namespace fp
