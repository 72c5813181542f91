// The engine's γ calculus and perturbation calculus (verify/smt/gamma_calculus.cpp,
// verify/smt/perturbation_calculus.cpp) and the member's assembly of the fused backward's bound
// (verify/online_softmax/smt/backward_assembly.cpp): every rule and step proved for every size, and
// weakened ones are not (the queries can fail).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "verify/online_softmax/smt/queries.h"

namespace fp {
namespace {

using verify::smt::InductionStep;
using verify::smt::SmtStatus;

void expect_all_unsat(const std::vector<InductionStep>& steps, std::size_t count, const char* tag) {
  ASSERT_EQ(steps.size(), count);
  for (const auto& s : steps) {
    EXPECT_EQ(s.outcome.status, SmtStatus::Unsat) << s.name << ": " << s.outcome.reason;
    std::printf("[ %-8s ] %s: %s in %.2f s\n", tag, s.name.c_str(), verify::smt::smt_status_name(s.outcome.status),
                s.outcome.seconds);
  }
}

// The statuses of the named steps of a mutant run.
std::vector<SmtStatus> statuses_of(const std::vector<InductionStep>& steps, const std::vector<std::string>& names) {
  std::vector<SmtStatus> out;
  for (const auto& s : steps)
    for (const auto& n : names)
      if (s.name == n) out.push_back(s.outcome.status);
  return out;
}

TEST(GammaCalculus, EveryRuleIsProvedForEverySize) {
  expect_all_unsat(verify::smt::prove_gamma_calculus(verify::smt::SmtLimits{}), 7, "gamma");
}

TEST(GammaCalculus, RulesOneIndexShortAreRefuted) {
  EXPECT_EQ(statuses_of(verify::smt::prove_gamma_calculus(verify::smt::SmtLimits{}, true),
                        {"gamma.product", "composed.gradient", "gamma.sizes-range"}),
            (std::vector<SmtStatus>{SmtStatus::Sat, SmtStatus::Sat, SmtStatus::Sat}));
}

TEST(PerturbationCalculus, EveryStepIsProved) {
  expect_all_unsat(verify::smt::prove_perturbation_calculus(verify::smt::SmtLimits{}), 10, "calculus");
}

// The carried difference closed with one underflow term where the two roundings leave two.
TEST(PerturbationCalculus, AClosingOneUnderflowTermShortIsRefuted) {
  const auto steps = verify::smt::prove_perturbation_calculus(verify::smt::SmtLimits{}, true);
  EXPECT_EQ(statuses_of(steps, {"carried.close"}), std::vector<SmtStatus>{SmtStatus::Sat});
  for (const auto& s : steps) {
    if (s.name != "carried.close") {
      EXPECT_EQ(s.outcome.status, SmtStatus::Unsat) << s.name;
    }
  }
}

TEST(BackwardAssembly, EveryStepIsProved) {
  expect_all_unsat(verify::smt::prove_backward_assembly(verify::smt::SmtLimits{}), 26, "assembly");
}

// The composed closing with γ_{n+2} for γ_{n+4} (a coefficient one rounding short).
TEST(BackwardAssembly, AClosingOneRoundingShortIsRefuted) {
  EXPECT_EQ(statuses_of(verify::smt::prove_backward_assembly(verify::smt::SmtLimits{}, true), {"composed.close"}),
            std::vector<SmtStatus>{SmtStatus::Sat});
}

}  // namespace
}  // namespace fp
