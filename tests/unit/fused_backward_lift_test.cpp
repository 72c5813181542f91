// The all-sizes lift of the fused backward's dV (verify/online_softmax/fused_backward_lift.h): it
// holds for the tier's own fused backward — every precision, one block or several and a tail,
// masks that skip blocks and masks that do not — and refuses a target that is right at the given
// size but wrong at another, or wrong outright.

#include "verify/online_softmax/fused_backward_lift.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/attention.h"
#include "online_softmax_fixtures.h"
#include "rewrites/config.h"
#include "rewrites/members.h"
#include "rewrites/online_softmax/claims.h"
#include "verify/engine.h"

namespace fp::verify {
namespace {

using ostest::edited;
using ostest::same_outputs;

struct BackwardCase {
  std::int64_t sq, sk, d, e;
  const char* mask;
  Prec prec;
};

std::string name_of(const BackwardCase& c) {
  return fmt::format("sq {} sk {} d {} e {} mask {} {}", c.sq, c.sk, c.d, c.e, c.mask, prec_name(c.prec));
}

// The fused backward's task for `claim` of a training step (the forward rewritten by the tier too).
Task backward_task(const BackwardCase& c, const std::string& claim) {
  const AttentionSpec s = ostest::attention_of(c.sq, c.sk, c.d, c.e, c.mask, c.prec, /*train=*/true);
  const Config cfg = make_config("", {"online_softmax=true", "online_softmax_backward=true"}, {});
  for (const Task& t : tier_tasks(build_attention(s), cfg, {}, "attention.fp", "repro").tasks)
    if (t.shape == "online-softmax.fused-backward" && t.obligation.claim == claim) return t;
  ADD_FAILURE() << "no " << claim << " task";
  return Task{};
}

Task dv_task(const BackwardCase& c) {
  return backward_task(c, "backward-dv");
}

BackwardLift lift(const Task& t, const Routine& tgt) {
  const osm::BackwardRoles r = osm::backward_roles(t.app);
  return lift_fused_backward(t.src, tgt, r, r.d_v);
}

std::string dv(const Task& t) {
  return osm::backward_roles(t.app).d_v;
}

// `edit` of t's target is a program that changes `node` at t's sizes exactly when `changes`, and
// the lift of `node` refuses it, naming `refusal`.
void expect_refused(const Task& t, const std::vector<std::pair<std::string, std::string>>& edit,
                    const std::string& node, bool changes, const std::string& refusal) {
  const Routine tgt = edited(t.tgt, edit);
  ASSERT_NO_THROW(check_routine_or_throw(tgt, "edited.fp"));
  ASSERT_EQ(!same_outputs(t.src, t.tgt, tgt, node), changes)
      << (changes ? "the edit changes nothing" : "the edit changes " + node + " at this size");
  const BackwardLift l = lift_fused_backward(t.src, tgt, osm::backward_roles(t.app), node);
  EXPECT_FALSE(l.proved);
  EXPECT_NE(l.why_not.find(refusal), std::string::npos) << l.why_not;
}

TEST(FusedBackwardLift, HoldsForTheTiersFusedBackward) {
  const std::vector<BackwardCase> cases = {
      {3, 4, 2, 2, "causal", Prec::F32},    {5, 4, 2, 3, "none", Prec::F32},
      {4, 5, 3, 2, "padding:1", Prec::F16}, {4, 4, 2, 2, "banded:2", Prec::BF16},
      {3, 5, 2, 2, "prefix:2", Prec::F64},  {70, 3, 2, 2, "causal", Prec::F32},
      {67, 2, 2, 2, "none", Prec::F32},
  };
  for (const BackwardCase& c : cases) {
    SCOPED_TRACE(name_of(c));
    for (const char* claim : {"backward-dq", "backward-dk"}) {
      SCOPED_TRACE(claim);
      const Task t = backward_task(c, claim);
      const osm::BackwardRoles r = osm::backward_roles(t.app);
      const BackwardLift l = lift_fused_backward(t.src, t.tgt, r, t.obligation.covers.at(0).node);
      if (c.prec == Prec::F16 || c.prec == Prec::BF16) {
        // ds at f32 over an f16 / bf16 line: the term identity decides at the routine's sizes.
        EXPECT_FALSE(l.proved);
        EXPECT_NE(l.why_not.find("wider than the line's"), std::string::npos) << l.why_not;
        continue;
      }
      EXPECT_TRUE(l.proved) << l.why_not;
      EXPECT_EQ(l.keys, c.sk);
      EXPECT_EQ(l.width, c.e);
      EXPECT_EQ(l.pairs, std::string(claim) == "backward-dq" ? c.sk : c.sq);
    }
    const Task t = dv_task(c);
    const BackwardLift l = lift(t, t.tgt);
    EXPECT_TRUE(l.proved) << l.why_not;
    EXPECT_EQ(l.pairs, c.sq);
    EXPECT_EQ(l.tail, c.sq > 64);
    // The target as text reads the same.
    const Routine reparsed = parse_routine(print_routine(t.tgt), "t.fp");
    const BackwardLift again = lift_fused_backward(parse_routine(print_routine(t.src), "s.fp"), reparsed,
                                                   osm::backward_roles(t.app), dv(t));
    EXPECT_TRUE(again.proved) << "the target as text: " << again.why_not;
  }
}

// Every declared mutant of the fused backward is refused by each gradient's lift or leaves that
// gradient unchanged: two targets a lift accepts are the same form, bit for bit.
TEST(FusedBackwardLift, AcceptsNoDeclaredMutantThatChangesItsGradient) {
  const ShapeInfo* shape = find_shape("online-softmax.fused-backward");
  ASSERT_NE(shape, nullptr);
  for (const BackwardCase& c :
       {BackwardCase{3, 4, 2, 2, "causal", Prec::F32}, BackwardCase{67, 3, 2, 2, "none", Prec::F32}}) {
    for (const char* claim : {"backward-dv", "backward-dq", "backward-dk"}) {
      SCOPED_TRACE(name_of(c) + " " + claim);
      const Task t = backward_task(c, claim);
      const std::string g = t.obligation.covers.at(0).node;
      int refused = 0;
      for (const Mutant& m : shape->mutants(t.tgt, t.app)) {
        SCOPED_TRACE(m.id);
        try {
          check_routine_or_throw(m.tgt, m.id);
        } catch (const fp::UserError&) {
          continue;  // a mutant of another shape's extents (sq != sk) is not a program here
        }
        if (!lift_fused_backward(t.src, m.tgt, osm::backward_roles(t.app), g).proved) {
          ++refused;
          continue;
        }
        EXPECT_TRUE(same_outputs(t.src, t.tgt, m.tgt, g))
            << "mutant " << m.id << " changes " << g << " and was lifted";
      }
      EXPECT_GE(refused, 1);
    }
  }
}

// Each edit leaves dV right at the routine's sizes (the interpreter agrees bit for bit) and wrong
// at others; the lift, which argues over symbolic extents, refuses it.
TEST(FusedBackwardLift, RefusesATargetRightOnlyAtTheGivenSizes) {
  struct Edit {
    BackwardCase c;
    std::vector<std::pair<std::string, std::string>> replace;
    std::string why, refusal;
  };
  const std::vector<Edit> edits = {
      // The tail's skip guard widened to a bound every key of sk = 3 is below.
      {{70, 3, 2, 2, "causal", Prec::F32},
       {{"if lt.i32(idx.i32(bw_t), idx.i32(3)) {\n          for bw_j_3",
         "if lt.i32(idx.i32(bw_t), idx.i32(5)) {\n          for bw_j_3"}},
       "skip guard",
       "skip guard"},
      // One block as wide as the query extent: the query index written without the block term,
      // which is 0 here and only here.
      {{3, 4, 2, 2, "none", Prec::F32},
       {{"q[bw_b, 3*bw_block_3 + bw_j_3, bw_h, bw_d_3]", "q[bw_b, bw_j_3, bw_h, bw_d_3]"}},
       "block term",
       "contraction"},
      // The row max read at batch 0 and head 0, the only ones here.
      {{3, 4, 2, 2, "causal", Prec::F32},
       {{"row_max[bw_b, 3*bw_block_3 + bw_j_3, bw_h])", "row_max[0, 3*bw_block_3 + bw_j_3, 0])"}},
       "fixed row",
       "recomputed shifted"},
  };
  for (const Edit& e : edits) {
    SCOPED_TRACE(e.why + ": " + name_of(e.c));
    const Task t = dv_task(e.c);
    ASSERT_TRUE(lift(t, t.tgt).proved);
    expect_refused(t, e.replace, dv(t), /*changes=*/false, e.refusal);
  }
}

// Wrong at the routine's own sizes: the lift refuses.
TEST(FusedBackwardLift, RefusesAWrongRecomputation) {
  const Task t = dv_task({3, 4, 2, 2, "causal", Prec::F32});
  const std::vector<ostest::RefusedEdit> wrongs = {
      // The shift commuted: exp(max - x), which is not exp(x - max).
      {{{"sub.f32(os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h], row_max[bw_b, 3*bw_block_3 + bw_j_3, bw_h])",
         "sub.f32(row_max[bw_b, 3*bw_block_3 + bw_j_3, bw_h], os_bwd_probs_dv[bw_j_3, bw_b, bw_t, bw_h])"}},
       "recomputed shifted"},
      // The skip guard at the block's first query, where the causal mask is true shortest.
      {{{"if lt.i32(idx.i32(bw_t), idx.i32(3*bw_block_3 + 4)) {",
         "if lt.i32(idx.i32(bw_t), idx.i32(3*bw_block_3 + 2)) {"}},
       "skip guard"},
  };
  for (const ostest::RefusedEdit& w : wrongs) {
    SCOPED_TRACE(w.refusal);
    expect_refused(t, w.replace, dv(t), /*changes=*/true, w.refusal);
  }
}

// A kept statement that halves the row sums after the source's probabilities and before the
// nest: the nest would read the halved sums the source's probabilities never saw. The lift refuses
// to move the nest across it.
TEST(FusedBackwardLift, RefusesToReadALeafAKeptStatementWroteInBetween) {
  const Task t = dv_task({3, 4, 2, 2, "causal", Prec::F32});
  const std::string halve =
      "  for b in 0..0 {\n    for s in 0..2 {\n      for h in 0..0 {\n        row_sum[b, s, h] = "
      "mul.f32(row_sum[b, s, "
      "h], 0.5:f32)\n      }\n    }\n  }\n  zero grad_q\n";
  const Routine src = edited(t.src, {{"  zero grad_q\n", halve}});
  const Routine tgt = edited(t.tgt, {{"  zero grad_q\n", halve}});
  ASSERT_NO_THROW(check_routine_or_throw(src, "src.fp"));
  ASSERT_NO_THROW(check_routine_or_throw(tgt, "tgt.fp"));
  ASSERT_FALSE(same_outputs(src, src, tgt, dv(t))) << "the halving changes nothing";
  const osm::BackwardRoles r = osm::backward_roles(t.app);
  const BackwardLift l = lift_fused_backward(src, tgt, r, r.d_v);
  EXPECT_FALSE(l.proved);
  EXPECT_NE(l.why_not.find("writes row_sum between its read in the source and the nest"), std::string::npos)
      << l.why_not;
}

// A tile one cell too small for its block: the checker rejects the program, and the lift, which
// may be handed a routine built in memory, refuses it on its own.
TEST(FusedBackwardLift, RefusesAnAccessOutsideItsNode) {
  const Task t = dv_task({3, 4, 2, 2, "none", Prec::F32});
  const Routine tgt = edited(t.tgt, {{"node os_bwd_probs_dv : f32[3,", "node os_bwd_probs_dv : f32[2,"}});
  EXPECT_ANY_THROW(check_routine_or_throw(tgt, "edited.fp"));
  const BackwardLift l = lift(t, tgt);
  EXPECT_FALSE(l.proved);
  EXPECT_NE(l.why_not.find("os_bwd_probs_dv is not within its axis 0"), std::string::npos) << l.why_not;
}

// dQ's row dot and its mask link, each right at the routine's sizes and wrong at others: refused.
TEST(FusedBackwardLift, RefusesADqRightOnlyAtTheGivenSizes) {
  const Task t = backward_task({3, 4, 2, 2, "causal", Prec::F32}, "backward-dq");
  const osm::BackwardRoles r = osm::backward_roles(t.app);
  const std::vector<ostest::RefusedEdit> edits = {
      // O read at the only batch and head.
      {{{"o[bw_b, bw_s, bw_h, bw_value_width]))", "o[0, bw_s, 0, bw_value_width]))"}},
       "products are not dout·o at one cell"},
      // The mask link's predicate clipped by a bound every key of sk = 4 is below.
      {{{"where.f32(lt.i32(idx.i32(4*bw_block + bw_j), idx.i32(bw_s + 2)), os_bwd_dprob_dq",
         "where.f32(lt.i32(idx.i32(4*bw_block + bw_j), min.i32(idx.i32(bw_s + 2), 9:i32)), os_bwd_dprob_dq"}},
       "score gradient link"},
  };
  for (const ostest::RefusedEdit& e : edits) {
    SCOPED_TRACE(e.refusal);
    expect_refused(t, e.replace, r.d_q, /*changes=*/false, e.refusal);
  }
}

// A row dot over another query's row (dO and O at one cell, but not the row the pair's dP reads),
// and one over an O that a kept statement doubles after the backward: the fused form over the
// source's terms is neither, and the lift refuses both.
TEST(FusedBackwardLift, RefusesARowDotOverAnotherRowOrAnotherO) {
  const Task t = backward_task({3, 4, 2, 2, "causal", Prec::F32}, "backward-dq");
  const osm::BackwardRoles r = osm::backward_roles(t.app);
  expect_refused(
      t,
      {{"mul.f32(dout[bw_b, bw_s, bw_h, bw_value_width], o[bw_b, bw_s, bw_h, bw_value_width])",
        "mul.f32(dout[bw_b, 2 - bw_s, bw_h, bw_value_width], o[bw_b, 2 - bw_s, bw_h, bw_value_width])"}},
      r.d_q, /*changes=*/true, "not the output-gradient row the pair's dP reads");
  {
    const std::string twice =
        "  for b in 0..0 {\n    for s in 0..2 {\n      for h in 0..0 {\n        for e in 0..1 {\n          "
        "o[b, s, h, e] = "
        "mul.f32(o[b, s, h, e], 2:f32)\n        }\n      }\n    }\n  }\n}\n";
    std::string src = print_routine(t.src), tgt = print_routine(t.tgt);
    src.replace(src.rfind("}\n"), 2, twice);
    tgt.replace(tgt.rfind("}\n"), 2, twice);
    const Routine s2 = ostest::parse_checked(src, "src.fp"), t2 = ostest::parse_checked(tgt, "tgt.fp");
    const BackwardLift l = lift_fused_backward(s2, t2, r, r.d_q);
    EXPECT_FALSE(l.proved);
    EXPECT_NE(l.why_not.find("writes o between its read in the source and the row dot"), std::string::npos)
        << l.why_not;
  }
}

// A source whose dP lost its zero-out (so dP has one writer) or whose roles name S for P: the lift
// refuses with the reason, never throws.
TEST(FusedBackwardLift, RefusesAMalformedSourceWithTheReason) {
  const Task t = backward_task({3, 4, 2, 2, "causal", Prec::F32}, "backward-dq");
  osm::BackwardRoles r = osm::backward_roles(t.app);
  const Routine src = edited(t.src, {{"  zero grad_probs\n", ""}});
  BackwardLift l;
  ASSERT_NO_THROW(l = lift_fused_backward(src, t.tgt, r, r.d_q));
  EXPECT_FALSE(l.proved);
  EXPECT_NE(l.why_not.find("grad_probs"), std::string::npos) << l.why_not;
  r.p = "scores";
  ASSERT_NO_THROW(l = lift_fused_backward(t.src, t.tgt, r, r.d_q));
  EXPECT_FALSE(l.proved);
  EXPECT_FALSE(l.why_not.empty());
}

// A soundness oracle for the lift: random one-token edits of the tier's dV nest that still pass the
// checker; whenever the lift accepts one, dV must be the original's on random inputs.
TEST(FusedBackwardLift, RandomEditsTheLiftAcceptsChangeNoDv) {
  const std::vector<BackwardCase> cases = {{3, 4, 2, 2, "causal", Prec::F32},
                                           {4, 3, 2, 3, "padding:1", Prec::F16},
                                           {66, 2, 2, 2, "causal", Prec::F32}};
  const std::vector<std::pair<std::string, std::string>> swaps = {
      {"add.", "sub."},     {"sub.", "add."}, {"mul.", "div."}, {"div.", "mul."},
      {"lt.i32", "eq.i32"}, {"-inf:", "0:"},  {"0:f", "1:f"},   {"..1 {", "..0 {"},
      {"..2 {", "..1 {"},   {"exp.", "neg."}, {"+ 4", "+ 3"},   {"bw_j_3]", "0]"}};
  std::mt19937_64 rng(11);
  int tried = 0, accepted = 0;
  for (const BackwardCase& c : cases) {
    SCOPED_TRACE(name_of(c));
    const Task t = dv_task(c);
    const std::string text = print_routine(t.tgt);
    // Edits inside the dV nest (after its tiles' first use), where the lift looks.
    const std::size_t from_at = text.find("os_bwd_rows_k_dv[");
    ASSERT_NE(from_at, std::string::npos);
    for (int k = 0; k < 50; ++k) {
      std::string what;
      const std::optional<Routine> tgt = ostest::random_edit(text, from_at, swaps, rng, what);
      if (!tgt) continue;
      ++tried;
      if (!lift(t, *tgt).proved) continue;
      ++accepted;
      EXPECT_TRUE(same_outputs(t.src, t.tgt, *tgt, dv(t)))
          << "the lift accepted an edit that changes dV: " << what;
    }
  }
  EXPECT_GE(tried, 60);
  RecordProperty("edits_tried", tried);
  RecordProperty("edits_accepted", accepted);
}

}  // namespace
}  // namespace fp::verify
