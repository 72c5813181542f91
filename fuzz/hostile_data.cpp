// Hostile input data (hostile_data.h).
#include "fuzz/hostile_data.h"

#include <cmath>
#include <limits>

#include "core/diagnostic.h"
#include "core/numerics.h"
#include "core/random_inputs.h"

namespace fp::fuzz {

namespace {

bool eligible(const Node& n) {
  return is_float(n.prec) && n.name.rfind("dropout_u", 0) != 0 && n.name.rfind("mask_keep", 0) != 0;
}

double hostile_value(Prec p, HostileKind kind, double previous, SplitMix64& rng) {
  const double inf = std::numeric_limits<double>::infinity();
  const double sign = rng.range(0, 1) == 0 ? 1.0 : -1.0;
  // The subnormals of p are k * min_positive(p) for k in [1, 2^(significand bits - 1) - 1].
  const int fraction_bits = std::ilogb(min_normal(p)) - std::ilogb(min_positive(p));
  switch (kind) {
    case HostileKind::NaN:
      return std::numeric_limits<double>::quiet_NaN();
    case HostileKind::PosInf:
      return inf;
    case HostileKind::NegInf:
      return -inf;
    case HostileKind::PosZero:
      return 0.0;
    case HostileKind::NegZero:
      return -0.0;
    case HostileKind::MinSubnormal:
      return sign * min_positive(p);
    case HostileKind::RandomSubnormal: {
      const std::int64_t top = (std::int64_t{1} << fraction_bits) - 1;
      return sign * static_cast<double>(rng.range(1, top)) * min_positive(p);
    }
    case HostileKind::Lowest:
      return -max_finite(p);
    case HostileKind::Highest:
      return max_finite(p);
    case HostileKind::Tie:
      return previous;
    case HostileKind::HugeRange: {
      const auto k = static_cast<int>(rng.range(std::ilogb(min_positive(p)), std::ilogb(max_finite(p))));
      return sign * std::ldexp(1.0, k);
    }
  }
  FP_UNREACHABLE("hostile kind {}", static_cast<int>(kind));
}

}  // namespace

const char* hostile_kind_name(HostileKind k) {
  switch (k) {
    case HostileKind::NaN:
      return "nan";
    case HostileKind::PosInf:
      return "+inf";
    case HostileKind::NegInf:
      return "-inf";
    case HostileKind::PosZero:
      return "+0";
    case HostileKind::NegZero:
      return "-0";
    case HostileKind::MinSubnormal:
      return "min-subnormal";
    case HostileKind::RandomSubnormal:
      return "random-subnormal";
    case HostileKind::Lowest:
      return "lowest";
    case HostileKind::Highest:
      return "highest";
    case HostileKind::Tie:
      return "tie";
    case HostileKind::HugeRange:
      return "huge-range";
  }
  FP_UNREACHABLE("hostile kind {}", static_cast<int>(k));
}

std::optional<HostileKind> classify_hostile(Prec p, double v) {
  if (std::isnan(v)) return HostileKind::NaN;
  if (std::isinf(v)) return v > 0 ? HostileKind::PosInf : HostileKind::NegInf;
  if (v == 0) return std::signbit(v) ? HostileKind::NegZero : HostileKind::PosZero;
  const double mag = std::fabs(v);
  if (mag == min_positive(p)) return HostileKind::MinSubnormal;
  if (mag < min_normal(p)) return HostileKind::RandomSubnormal;
  if (v == max_finite(p)) return HostileKind::Highest;
  if (v == -max_finite(p)) return HostileKind::Lowest;
  int exponent = 0;
  if (std::frexp(mag, &exponent) == 0.5) return HostileKind::HugeRange;
  return std::nullopt;
}

TensorMap hostile_inputs(const Routine& r, std::uint64_t seed, int hostile_percent) {
  TensorMap out = random_inputs(r, seed);
  if (hostile_percent <= 0) return out;
  std::uint64_t k = 0;
  for (const Node* n : r.inputs()) {
    ++k;  // the input's position, as random_inputs counts it
    if (!eligible(*n)) continue;
    SplitMix64 rng((seed ^ 0x5851f42d4c957f2dULL) * 0xd1b54a32d192ed03ULL + k * 0x94d049bb133111ebULL);
    Tensor& t = out.at(n->name);
    double previous = 0.0;
    for (auto& v : t.data) {
      if (rng.range(0, 99) < hostile_percent) {
        const auto kind = static_cast<HostileKind>(rng.range(0, kHostileKinds - 1));
        v = hostile_value(n->prec, kind, previous, rng);
        FP_INTERNAL_CHECK(representable(n->prec, v), "hostile {} value {} is not a {} value",
                          hostile_kind_name(kind), v, prec_name(n->prec));
      }
      previous = v;
    }
  }
  return out;
}

}  // namespace fp::fuzz
