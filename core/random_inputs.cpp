#include "core/random_inputs.h"

#include "core/numerics.h"

namespace fp {

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SplitMix64::unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::int64_t SplitMix64::range(std::int64_t lo, std::int64_t hi) {
  auto span = static_cast<std::uint64_t>(hi - lo) + 1;
  return lo + static_cast<std::int64_t>(span == 0 ? next() : next() % span);
}

namespace {
Tensor random_tensor(const Node& n, SplitMix64& rng) {
  Tensor t = Tensor::zeros(n.prec, n.dims);
  bool unit_interval = n.name.rfind("dropout_u", 0) == 0;
  for (auto& v : t.data) {
    if (n.prec == Prec::I32)
      v = static_cast<double>(rng.range(-8, 8));
    else
      v = round_to(n.prec, unit_interval ? rng.unit() : 2.0 * rng.unit() - 1.0);
  }
  return t;
}
}  // namespace

TensorMap random_inputs(const Routine& r, std::uint64_t seed) {
  TensorMap out;
  std::uint64_t k = 0;
  for (const Node* n : r.inputs()) {
    SplitMix64 rng(seed * 0x100000001b3ULL + (++k) * 0x9e3779b97f4a7c15ULL);
    out[n->name] = random_tensor(*n, rng);
  }
  return out;
}

}  // namespace fp
