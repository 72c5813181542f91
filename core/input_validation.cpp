// Input validation (core/input_validation.h).

#include "core/input_validation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/diagnostic.h"
#include "core/npy.h"
#include "core/numerics.h"

namespace fp {

std::vector<std::int64_t> cell_index(const std::vector<std::int64_t>& dims, std::int64_t flat) {
  std::vector<std::int64_t> idx(dims.size());
  for (std::size_t k = dims.size(); k-- > 0;) {
    idx[k] = flat % dims[k];
    flat /= dims[k];
  }
  return idx;
}

std::string index_text(const std::vector<std::int64_t>& index) {
  return fmt::format("[{}]", fmt::join(index, ","));
}

std::string cell_text(const std::vector<std::int64_t>& dims, std::int64_t flat) {
  return index_text(cell_index(dims, flat));
}

std::string tensor_type_string(Prec p, const std::vector<std::int64_t>& dims) {
  return fmt::format("{}[{}]", prec_name(p), fmt::join(dims, ","));
}

const Tensor& validated_input(const Node& n, const TensorMap& inputs, const std::string& source) {
  const auto it = inputs.find(n.name);
  if (it == inputs.end())
    throw UserError(
        kExitMissingInput, source, 0, 0,
        fmt::format("missing input '{}' (expected {})", n.name, tensor_type_string(n.prec, n.dims)));
  const Tensor& t = it->second;
  if (t.prec != n.prec || t.dims != n.dims)
    throw_malformed(source, 0, 0,
                    fmt::format("input '{}': expected {}, got {}", n.name, tensor_type_string(n.prec, n.dims),
                                tensor_type_string(t.prec, t.dims)));
  if (t.size() != n.cell_count())
    throw_malformed(source, 0, 0,
                    fmt::format("input '{}': {} holds {} cells, got {} values", n.name,
                                tensor_type_string(n.prec, n.dims), n.cell_count(), t.size()));
  for (std::size_t i = 0; i < t.data.size(); ++i) {
    const double v = t.data[i];
    if (!representable(n.prec, v))
      throw_malformed(source, 0, 0,
                      fmt::format("input '{}': cell {} holds {}, which is not a {} value", n.name,
                                  cell_text(n.dims, static_cast<std::int64_t>(i)), v, prec_name(n.prec)));
  }
  return t;
}

namespace {
// NumPy's spelling of a type: "dtype '<f4', shape (2, 4)"; a 1-d shape keeps its comma.
std::string numpy_type_string(Prec p, const std::vector<std::int64_t>& dims) {
  return fmt::format("dtype '{}', shape ({}{})", npy_descr(p), fmt::join(dims, ", "),
                     dims.size() == 1 ? "," : "");
}
}  // namespace

void check_input_file(const Node& n, const Tensor& t, const std::string& path) {
  if (t.prec == n.prec && t.dims == n.dims) return;
  throw_malformed(path, 0, 0,
                  fmt::format("expected {} ({}) for input '{}', found {} ({})",
                              tensor_type_string(n.prec, n.dims), numpy_type_string(n.prec, n.dims), n.name,
                              tensor_type_string(t.prec, t.dims), numpy_type_string(t.prec, t.dims)));
}

}  // namespace fp
