#include "exec/run_memory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "core/access_census.h"
#include "core/diagnostic.h"
#include "core/memory_report.h"

namespace fp {

namespace {

constexpr std::int64_t kDoubleBytes = 8;  // a Tensor cell (core/tensor.h)
constexpr std::size_t kBuffersNamed = 3;

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return a > std::numeric_limits<std::int64_t>::max() - b ? std::numeric_limits<std::int64_t>::max() : a + b;
}

std::int64_t cells(const Node& n) {
  std::int64_t c = 1;
  for (auto d : n.dims) c = saturating_mul(c, d);
  return c;
}

std::int64_t tensor_bytes(const Node& n) {
  return saturating_mul(cells(n), kDoubleBytes);
}

std::int64_t storage_bytes(const Node& n) {
  return saturating_mul(cells(n), prec_bytes(n.prec));
}

void add(RunMemory& m, const Node& n, std::string how, std::int64_t bytes) {
  m.bytes = saturating_add(m.bytes, bytes);
  m.buffers.push_back(RunBuffer{n.name, n.dims, std::move(how), bytes});
}

// The caller's TensorMaps: inputs bound before the run, outputs returned by it.
void add_tensors(RunMemory& m, const Routine& r, bool inputs_shared) {
  for (const Node& n : r.nodes) {
    if (n.is_input && !inputs_shared) add(m, n, "input tensor, f64 cells", tensor_bytes(n));
    if (n.is_output && !n.is_input) add(m, n, "output tensor, f64 cells", tensor_bytes(n));
  }
}

RunMemory interpreter(const Routine& r, bool inputs_shared) {
  RunMemory m;
  m.basis = "interpreter: every node as f64 cells for the whole run, plus the input tensors";
  for (const Node& n : r.nodes) add(m, n, "node, f64 cells", tensor_bytes(n));
  for (const Node& n : r.nodes)
    if (n.is_input && !inputs_shared) add(m, n, "input tensor, f64 cells", tensor_bytes(n));
  return m;
}

RunMemory compiled_c(const Routine& r, const PlacementConfig& placement, bool inputs_shared) {
  RunMemory m;
  m.basis = "compiled C: the placed routine's peak of live buffers, plus the input and output tensors";
  const MemoryReport report = memory_report(place(r, placement).routine);
  add_tensors(m, r, inputs_shared);
  m.bytes = saturating_add(m.bytes, report.peak_bytes);
  // The peak is over live sets, not single buffers; the buffers it may hold name the culprits.
  for (const BufferInfo& b : report.buffers)
    m.buffers.push_back(RunBuffer{b.name, b.dims, fmt::format("{} buffer", prec_name(b.prec)), b.bytes});
  return m;
}

RunMemory cuda_host(const Routine& r, bool inputs_shared) {
  RunMemory m;
  m.basis = "CUDA (host side): the input and output tensors and their staging copies";
  add_tensors(m, r, inputs_shared);
  for (const Node& n : r.nodes)
    if (n.is_input || n.is_output)
      add(m, n, fmt::format("{} staging copy", prec_name(n.prec)), storage_bytes(n));
  return m;
}

void sort_buffers(RunMemory& m) {
  std::stable_sort(m.buffers.begin(), m.buffers.end(),
                   [](const RunBuffer& a, const RunBuffer& b) { return a.bytes > b.bytes; });
}

}  // namespace

RunMemory estimate_run_memory(const Routine& r, const std::string& executor, const PlacementConfig& placement,
                              bool inputs_shared) {
  RunMemory m = executor == "c"      ? compiled_c(r, placement, inputs_shared)
                : executor == "cuda" ? cuda_host(r, inputs_shared)
                                     : interpreter(r, inputs_shared);
  sort_buffers(m);
  return m;
}

RunMemory combine(std::vector<RunMemory> parts, std::string basis) {
  RunMemory m;
  m.basis = std::move(basis);
  for (RunMemory& p : parts) {
    m.bytes = saturating_add(m.bytes, p.bytes);
    for (RunBuffer& b : p.buffers) m.buffers.push_back(std::move(b));
  }
  sort_buffers(m);
  return m;
}

RunMemory parallel_pairs_memory(const std::vector<std::pair<const Routine*, const Routine*>>& pairs,
                                const std::string& executor, int jobs, std::string basis) {
  std::vector<RunMemory> each;
  for (const auto& [src, tgt] : pairs)
    each.push_back(combine(
        {estimate_run_memory(*src, executor, {}), estimate_run_memory(*tgt, executor, {}, true)}, ""));
  std::sort(each.begin(), each.end(),
            [](const RunMemory& a, const RunMemory& b) { return a.bytes > b.bytes; });
  each.resize(std::min<std::size_t>(each.size(), static_cast<std::size_t>(std::max(jobs, 1))));
  return combine(std::move(each), std::move(basis));
}

void check_run_memory(const RunMemory& need, const MemoryLimit& limit, const std::string& what) {
  if (!limit.bytes || need.bytes <= *limit.bytes) return;
  std::vector<std::string> named;
  for (std::size_t i = 0; i < need.buffers.size() && i < kBuffersNamed; ++i) {
    const RunBuffer& b = need.buffers[i];
    named.push_back(
        fmt::format("{} [{}] {} ({})", b.name, fmt::join(b.dims, ", "), format_bytes(b.bytes), b.how));
  }
  throw UserError(
      kExitUnavailable, what, 0, 0,
      fmt::format(
          "running it needs at least {} of memory ({}), over the limit of {} ({}); the biggest buffers: {}. "
          "Shrink the program, or raise the limit with --max-memory SIZE (e.g. 64G, or unlimited)",
          format_bytes(need.bytes), need.basis, format_bytes(*limit.bytes), limit.origin,
          fmt::join(named, "; ")));
}

}  // namespace fp
