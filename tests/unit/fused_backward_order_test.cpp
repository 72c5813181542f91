// The fused backward's per-cell summation order for every size (verify/online_softmax/fused_backward_order.h):
// each gradient of a rewritten training step lifts, with and without a tail block; the integer
// facts fail on a wrong block index; and each planted break of the template — a block read
// backwards, the loops swapped, a tail one pair off, a tile never copied back — is not lifted.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>

#include "core/text_printer.h"
#include "frontend/attention.h"
#include "online_softmax_fixtures.h"
#include "verify/online_softmax/fused_backward_order.h"
#include "verify/online_softmax/smt/queries.h"

namespace fp {
namespace {

using namespace ostest;

struct Step {
  Routine composed, fused;
};

// A one-head training step and its rewrite (two-pass forward, fused backward).
Step step(std::int64_t sq, std::int64_t sk) {
  Step s;
  s.composed = build_attention(one_head_training_step(Prec::F32, "causal", sq, sk, 4, 3));
  Config c;
  c.set("online_softmax", "true");
  c.set("online_softmax_backward", "true");
  s.fused = run_tier(s.composed, c).routine;
  return s;
}

verify::GradientOrderLift lift(const Step& s, const Routine& fused, const std::string& g, const std::string& x) {
  return verify::lift_gradient_order(s.composed, fused, g, x, verify::Limits{}, "");
}

// `fused` printed, `from` replaced by `to` (it must occur), parsed back.
Routine planted(const Routine& fused, const std::string& from, const std::string& to) {
  const std::string text = print_routine(fused);
  EXPECT_TRUE(std::regex_search(text, std::regex(from))) << from;
  return parse_checked(std::regex_replace(text, std::regex(from), to));
}

std::string joined(const std::vector<std::string>& steps) {
  std::string s;
  for (const auto& x : steps) s += x + "\n";
  return s;
}

TEST(FusedBackwardOrder, EveryGradientLiftsWithAndWithoutATail) {
  // 80 = one block of 64 and a tail of 16; 128 = two blocks, no tail.
  for (auto [sq, sk] : {std::pair<std::int64_t, std::int64_t>{80, 128}, {128, 80}}) {
    const Step s = step(sq, sk);
    for (auto [g, x] : {std::pair<std::string, std::string>{"grad_q", "k"}, {"grad_k", "q"}, {"grad_v", "dout"}}) {
      SCOPED_TRACE(fmt::format("{} x {} {}", sq, sk, g));
      const verify::GradientOrderLift l = lift(s, s.fused, g, x);
      EXPECT_TRUE(l.proved) << l.why_not << "\n" << joined(l.steps);
      const std::int64_t pairs = g == "grad_q" ? sk : sq;
      EXPECT_NE(l.statement.find(pairs % 64 ? "with a tail" : "without a tail"), std::string::npos) << l.statement;
      EXPECT_NE(joined(l.steps).find("main.cover"), std::string::npos);
    }
  }
}

TEST(FusedBackwardOrder, IntegerFactsFailOnAWrongBlockIndex) {
  verify::smt::BlockedOrderQuery q;
  q.block = 64;
  q.blk_coef = 64;
  q.j_coef = 1;
  q.tail = true;
  q.tail_j_coef = 1;
  for (const auto& f : verify::smt::prove_blocked_order(q, verify::smt::SmtLimits{}))
    EXPECT_EQ(f.outcome.status, verify::smt::SmtStatus::Unsat) << f.name;
  auto failing = [](const verify::smt::BlockedOrderQuery& bad) {
    std::vector<std::string> out;
    for (const auto& f : verify::smt::prove_blocked_order(bad, verify::smt::SmtLimits{}))
      if (f.outcome.status == verify::smt::SmtStatus::Sat) out.push_back(f.name);
    return out;
  };
  verify::smt::BlockedOrderQuery stride = q;  // blocks overlap: 63·blk + j
  stride.blk_coef = 63;
  EXPECT_EQ(failing(stride), (std::vector<std::string>{"main.order", "main.cover"}));
  verify::smt::BlockedOrderQuery gap = q;  // the tail skips every other pair
  gap.tail_j_coef = 2;
  EXPECT_EQ(failing(gap), (std::vector<std::string>{"tail.range", "tail.cover"}));
}

TEST(FusedBackwardOrder, PlantedBreaksOfTheTemplateAreNotLifted) {
  const Step s = step(80, 80);
  // The key block read backwards: 64·blk + 63 − j.
  const auto reversed = lift(s, planted(s.fused, R"(k\[bw_b, 64\*bw_block \+ bw_j, bw_h, bw_head_width\])",
                                        "k[bw_b, 64*bw_block + -1*bw_j + 63, bw_h, bw_head_width]"),
                             "grad_q", "k");
  EXPECT_FALSE(reversed.proved);
  EXPECT_NE(reversed.why_not.find("main.order"), std::string::npos) << reversed.why_not;
  // The tail one pair back: 63 + j.
  const auto shifted = lift(s, planted(s.fused, R"(dout\[bw_b, bw_j_3 \+ 64,)", "dout[bw_b, bw_j_3 + 63,"),
                            "grad_v", "dout");
  EXPECT_FALSE(shifted.proved);
  EXPECT_NE(shifted.why_not.find("not the template's"), std::string::npos) << shifted.why_not;
  // The tile never copied back: grad_k written from the probabilities' tile.
  const auto uncopied =
      lift(s, planted(s.fused, R"(= os_bwd_grad_dk\[bw_head_width, bw_b, bw_t, bw_h\]\n)",
                      "= os_bwd_probs_dk[bw_head_width, bw_b, bw_t, bw_h]\n"),
           "grad_k", "q");
  EXPECT_FALSE(uncopied.proved);
  EXPECT_NE(uncopied.why_not.find("never copied into"), std::string::npos) << uncopied.why_not;
  // The source side: an accumulation that is not the composed contraction's order (no plain pair
  // iterator) is refused too.
  const auto wrong_operand = lift(s, s.fused, "grad_q", "v");
  EXPECT_FALSE(wrong_operand.proved);
  EXPECT_NE(wrong_operand.why_not.find("not an unguarded accumulation of a product with v"), std::string::npos)
      << wrong_operand.why_not;
}

}  // namespace
}  // namespace fp
