// The rounding bound of the online-softmax normalizer (docs/bounds.md): the formula's shape, its
// certificate over the reals (Z3) for small n, and its confirmation against MPFR (200 bits) on
// 10^4 property-based and adversarial rows per precision, with the tightness figure.

#include <gtest/gtest.h>

#include <cmath>

#include "core/numerics.h"
#include "verify/bounds/exp_reference.h"
#include "verify/online_softmax/bounds/mpfr_reference.h"
#include "verify/online_softmax/bounds/normalizer_bound.h"
#include "verify/online_softmax/smt/queries.h"

namespace fp::verify {
namespace {

TEST(VerifyBounds, FormulaShape) {
  for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16}) {
    double prev = 0;
    for (std::int64_t n : {1, 2, 3, 8, 64}) {
      NormalizerBound b = normalizer_bound(p, state_prec(p), n, 0.52);
      ASSERT_TRUE(b.defined) << prec_name(p) << " n=" << n;
      EXPECT_GT(b.rel, prev);
      EXPECT_GE(b.rel, b.b_src + b.b_tgt);
      prev = b.rel;
    }
  }
  // First order: REL ≈ 3(n-1)·u + (n+1)·ε + 2(n-1)·u/e when storage = state (ε: exp's error; f32:
  // the measured fp_exp32 figure, 0.87·2^-23 = 1.74u).
  NormalizerBound b = normalizer_bound(Prec::F32, Prec::F32, 1024, 0.52);
  const double eps32 = exp_error(Prec::F32, 0.52);
  const double first = (3.0 * 1023 + 2.0 * 1023 / std::exp(1.0)) * 0x1p-24 + 1025 * eps32;
  EXPECT_NEAR(b.rel / first, 1.0, 0.01);
  // Storage f16 with state f32: the composed f16 sum dominates; the scan's side is the final
  // rounding to f16 plus, to first order, n exps, 2(n - 1) roundings and (n - 1) argument
  // perturbations at f32.
  NormalizerBound h = normalizer_bound(Prec::F16, Prec::F32, 64, 0.52);
  const double scan_first = 0x1p-11 + 64 * eps32 + (126 + 63 / std::exp(1.0)) * 0x1p-24;
  EXPECT_NEAR(h.b_tgt, scan_first, 0x1p-22);
  EXPECT_GT(h.b_src, 64 * 0x1p-11);
  // Undefined where recursive summation at the storage precision has no relative bound.
  EXPECT_FALSE(normalizer_bound(Prec::F16, Prec::F32, 2049, 0.52).defined);
  EXPECT_FALSE(normalizer_bound(Prec::BF16, Prec::F32, 257, 0.52).defined);
  EXPECT_TRUE(normalizer_bound(Prec::F32, Prec::F32, 1 << 20, 0.52).defined);
}

TEST(VerifyBounds, DownstreamPropagation) {
  EXPECT_EQ(quotient_perturbation(0, 0, Prec::F32), 0);
  double r = quotient_perturbation(0, 1e-6, Prec::F32);
  EXPECT_GT(r, 1e-6 + 2 * 0x1p-24 - 1e-12);
  EXPECT_LT(r, 1e-6 + 2 * 0x1p-24 + 1e-11);
  EXPECT_EQ(conversion_perturbation(1e-6, Prec::F16, Prec::F32), 1e-6);
  EXPECT_GT(dot_perturbation(1e-6, 16, Prec::F32), 1e-6 + 2 * 16 * 0x1p-24);
}

// Z3 over the reals proves the bound for n = 1, 2 at every precision, and finds an assignment
// above a bound that is too small (the check is not vacuous).
TEST(VerifyBounds, RealsCertificateSmallN) {
  for (Prec p : {Prec::F32, Prec::F16, Prec::BF16, Prec::F64}) {
    for (int n = 1; n <= 2; ++n)
      for (std::string pat : n == 1 ? std::vector<std::string>{""} : std::vector<std::string>{"0", "1"}) {
        smt::RealBoundQuery q;
        q.n = n;
        q.pattern = pat;
        q.storage_bits = significand_bits(p);
        q.state_bits = significand_bits(state_prec(p));
        q.storage_exp_eps = exp_error(p, 0.52);
        q.state_exp_eps = exp_error(state_prec(p), 0.52);
        q.rel = normalizer_bound(p, state_prec(p), n, 0.52).rel;
        smt::SmtLimits lim;
        lim.timeout_s = 20;
        EXPECT_EQ(smt::check_real_bound(q, lim).status, smt::SmtStatus::Unsat)
            << prec_name(p) << " n=" << n << " " << pat;
      }
  }
  smt::RealBoundQuery tight;
  tight.n = 2;
  tight.pattern = "1";
  tight.storage_exp_eps = tight.state_exp_eps = exp_error(Prec::F32, 0.52);
  tight.rel = normalizer_bound(Prec::F32, Prec::F32, 2, 0.52).rel / 8;
  EXPECT_EQ(smt::check_real_bound(tight, {}).status, smt::SmtStatus::Sat);
}

// 10^4 rows per precision against MPFR at 200 bits: no row exceeds the bound, NaN positions and
// maxima agree, and the worst observed error is a sizeable fraction of the bound (it is not
// vacuous either).
TEST(VerifyBounds, MpfrReferenceTenThousandRows) {
  for (Prec p : {Prec::F32, Prec::F16, Prec::BF16, Prec::F64}) {
    Limits l;
    l.mpfr_rows = 10000;
    l.mpfr_bits = 200;
    MpfrReport r = mpfr_check_normalizer(p, 33, l);
    SCOPED_TRACE(prec_name(p));
    EXPECT_EQ(r.rows, 10000);
    EXPECT_EQ(r.violations, 0) << r.first_violation;
    EXPECT_EQ(r.nan_mismatches, 0) << r.first_violation;
    EXPECT_EQ(r.max_mismatches, 0) << r.first_violation;
    EXPECT_GT(r.special_rows, 100);
    EXPECT_GT(r.worst_pair, 0.05);
    EXPECT_LE(r.worst_pair, 1.0);
    EXPECT_GE(r.families.size(), 12u);
    std::printf(
        "[ mpfr ] %s: %d rows in %.2f s, tightness %.3f (worst row %s), composed %.3f of B_src, scan %.3f of "
        "B_tgt\n",
        prec_name(p), r.rows, r.seconds, r.worst_pair, r.worst_row.c_str(), r.worst_src, r.worst_tgt);
  }
}

TEST(VerifyBounds, ExpUlpAssumptionHoldsOnSamples) {
  ExpUlpMeasure m = measure_exp_ulp(20000, 3);
  EXPECT_GT(m.samples, 15000);
  EXPECT_LE(m.max_ulp, 0.52);
  EXPECT_GT(m.max_ulp, 0.4);
}

// The certificate's re-measurement of fp_exp32 stays within the figure the bounds use and sees
// errors above a correctly rounded function's 0.5 ulp.
TEST(VerifyBounds, Exp32FigureHoldsOnSamples) {
  ExpUlpMeasure m = measure_exp32_ulp(20000, 3);
  EXPECT_EQ(m.samples, 20000);
  EXPECT_LE(m.max_ulp, kExp32MaxUlp);
  EXPECT_GT(m.max_ulp, 0.5);
}

}  // namespace
}  // namespace fp::verify
