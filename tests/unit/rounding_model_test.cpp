// The engine's rounding model (verify/bounds/rounding_model.h) is rounded against the claim: every
// term a bound is built from is at or above its exact value, which long double evaluates here
// within 1e-19 relative (far below the 1e-15 by which a bound rounded the wrong way falls short).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "core/numerics.h"
#include "verify/bounds/rounding_model.h"

namespace fp::verify {
namespace {

using LD = long double;

TEST(RoundingModel, ExpErrorIsAtOrAboveItsExactValueAtEveryPrecision) {
  // f64: exp_ulp·2^-52 and f32: U32·2^-23 are exact doubles; f16, bf16: (1 + η32)(1 + u_p) - 1.
  EXPECT_GE(exp_error(Prec::F64, 0.52), std::ldexp(0.52, -52));
  EXPECT_GE(exp_error(Prec::F64, 1.7), std::ldexp(1.7, -52));
  const LD eta32 = static_cast<LD>(kExp32MaxUlp) * std::ldexp(1.0L, -23);
  EXPECT_GE(exp_error(Prec::F32, 0.52), static_cast<double>(eta32));
  for (Prec p : {Prec::F16, Prec::BF16}) {
    const LD exact = (1 + eta32) * (1 + static_cast<LD>(unit_roundoff(p))) - 1;
    EXPECT_GE(static_cast<LD>(exp_error(p, 0.52)), exact) << prec_name(p);
  }
}

TEST(RoundingModel, GammaAndPerturbationsAreAtOrAboveTheirExactValues) {
  for (std::int64_t k : {1, 2, 7, 1000, 1 << 20}) {
    const LD u = std::ldexp(1.0L, -24), ku = static_cast<LD>(k) * u;
    EXPECT_GE(static_cast<LD>(gamma_bound(k, static_cast<double>(u))), ku / (1 - ku)) << k;
  }
  EXPECT_TRUE(std::isinf(gamma_bound(1 << 24, 0x1p-24)));  // k·u >= 1: no bound
  // dot: rw + γ_n(u)(2 + rw); product: (1 + ra)(1 + rb)(1 + u)/(1 - u) - 1.
  const LD u32 = std::ldexp(1.0L, -24);
  for (std::int64_t n : {1, 64, 4096}) {
    const LD g = static_cast<LD>(n) * u32 / (1 - static_cast<LD>(n) * u32), rw = static_cast<LD>(3e-7);
    EXPECT_GE(static_cast<LD>(dot_perturbation(3e-7, n, Prec::F32)), rw + g * (2 + rw)) << n;
  }
  const LD ra = static_cast<LD>(1e-6), rb = static_cast<LD>(2e-6);
  EXPECT_GE(static_cast<LD>(product_perturbation(1e-6, 2e-6, Prec::F32)),
            (1 + ra) * (1 + rb) * (1 + u32) / (1 - u32) - 1);
  EXPECT_GE(static_cast<LD>(quotient_perturbation(1e-6, 2e-6, Prec::F32)),
            (1 + ra) * (1 + u32) / ((1 - rb) * (1 - u32)) - 1);
}

}  // namespace
}  // namespace fp::verify
