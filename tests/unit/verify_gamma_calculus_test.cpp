// The γ calculus and the assembly of the fused backward's bound (verify/smt/gamma_calculus.cpp,
// verify/smt/backward_assembly.cpp): every rule and step proved for every size, and weakened ones are not.

#include <gtest/gtest.h>

#include "verify/smt/smt.h"

namespace fp {
namespace {

TEST(GammaCalculus, EveryRuleIsProvedForEverySize) {
  const auto steps = verify::smt::prove_gamma_calculus(verify::smt::SmtLimits{});
  ASSERT_EQ(steps.size(), 7u);
  for (const auto& s : steps) {
    EXPECT_EQ(s.outcome.status, verify::smt::SmtStatus::Unsat) << s.name << ": " << s.outcome.reason;
    std::printf("[ gamma    ] %s: %s in %.2f s\n", s.name.c_str(), verify::smt::smt_status_name(s.outcome.status),
                s.outcome.seconds);
  }
}

TEST(GammaCalculus, RulesOneIndexShortAreRefuted) {
  int sat = 0;
  for (const auto& s : verify::smt::prove_gamma_calculus(verify::smt::SmtLimits{}, true)) {
    if (s.name == "gamma.product" || s.name == "composed.gradient") {
      EXPECT_EQ(s.outcome.status, verify::smt::SmtStatus::Sat) << s.name;
      ++sat;
    }
  }
  EXPECT_EQ(sat, 2);
}

}  // namespace
}  // namespace fp

namespace fp {
namespace {

// The bound's assembly (verify/smt/backward_assembly.cpp): every step proved; the composed closing
// with γ_{n+2} for γ_{n+4} (a coefficient one rounding short) is not.
TEST(BackwardAssembly, EveryStepIsProved) {
  const auto steps = verify::smt::prove_backward_assembly(verify::smt::SmtLimits{});
  ASSERT_EQ(steps.size(), 17u);
  for (const auto& s : steps) {
    EXPECT_EQ(s.outcome.status, verify::smt::SmtStatus::Unsat) << s.name << ": " << s.outcome.reason;
    std::printf("[ assembly ] %s: %s in %.2f s\n", s.name.c_str(), verify::smt::smt_status_name(s.outcome.status),
                s.outcome.seconds);
  }
}

TEST(BackwardAssembly, AClosingOneRoundingShortIsRefuted) {
  int closings = 0;
  for (const auto& s : verify::smt::prove_backward_assembly(verify::smt::SmtLimits{}, true)) {
    if (s.name != "composed.close") continue;
    EXPECT_EQ(s.outcome.status, verify::smt::SmtStatus::Sat);
    ++closings;
  }
  EXPECT_EQ(closings, 1);
}

}  // namespace
}  // namespace fp
