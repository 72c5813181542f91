// The normalizer bound for every n by induction (verify/online_softmax/smt/induction.cpp, docs/bounds.md §5
// "(a) induction"): every query is proved at the product's precisions, the whole certificate
// takes a few seconds, and it is not proved for a bound one term too small or for a scan
// without its rescale. The instantiation at n rounds up.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "verify/online_softmax/bounds/induction_instance.h"
#include "verify/online_softmax/bounds/normalizer_bound.h"
#include "verify/online_softmax/smt/queries.h"

namespace fp::verify {
namespace {

smt::SmtLimits limits() {
  smt::SmtLimits l;
  l.timeout_s = 30;
  return l;
}

// The certificate's queries with their outcomes; prints the times.
std::vector<smt::InductionStep> run(Prec storage, smt::InductionMutant m) {
  smt::InductionQuery q = induction_query(storage, state_prec(storage), 0.52);
  q.mutant = m;
  std::vector<smt::InductionStep> steps = smt::prove_normalizer_induction(q, limits());
  double total = 0;
  for (const auto& s : steps) total += s.outcome.seconds;
  std::printf("[ induction ] %s/%s mutant %s: %zu queries, %.2f s\n", prec_name(storage),
              prec_name(state_prec(storage)), smt::induction_mutant_name(m), steps.size(), total);
  for (const auto& s : steps)
    std::printf("    %-28s %-7s %.3f s\n", s.name.c_str(), smt::smt_status_name(s.outcome.status),
                s.outcome.seconds);
  return steps;
}

bool all_unsat(const std::vector<smt::InductionStep>& steps) {
  for (const auto& s : steps)
    if (s.outcome.status != smt::SmtStatus::Unsat) return false;
  return !steps.empty();
}

smt::SmtStatus status_of(const std::vector<smt::InductionStep>& steps, const std::string& name) {
  for (const auto& s : steps)
    if (s.name == name) return s.outcome.status;
  ADD_FAILURE() << "no query " << name;
  return smt::SmtStatus::Unknown;
}

TEST(VerifyInduction, ProvedAtEveryPrecision) {
  for (Prec p : {Prec::F32, Prec::F16, Prec::BF16, Prec::F64}) {
    SCOPED_TRACE(prec_name(p));
    const auto steps = run(p, smt::InductionMutant::None);
    double total = 0;
    for (const auto& s : steps) {
      EXPECT_EQ(s.outcome.status, smt::SmtStatus::Unsat) << s.name << ": " << s.outcome.reason;
      total += s.outcome.seconds;
    }
    // Base, 3 + 5 steps (with the rescale's product bound), 2 lemma sums, 3 closings, and the final
    // store when storage and state differ.
    EXPECT_EQ(steps.size(), p == state_prec(p) ? 14u : 15u);
    EXPECT_LT(total, 60.0);
  }
}

// A bound one term too small: B_src and B_tgt without (n - 1)·α fail at the closings.
TEST(VerifyInduction, FailsWithoutAlphaTerm) {
  const auto steps = run(Prec::F32, smt::InductionMutant::DropAlpha);
  EXPECT_FALSE(all_unsat(steps));
  EXPECT_EQ(status_of(steps, "src.closing"), smt::SmtStatus::Sat);
  EXPECT_EQ(status_of(steps, "tgt.closing"), smt::SmtStatus::Sat);
}

// One γ factor short (γ_{k-2} for γ_{k-1}): the composed sum's step fails.
TEST(VerifyInduction, FailsOneGammaShort) {
  const auto steps = run(Prec::F16, smt::InductionMutant::DropGamma);
  EXPECT_FALSE(all_unsat(steps));
  EXPECT_EQ(status_of(steps, "src.step-upper"), smt::SmtStatus::Sat);
}

// φ with one rounding per step fewer: the scan's rescaling step fails.
TEST(VerifyInduction, FailsOneRoundingShort) {
  const auto steps = run(Prec::F32, smt::InductionMutant::DropRounding);
  EXPECT_FALSE(all_unsat(steps));
  EXPECT_EQ(status_of(steps, "tgt.step-rise-upper"), smt::SmtStatus::Sat);
}

// The wrong recurrence: l_k = fl(l_{k-1} + exp(x_k - m_k)) without the rescale on a new maximum.
TEST(VerifyInduction, FailsWithoutRescale) {
  for (Prec p : {Prec::F32, Prec::BF16}) {
    SCOPED_TRACE(prec_name(p));
    const auto steps = run(p, smt::InductionMutant::MissingRescale);
    EXPECT_FALSE(all_unsat(steps));
    EXPECT_EQ(status_of(steps, "tgt.step-rise-upper"), smt::SmtStatus::Sat);
  }
}

// The proved formula at n, rounded up, agrees with the formula normalizer_bound evaluates (the same
// formula: only ε rounded up and the underflow terms bounded by short powers of two differ) and
// is defined exactly where it is; the coverage test compares with the stated REL exactly.
// The stated REL covers the proved value at every precision and n (a regression: normalizer_bound
// once evaluated B - 1 in long double, which cancels, and stated a REL 4e-14 (f32, n = 3) to 6e-5
// (f64, n = 3) relative below the formula's value).
TEST(VerifyInduction, InstanceMatchesFormula) {
  for (Prec p : {Prec::F32, Prec::F16, Prec::BF16, Prec::F64})
    for (std::int64_t n : {1, 2, 3, 64, 108, 865, 1024, 1 << 20}) {
      const NormalizerBound b = normalizer_bound(p, state_prec(p), n, 0.52);
      const smt::InductionQuery q = induction_query(p, state_prec(p), 0.52);
      const InductionInstance i = induction_instance(q, n, b.rel);
      SCOPED_TRACE(std::string(prec_name(p)) + " n=" + std::to_string(n));
      EXPECT_EQ(i.defined, b.defined);
      if (!b.defined) continue;
      const double tol = 1e-12;
      EXPECT_TRUE(induction_instance(q, n, b.rel).covered) << "stated " << b.rel << " proved " << i.rel;
      EXPECT_NEAR(i.rel / b.rel, 1.0, tol);
      EXPECT_NEAR(i.b_src / b.b_src, 1.0, tol);
      EXPECT_NEAR(i.b_tgt / b.b_tgt, 1.0, tol);
      // Exact comparison: the rounded-up double covers the 256-bit value; 1 - 1e-6 of it does not.
      EXPECT_TRUE(induction_instance(q, n, i.rel).covered);
      EXPECT_FALSE(induction_instance(q, n, i.rel * (1 - 1e-6)).covered);
    }
}

}  // namespace
}  // namespace fp::verify
