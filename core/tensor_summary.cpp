// Output-tensor summaries (core/tensor_summary.h).
#include "core/tensor_summary.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace fp {

namespace {
struct Stats {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  std::int64_t finite = 0, nan = 0, inf = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  for (double v : t.data) {
    if (std::isnan(v))
      ++s.nan;
    else if (std::isinf(v))
      ++s.inf;
    else {
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      s.sum += v;
      ++s.finite;
    }
  }
  return s;
}
}  // namespace

std::string format_tensor_summaries(const TensorMap& tensors) {
  std::string out;
  for (const auto& [name, t] : tensors) {
    Stats s = stats_of(t);
    std::string shape = fmt::format("{}[{}]", prec_name(t.prec), fmt::join(t.dims, ","));
    if (s.finite == 0)
      out += fmt::format("{:<12} {:<20} no finite value  nan {} inf {}\n", name, shape, s.nan, s.inf);
    else
      out += fmt::format("{:<12} {:<20} min {:<12.6g} max {:<12.6g} mean {:<12.6g} nan {} inf {}\n", name,
                         shape, s.min, s.max, s.sum / static_cast<double>(s.finite), s.nan, s.inf);
  }
  return out;
}

}  // namespace fp
