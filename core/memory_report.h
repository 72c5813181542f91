#pragma once
// The memory report of a placed routine: every buffer (each node that is not virtual) with its
// size, how many are seq×seq "square" buffers (the quadratic memory a streaming softmax avoids), the
// total, and the peak of the bytes live at once over the top-level statements. docs/placement.md
// states the rules.

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"

namespace fp {

struct BufferInfo {
  std::string name;
  std::vector<std::int64_t> dims;
  Prec prec = Prec::F32;
  MemMode mode = MemMode::Materialized;
  std::int64_t bytes = 0;  // cells × prec_bytes
  // Two of its axes have extents each equal to the routine's attr seq_q or seq_k.
  bool square = false;
};

struct MemoryReport {
  std::vector<BufferInfo> buffers;  // declaration order
  std::int64_t total_bytes = 0;
  std::int64_t peak_bytes = 0;
  int square_buffers = 0;
};

// `placed` must pass the checker; its node modes are taken as decided (see core/placement.h).
MemoryReport memory_report(const Routine& placed);

// A table, one buffer per line (name, precision, dims, mode, bytes, "square" mark), then the
// totals; ends in '\n'.
std::string format_memory_report(const MemoryReport& m);

}  // namespace fp
