// The block fold's bound for every (n, b) by induction (verify/online_softmax/smt/fold_induction.cpp,
// docs/bounds.md §7): every query is proved at the product's state precisions, the certificate
// fails for a fold without its rescale and for a P_1 without the block sum's γ, and the
// evaluated bound (fold_bound) is the scan's at b = 1, grows with n, and stays within a small
// factor of the scan's at every block size.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "verify/online_softmax/bounds/induction_instance.h"
#include "verify/online_softmax/bounds/mpfr_reference.h"
#include "verify/online_softmax/bounds/normalizer_bound.h"
#include "verify/online_softmax/smt/queries.h"

namespace fp::verify {
namespace {

using Prover = std::vector<smt::InductionStep> (*)(const smt::InductionQuery&, const smt::SmtLimits&);

// One prover's queries at `storage` (state: state_prec), with their outcomes printed.
std::vector<smt::InductionStep> run_queries(const char* what, Prover prove, Prec storage, smt::InductionMutant m) {
  smt::InductionQuery q = induction_query(storage, state_prec(storage), 0.52);
  q.mutant = m;
  smt::SmtLimits lim;
  lim.timeout_s = 30;
  std::vector<smt::InductionStep> steps = prove(q, lim);
  double total = 0;
  for (const auto& s : steps) total += s.outcome.seconds;
  std::printf("[ %s ] %s/%s mutant %s: %zu queries, %.2f s\n", what, prec_name(storage), prec_name(state_prec(storage)),
              smt::induction_mutant_name(m), steps.size(), total);
  for (const auto& s : steps)
    std::printf("    %-30s %-7s %.3f s\n", s.name.c_str(), smt::smt_status_name(s.outcome.status), s.outcome.seconds);
  return steps;
}

std::vector<smt::InductionStep> run_fold(Prec storage, smt::InductionMutant m) {
  return run_queries("fold induction", smt::prove_fold_induction, storage, m);
}
std::vector<smt::InductionStep> run_output(Prec storage, smt::InductionMutant m) {
  return run_queries("fold output induction", smt::prove_fold_output_induction, storage, m);
}

smt::SmtStatus status_of(const std::vector<smt::InductionStep>& steps, const std::string& name) {
  for (const auto& s : steps)
    if (s.name == name) return s.outcome.status;
  ADD_FAILURE() << "no query " << name;
  return smt::SmtStatus::Unknown;
}

TEST(VerifyFoldInduction, ProvedAtEveryStatePrecision) {
  for (Prec p : {Prec::F32, Prec::F64}) {
    SCOPED_TRACE(prec_name(p));
    const auto steps = run_fold(p, smt::InductionMutant::None);
    // The block sum's base and two steps, the fold's base, 4 steps and the rescale's two product bounds,
    // the closing.
    EXPECT_EQ(steps.size(), 11u);
    for (const auto& s : steps) EXPECT_EQ(s.outcome.status, smt::SmtStatus::Unsat) << s.name << ": " << s.outcome.reason;
  }
}

// The blocks cover the keys exactly for every (sk, B) — and would not with floor(sk / b) blocks.
TEST(VerifyFoldInduction, BlocksCoverEveryKeyOnce) {
  smt::SmtLimits lim;
  lim.timeout_s = 30;
  for (Prec p : {Prec::F32, Prec::F64}) {
    const auto steps = smt::prove_block_cover(p, lim);
    ASSERT_EQ(steps.size(), 4u);
    for (const auto& s : steps) EXPECT_EQ(s.outcome.status, smt::SmtStatus::Unsat) << s.name << ": " << s.outcome.reason;
  }
  const auto floor_blocks = smt::prove_block_cover(Prec::F32, lim, true);
  EXPECT_EQ(status_of(floor_blocks, "tail.cover"), smt::SmtStatus::Sat);
}

TEST(VerifyFoldInduction, FailsWithoutRescale) {
  const auto steps = run_fold(Prec::F32, smt::InductionMutant::MissingRescale);
  EXPECT_EQ(status_of(steps, "fold.step-rise-upper"), smt::SmtStatus::Sat);
}

TEST(VerifyFoldInduction, FailsWithoutBlockGamma) {
  const auto steps = run_fold(Prec::F32, smt::InductionMutant::DropGamma);
  EXPECT_EQ(status_of(steps, "fold.base"), smt::SmtStatus::Sat);
}

// b = 1 is the scan's recurrence key by key; the fold's bound is then at most the scan's plus
// the model's underflow slack, and at every b it stays within twice the scan's (docs/bounds.md §7
// argues φ_fold <= φ).
TEST(VerifyFoldInduction, BoundAgainstTheScans) {
  for (Prec p : {Prec::F32, Prec::F64, Prec::F16, Prec::BF16})
    for (std::int64_t n : {1, 2, 3, 7, 64, 100}) {
      const Prec st = state_prec(p);
      const NormalizerBound scan = normalizer_bound(p, st, n, 0.52);
      if (!scan.defined) continue;
      for (std::int64_t b : {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{7}, std::int64_t{16}, n}) {
        if (b > n) continue;
        SCOPED_TRACE(std::string(prec_name(p)) + " n=" + std::to_string(n) + " b=" + std::to_string(b));
        const NormalizerBound f = fold_bound(p, st, n, b, 0.52);
        ASSERT_TRUE(f.defined) << f.undefined_reason;
        EXPECT_EQ(f.b_src, scan.b_src);
        EXPECT_LE(f.b_tgt, 2 * scan.b_tgt);
        EXPECT_GE(f.rel, scan.b_src);
        if (b == 1) {
          EXPECT_NEAR(f.b_tgt / scan.b_tgt, 1.0, 1e-9);
        }
      }
    }
  EXPECT_FALSE(fold_bound(Prec::F32, Prec::F32, 8, 9, 0.52).defined);
  EXPECT_FALSE(fold_bound(Prec::F32, Prec::F32, 8, 0, 0.52).defined);
}

// The MPFR rows of the certificate, run through the fold at every block size the issue names
// (B = 2^20 is one block at every n of the ladder): no row outside REL(n, b) or B_fold, NaN
// positions and maxima identical. 2,000 rows per block size here (the certificate runs 10^4;
// bench/verify_bench BM_FoldTightness reports the tightness on 10^4 rows per (precision, B)).
TEST(VerifyFoldInduction, MpfrRowsThroughTheFoldAtEveryBlockSize) {
  for (Prec p : {Prec::F32, Prec::BF16, Prec::F16})
    for (std::int64_t block : {1, 2, 3, 7, 16, 64, 1 << 20}) {
      SCOPED_TRACE(std::string(prec_name(p)) + " B=" + std::to_string(block));
      Limits l;
      l.mpfr_rows = 2000;
      const MpfrReport r = mpfr_check_normalizer(p, 64, l, block);
      EXPECT_EQ(r.rows, 2000);
      EXPECT_GT(r.finite_rows, 1500);
      EXPECT_EQ(r.violations, 0) << r.first_violation;
      EXPECT_EQ(r.nan_mismatches, 0) << r.first_violation;
      EXPECT_EQ(r.max_mismatches, 0) << r.first_violation;
      // The output O through the fold against fold_output_bound (one signed value column).
      EXPECT_GT(r.output_rows, 1500);
      EXPECT_EQ(r.output_violations, 0) << r.first_output_violation;
      EXPECT_LE(r.worst_output, 1.0);
      std::printf("[ fold rows ] %s B=%lld: l tightness %.3g, O tightness %.3g\n", prec_name(p),
                  static_cast<long long>(block), r.worst_pair, r.worst_output);
      EXPECT_LE(r.worst_pair, 1.0);
      // One block with storage = state is the composed sum's own order: bitwise (0 of the bound).
      if (block == (1 << 20) && p == state_prec(p))
        EXPECT_EQ(r.worst_pair, 0.0);
      else
        EXPECT_GT(r.worst_pair, 0.0);
    }
}

// The evaluated bound has the first-order size docs/bounds.md §7 gives: at f32, n = 64, b = 16
// (K = 4): B_fold ≈ γ_15 + K·ε + 2(K - 1)u + (n - 1)α(u) ≈ (15 + 6.96 + 6 + 23.2)u ≈ 3.0e-6.
TEST(VerifyFoldInduction, FoldBoundHasItsFirstOrderSize) {
  const NormalizerBound f = fold_bound(Prec::F32, Prec::F32, 64, 16, 0.52);
  ASSERT_TRUE(f.defined);
  EXPECT_GT(f.b_tgt, 2.9e-6);
  EXPECT_LT(f.b_tgt, 3.2e-6);
}

TEST(VerifyFoldInduction, OutputProvedAtEveryPrecision) {
  for (Prec p : {Prec::F32, Prec::F64, Prec::F16, Prec::BF16}) {
    SCOPED_TRACE(prec_name(p));
    const auto steps = run_output(p, smt::InductionMutant::None);
    // Two per-key lemmas, the rescale, the addition (product, three sign cases), the closing (numerator,
    // quotient, roundings), the composed key and two dot steps, the pair.
    EXPECT_EQ(steps.size(), 14u);
    for (const auto& s : steps) EXPECT_EQ(s.outcome.status, smt::SmtStatus::Unsat) << s.name << ": " << s.outcome.reason;
  }
}

// The output bound evaluated by the proved recurrences: defined at the product's precisions, its
// relative part of the size docs/bounds.md §7 gives to first order (f32, n = 64, b = 16: the
// numerator's φ ≈ K(ε + u) + n·u plus B_fold and the composed side ≈ (2n + ...)u, a few 1e-5), the
// Σ|v| part a small multiple of α(u), and growing with n.
TEST(VerifyFoldInduction, OutputBoundHasItsFirstOrderSize) {
  const FoldOutputBound f = fold_output_bound(Prec::F32, Prec::F32, 64, 16, 0.52);
  ASSERT_TRUE(f.defined) << f.undefined_reason;
  EXPECT_GT(f.rel_z, 5e-6);
  EXPECT_LT(f.rel_z, 5e-5);
  EXPECT_GT(f.rel_v, 1e-8);
  EXPECT_LT(f.rel_v, 1e-6);
  EXPECT_GE(f.kappa * f.rel_z, f.rel_v);
  EXPECT_LT(f.abs, 1e-40);
  const FoldOutputBound g = fold_output_bound(Prec::F32, Prec::F32, 4096, 64, 0.52);
  ASSERT_TRUE(g.defined);
  EXPECT_GT(g.rel_z, 10 * f.rel_z);
  for (Prec p : {Prec::F64, Prec::F16, Prec::BF16})
    EXPECT_TRUE(fold_output_bound(p, state_prec(p), 9, 3, 0.52).defined) << prec_name(p);
  EXPECT_FALSE(fold_output_bound(Prec::BF16, Prec::F32, 4096, 64, 0.52).defined);
}

TEST(VerifyFoldInduction, OutputFailsOneRoundingShort) {
  const auto steps = run_output(Prec::F32, smt::InductionMutant::DropRounding);
  EXPECT_EQ(status_of(steps, "o.add.step-nonneg-u"), smt::SmtStatus::Sat);
}

}  // namespace
}  // namespace fp::verify
