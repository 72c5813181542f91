// The γ calculus of the fused backward's bound (verify/smt/gamma_calculus.cpp): every rule proved
// for every size, and the rules weakened by one index are not (the queries can fail).

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
