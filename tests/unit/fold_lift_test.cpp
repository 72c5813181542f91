// The all-sizes lift of the block fold (verify/online_softmax/fold_lift.h): it holds for the tier's
// own folds — every precision, with and without a tail, masks that skip blocks and masks that do
// not, forward and training steps — and refuses a target that is right at the given size but wrong
// at another, or right only under the rewrite's own assumptions.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/checker.h"
#include "core/interpreter.h"
#include "core/random_inputs.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/attention.h"
#include "rewrites/config.h"
#include "rewrites/members.h"
#include "verify/engine.h"
#include "verify/online_softmax/fold_lift.h"
#include "online_softmax_fixtures.h"
#include "tensor_expect.h"

namespace fp::verify {
namespace {

struct FoldCase {
  std::int64_t sq, sk, d, e, block;
  const char* mask;
  Prec prec;
  bool train;
};

std::string name_of(const FoldCase& c) {
  return fmt::format("sq {} sk {} d {} e {} B {} mask {} {}{}", c.sq, c.sk, c.d, c.e, c.block, c.mask, prec_name(c.prec),
                     c.train ? " train" : "");
}

std::vector<Task> fold_tasks(const FoldCase& c) {
  const AttentionSpec s = ostest::attention_of(c.sq, c.sk, c.d, c.e, c.mask, c.prec, c.train);
  const Config cfg = make_config("", {"online_softmax=true", fmt::format("online_softmax_block={}", c.block)}, {});
  std::vector<Task> out;
  for (const Task& t : tier_tasks(build_attention(s), cfg, {}, "attention.fp", "repro").tasks)
    if (t.shape == "online-softmax.block-fold") out.push_back(t);
  return out;
}

TEST(FoldLift, HoldsForTheTiersFolds) {
  const std::vector<FoldCase> cases = {
      {3, 5, 2, 2, 2, "none", Prec::F32, false},      {3, 5, 2, 2, 2, "causal", Prec::F32, false},
      {4, 4, 2, 3, 2, "none", Prec::F32, false},      {3, 5, 2, 2, 2, "padding:1", Prec::F16, true},
      {4, 6, 3, 2, 4, "causal", Prec::BF16, true},    {3, 4, 2, 2, 8, "none", Prec::F64, false},
      {5, 5, 2, 2, 2, "banded:2", Prec::F32, false},  {3, 7, 2, 2, 3, "prefix:2", Prec::F32, true},
  };
  for (const FoldCase& c : cases) {
    SCOPED_TRACE(name_of(c));
    const std::vector<Task> ts = fold_tasks(c);
    ASSERT_FALSE(ts.empty());
    const FoldLift lift = lift_fold(ts[0].src, ts[0].tgt, ts[0].app, Limits{});
    EXPECT_TRUE(lift.proved) << lift.why_not;
  }
}

using ostest::edited;
using ostest::same_outputs;

// Every declared mutant that changes an output is refused; one that changes none here (a max
// stored that nothing reads, a padding no tail reads) may be lifted, and then its outputs agree.
TEST(FoldLift, RefusesEveryDeclaredMutantThatChangesAnOutput) {
  for (const FoldCase& c : {FoldCase{3, 5, 2, 2, 2, "causal", Prec::F32, true}, FoldCase{4, 4, 2, 2, 2, "none", Prec::F16, false}}) {
    SCOPED_TRACE(name_of(c));
    const std::vector<Task> ts = fold_tasks(c);
    ASSERT_FALSE(ts.empty());
    const ShapeInfo* shape = find_shape("online-softmax.block-fold");
    ASSERT_NE(shape, nullptr);
    int refused = 0;
    for (const Mutant& m : shape->mutants(ts[0].tgt, ts[0].app)) {
      const FoldLift lift = lift_fold(ts[0].src, m.tgt, ts[0].app, Limits{});
      const bool same = same_outputs(ts[0].src, ts[0].tgt, m.tgt);
      if (!lift.proved) {
        EXPECT_FALSE(lift.why_not.empty()) << m.id;
        ++refused;
      }
      EXPECT_TRUE(!lift.proved || same) << "mutant " << m.id << " changes an output and was lifted";
    }
    EXPECT_GE(refused, 15);
  }
}

// Each edit leaves the target right at the routine's sizes (the interpreter agrees bit for bit)
// and wrong at others; the lift, which argues over symbolic extents, refuses it.
TEST(FoldLift, RefusesATargetRightOnlyAtTheGivenSizes) {
  struct Edit {
    FoldCase c;
    std::vector<std::pair<std::string, std::string>> replace;  // (from, to), each from found once
    std::string why;
    std::string refusal;  // in the condition the lift names
  };
  const std::vector<Edit> edits = {
      // The value pass's tail guard `key < sk` narrowed by `key < tb + 3`: the same while there are
      // 3 blocks of 2.
      {{3, 5, 2, 2, 2, "none", Prec::F32, false},
       {{"if lt.i32(idx.i32(2*os_block_t + os_key_t), 5:i32) {\n                os_block_numerator_o",
         "if lt.i32(idx.i32(2*os_block_t + os_key_t), 5:i32) {\n if lt.i32(idx.i32(2*os_block_t + os_key_t), "
         "idx.i32(os_block_t + 3)) {\n                os_block_numerator_o"},
        {"h, os_e]))\n              }\n            }\n          }", "h, os_e]))\n }\n              }\n            }\n          }"}},
       "tail", "numerator accumulation"},
      // The skip guard bounded by a constant true for every row of sq = 3 only.
      {{3, 5, 2, 2, 2, "causal", Prec::F32, false},
       {{"if lt.i32(idx.i32(2*os_block_t), idx.i32(s + 3)) {", "if lt.i32(idx.i32(2*os_block_t), min.i32(idx.i32(s + 3), 5:i32)) {"}},
       "skip", "guarded by the mask"},
      // A block as wide as the key extent (B = sk = 4, one block): the key index written without
      // the block term, which is 0 here and only here.
      {{3, 4, 2, 2, 4, "none", Prec::F32, false},
       {{"k[b, 4*os_block_t + os_key_t, h, os_d]", "k[b, os_key_t, h, os_d]"}},
       "block", "block contraction"},
      // O stored on every block from the last one on: the same while the last block is the last.
      {{3, 5, 2, 2, 2, "none", Prec::F32, false},
       {{"if eq.i32(idx.i32(os_block_t), 2:i32) {", "if lt.i32(1:i32, idx.i32(os_block_t)) {"}},
       "store", "guarded by the last block"},
  };
  for (const Edit& e : edits) {
    SCOPED_TRACE(e.why + ": " + name_of(e.c));
    const std::vector<Task> ts = fold_tasks(e.c);
    ASSERT_FALSE(ts.empty());
    ASSERT_TRUE(lift_fold(ts[0].src, ts[0].tgt, ts[0].app, Limits{}).proved);
    {
      const Routine reparsed = parse_routine(print_routine(ts[0].tgt), "t.fp");
      const Routine reparsed_src = parse_routine(print_routine(ts[0].src), "s.fp");
      const FoldLift l = lift_fold(reparsed_src, reparsed, ts[0].app, Limits{});
      ASSERT_TRUE(l.proved) << "the target as text: " << l.why_not;
    }
    const Routine tgt = edited(ts[0].tgt, e.replace);
    ASSERT_NO_THROW(check_routine_or_throw(tgt, "edited.fp"));
    ASSERT_TRUE(same_outputs(ts[0].src, ts[0].tgt, tgt)) << "the edit changes an output at this size";
    const FoldLift lift = lift_fold(ts[0].src, tgt, ts[0].app, Limits{});
    EXPECT_FALSE(lift.proved);
    EXPECT_FALSE(lift.why_not.empty());
    EXPECT_NE(lift.why_not.find(e.refusal), std::string::npos) << lift.why_not;
  }
}


// A user's own fold: every node, loop and local renamed, the contraction's and the numerator's
// operands commuted, its own block size. IEEE + and · commute exactly, so it is the same fold.
TEST(FoldLift, LiftsAHandWrittenFoldWithItsOwnNamesAndOperandOrder) {
  const std::vector<Task> ts = fold_tasks({3, 7, 2, 2, 3, "causal", Prec::F32, false});
  ASSERT_FALSE(ts.empty());
  std::string text = print_routine(ts[0].tgt);
  const std::string dot = "mul.f32(os_block_rows_q[os_d, b, s, h], k[b, 3*os_block_t + os_key_t, h, os_d])";
  const std::string acc = "add.f32(os_block_numerator_o[os_e, b, s, h], mul.f32(os_block_scores_masked[os_key_t, b, "
                          "s, h], v[b, 3*os_block_t + os_key_t, h, os_e]))";
  ASSERT_NE(text.find(dot), std::string::npos);
  ASSERT_NE(text.find(acc), std::string::npos);
  text = ostest::replaced_all(text, dot, "mul.f32(k[b, 3*os_block_t + os_key_t, h, os_d], os_block_rows_q[os_d, b, s, h])");
  text = ostest::replaced_all(text, acc,
                      "add.f32(mul.f32(v[b, 3*os_block_t + os_key_t, h, os_e], os_block_scores_masked[os_key_t, b, s, "
                      "h]), os_block_numerator_o[os_e, b, s, h])");
  text = ostest::replaced_all(text, "os_", "mine_");
  const Routine tgt = parse_routine(text, "my_fold.fp");
  ASSERT_TRUE(same_outputs(ts[0].src, ts[0].tgt, tgt));
  const FoldLift lift = lift_fold(ts[0].src, tgt, ts[0].app, Limits{});
  EXPECT_TRUE(lift.proved) << lift.why_not;
}

// Wrong at the routine's own sizes, each in a way no declared mutant is: the lift refuses.
TEST(FoldLift, RefusesAWrongGuardOrOperandOrder) {
  const FoldCase c{3, 5, 2, 2, 2, "causal", Prec::F32, false};
  const std::vector<Task> ts = fold_tasks(c);
  ASSERT_FALSE(ts.empty());
  const std::vector<ostest::RefusedEdit> wrongs = {
      // The scores' tail guard stops a key early: the row's last key is never read.
      {{{"if lt.i32(idx.i32(2*os_block_t + os_key_t), 5:i32) {\n                os_block_scores_masked[os_key_t, b, s, h] = 0:f32",
         "if lt.i32(idx.i32(2*os_block_t + os_key_t), 4:i32) {\n                os_block_scores_masked[os_key_t, b, s, h] = 0:f32"}},
       "guarded by `bk·tb + j < sk`"},
      // The exponentials' subtraction commuted: exp(floor - x), which is not exp(x - floor).
      {{{"exp.f32(sub.f32(os_block_scores_masked[os_key_t, b, s, h], os_floor_row_max))",
         "exp.f32(sub.f32(os_floor_row_max, os_block_scores_masked[os_key_t, b, s, h]))"}},
       "exponentials"},
  };
  for (const ostest::RefusedEdit& w : wrongs) {
    SCOPED_TRACE(w.refusal);
    const Routine tgt = edited(ts[0].tgt, w.replace);
    ASSERT_NO_THROW(check_routine_or_throw(tgt, "edited.fp"));
    ASSERT_FALSE(same_outputs(ts[0].src, ts[0].tgt, tgt)) << "the edit changes nothing";
    const FoldLift lift = lift_fold(ts[0].src, tgt, ts[0].app, Limits{});
    EXPECT_FALSE(lift.proved);
    EXPECT_NE(lift.why_not.find(w.refusal), std::string::npos) << lift.why_not;
  }
}

// A mask whose predicate turns from false to true as the key grows (s < t: a row sees only later
// keys) hides the first key of a block whose later keys are live: skipping such a block is wrong,
// and the lift refuses to skip on it.
TEST(FoldLift, RefusesToSkipOnAMaskThatOpensAsTheKeyGrows) {
  const std::vector<Task> ts = fold_tasks({3, 5, 2, 2, 2, "causal", Prec::F32, false});
  ASSERT_FALSE(ts.empty());
  const Routine src = edited(ts[0].src, {{"lt.i32(idx.i32(t), idx.i32(s + 3))", "lt.i32(idx.i32(s), idx.i32(t))"}});
  std::string text = print_routine(ts[0].tgt);
  text = ostest::replaced_all(text, "lt.i32(idx.i32(2*os_block_t + os_key_t), idx.i32(s + 3))",
                      "lt.i32(idx.i32(s), idx.i32(2*os_block_t + os_key_t))");
  text = ostest::replaced_all(text, "lt.i32(idx.i32(2*os_block_t), idx.i32(s + 3))", "lt.i32(idx.i32(s), idx.i32(2*os_block_t))");
  const Routine tgt = parse_routine(text, "anti_causal_fold.fp");
  const FoldLift lift = lift_fold(src, tgt, ts[0].app, Limits{});
  EXPECT_FALSE(lift.proved);
  EXPECT_NE(lift.why_not.find("can turn from false to true"), std::string::npos) << lift.why_not;
}

}  // namespace
}  // namespace fp::verify

