// The row-private lemma (exec/row_private.h): which nodes an executor may keep in one private
// slice per iteration of a statement's leading loops. Each negative case breaks one premise.

#include <gtest/gtest.h>

#include <string>

#include "core/checker.h"
#include "core/placement.h"
#include "core/text_parser.h"
#include "exec/codegen_emitter.h"
#include "exec/program_plan.h"
#include "exec/row_private.h"

namespace fp {
namespace {

Routine parse_checked(const std::string& text) {
  Routine r = parse_routine(text, "row_private.fp");
  check_routine_or_throw(r, "row_private.fp");
  return r;
}

// node name -> its row axes, for the rows = the first `depth` loops of statement `position`.
std::map<std::string, std::vector<std::size_t>> private_nodes(const std::string& text, int position = 0,
                                                              std::size_t depth = 1) {
  const Routine r = parse_checked(text);
  const ProgramPlan plan = make_plan(r, PlacementConfig{});
  std::vector<const Stmt*> chain = codegen::loop_chain(*plan.top.at(static_cast<std::size_t>(position)));
  chain.resize(std::min(depth, chain.size()));
  std::map<std::string, std::vector<std::size_t>> out;
  for (const auto& n : codegen::row_private_nodes(plan, position, chain))
    out[plan.placed.nodes[static_cast<std::size_t>(n.node)].name] = n.axis;
  return out;
}

// t: a per-row tile written then read inside the row loop; {extra} statements after it.
std::string tile_routine(const std::string& t_mode, const std::string& inside, const std::string& after = "") {
  return R"(routine rp {
  node x : f32[4, 3] materialized input
  node t : f32[3, 4] )" + t_mode + R"(
  node y : f32[4] materialized output
  node z : f32[4] materialized output
  for i in 0..3 {
    for c in 0..2 {
      t[c, i] = mul.f32(x[i, c], 2:f32)
    }
)" + inside + R"(
    for c in 0..2 {
      y[i] = add.f32(y[i], t[c, i])
    }
  }
)" + after + "}\n";
}

TEST(RowPrivate, APerRowTileIsPrivateOnItsRowAxis) {
  const auto got = private_nodes(tile_routine("materialized", ""));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.at("t"), std::vector<std::size_t>{1});
}

TEST(RowPrivate, InputsOutputsAndRequestedNodesAreNot) {
  EXPECT_TRUE(private_nodes(tile_routine("materialized output", "")).empty());
  EXPECT_TRUE(private_nodes(tile_routine("requested", "")).empty());
}

TEST(RowPrivate, AReadOutsideTheStatementKeepsTheBuffer) {
  const std::string after = R"(  for i in 0..3 {
    z[i] = t[0, i]
  }
)";
  EXPECT_TRUE(private_nodes(tile_routine("materialized", "", after)).empty());
}

TEST(RowPrivate, AnAccessAtAnotherRowKeepsTheBuffer) {
  // Row i reads row 0's cell: a slice per row would miss it.
  const std::string inside = R"(    z[i] = t[0, 0]
)";
  EXPECT_TRUE(private_nodes(tile_routine("materialized", inside)).empty());
}

TEST(RowPrivate, AZeroOfTheNodeKeepsTheBuffer) {
  const std::string inside = R"(    zero t
)";
  EXPECT_TRUE(private_nodes(tile_routine("materialized", inside)).empty());
}

TEST(RowPrivate, EveryRowLoopNeedsItsOwnAxis) {
  const std::string text = R"(routine rp2 {
  node x : f32[4, 2, 3] materialized input
  node t : f32[3, 4, 2] materialized
  node u : f32[3, 4, 2] materialized
  node y : f32[4, 2] materialized output
  for i in 0..3 {
    for h in 0..1 {
      for c in 0..2 {
        t[c, i, h] = x[i, h, c]
        u[c, i, 0] = x[i, h, c]
      }
      for c in 0..2 {
        y[i, h] = add.f32(y[i, h], add.f32(t[c, i, h], u[c, i, 0]))
      }
    }
  }
}
)";
  const auto two = private_nodes(text, 0, 2);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two.at("t"), (std::vector<std::size_t>{1, 2}));
  const auto one = private_nodes(text, 0, 1);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one.at("u"), std::vector<std::size_t>{1});
}

}  // namespace
}  // namespace fp
