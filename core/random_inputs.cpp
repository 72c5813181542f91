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

double random_mask_bit(std::uint64_t seed, std::int64_t s, std::int64_t t) {
  SplitMix64 rng(seed * 0x100000001b3ULL ^ (static_cast<std::uint64_t>(s) << 32) ^
                 static_cast<std::uint64_t>(t));
  rng.next();
  return static_cast<double>(rng.next() >> 63);
}

namespace {
Tensor random_mask(const Routine& r, const Node& n) {
  Tensor t = Tensor::zeros(n.prec, n.dims);
  auto it = r.attrs.find(kMaskSeedAttr);
  const auto seed = static_cast<std::uint64_t>(it == r.attrs.end() ? 0 : it->second);
  const std::int64_t H = n.dims[2], T = n.dims[3];
  for (std::size_t i = 0; i < t.data.size(); ++i) {
    const auto c = static_cast<std::int64_t>(i);
    t.data[i] = random_mask_bit(seed, c / T / H % n.dims[1], c % T);
  }
  return t;
}

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
    const bool mask = n->name.rfind("mask_keep", 0) == 0 && n->dims.size() == 4 && is_float(n->prec);
    out[n->name] = mask ? random_mask(r, *n) : random_tensor(*n, rng);
  }
  return out;
}

}  // namespace fp