namespace fp::verify {
namespace {

// A soundness oracle for the lift: two targets it proves are both the fold's recurrence over the
// same scores, so they compute the same outputs bit for bit. Random one-token edits of the tier's
// fold (an operator swapped, a constant or a loop bound changed, operands exchanged) that still pass
// the checker: whenever the lift accepts one, its outputs must be the original's on random inputs.
TEST(FoldLift, RandomEditsTheLiftAcceptsChangeNoOutput) {
  const std::vector<FoldCase> cases = {
      {3, 5, 2, 2, 2, "causal", Prec::F32, true},
      {4, 7, 2, 3, 3, "padding:2", Prec::F32, false},
      {3, 4, 2, 2, 2, "none", Prec::F16, true},
      {4, 6, 2, 2, 4, "prefix:2", Prec::BF16, false},
  };
  const std::vector<std::pair<std::string, std::string>> swaps = {
      {"add.", "sub."}, {"sub.", "add."}, {"max.", "min."}, {"mul.", "div."}, {"lt.i32", "eq.i32"},
      {"-inf:", "0:"},  {"0:f32", "1:f32"}, {"..1 {", "..0 {"}, {"..2 {", "..1 {"}, {"-0:", "0:"},
      {"nan:", "0:"},   {"exp.", "neg."}};
  std::mt19937_64 rng(7);
  int tried = 0, accepted = 0;
  for (const FoldCase& c : cases) {
    SCOPED_TRACE(name_of(c));
    const std::vector<Task> ts = fold_tasks(c);
    ASSERT_FALSE(ts.empty());
    const std::string text = print_routine(ts[0].tgt);
    for (int k = 0; k < 60; ++k) {
      std::string what;
      const std::optional<Routine> tgt = ostest::random_edit(text, 0, swaps, rng, what);
      if (!tgt) continue;
      ++tried;
      const FoldLift lift = lift_fold(ts[0].src, *tgt, ts[0].app, Limits{});
      if (!lift.proved) continue;
      ++accepted;
      EXPECT_TRUE(same_outputs(ts[0].src, ts[0].tgt, *tgt)) << "the lift accepted an edit that changes an output: " << what;
    }
  }
  EXPECT_GE(tried, 100);
  RecordProperty("edits_tried", tried);
  RecordProperty("edits_accepted", accepted);
}

}  // namespace
}  // namespace fp::verify
