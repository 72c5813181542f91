#include "core/tensor.h"

namespace fp {

Tensor Tensor::zeros(Prec prec, std::vector<std::int64_t> dims) {
  Tensor t;
  t.prec = prec;
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  t.dims = std::move(dims);
  t.data.assign(static_cast<std::size_t>(n), 0.0);
  return t;
}

}  // namespace fp
