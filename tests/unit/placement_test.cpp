// Placement (core/placement.h, docs/placement.md): one test per rule on small routines written as
// text, the attention shapes the rules exist for (composed, and rewritten by online softmax's two
// first shapes, on either side of the recompute cap), and properties over random routines.

#include "core/placement.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "core/checker.h"
#include "core/memory_report.h"
#include "core/text_parser.h"
#include "fuzz/random_routine.h"

namespace fp {
namespace {

using ::testing::HasSubstr;

Routine parse(const std::string& text) {
  Routine r = parse_routine(text, "t.fp");
  auto diags = check_routine(r);
  EXPECT_TRUE(diags.empty()) << diags.front().message;
  return r;
}

const PlacementDecision& decision(const PlacementResult& p, const std::string& node) {
  for (const auto& d : p.decisions)
    if (d.node == node) return d;
  ADD_FAILURE() << "no decision for " << node;
  static const PlacementDecision kNone{"", MemMode::Materialized, ""};
  return kNone;
}

MemMode mode(const PlacementResult& p, const std::string& node) {
  return p.routine.find_node(node)->mode;
}

PlacementResult place_text(const std::string& text, std::int64_t cap = 16) {
  return place(parse(text), PlacementConfig{cap});
}

// A routine over nodes src[8] (input), out[8] (output) and the intermediates declared in NODES,
// with BODY as its statements.
std::string routine_text(std::string_view nodes, std::string_view body) {
  return fmt::format(R"(routine t {{
  node src : f32[8] materialized input
  node w : f32[8, 4] materialized input
  node out : f32[8] materialized output
{}
{}
}}
)",
                     nodes, body);
}

// ---- what never moves -------------------------------------------------------------------------

TEST(Placement, NeverMovesInputsOutputsRequestedOrLocalNodes) {
  auto p = place_text(routine_text(R"(  node a : f32[8] requested
  node b : f32[8] local
  node c : f32[8] materialized input output)",
                                   R"(  for i in 0..7 {
    a[i] = src[i]
  }
  for i in 0..7 {
    b[i] = a[i]
  }
  for i in 0..7 {
    out[i] = add.f32(b[i], c[i])
  })"));
  EXPECT_EQ(mode(p, "src"), MemMode::Materialized);
  EXPECT_EQ(mode(p, "out"), MemMode::Materialized);
  EXPECT_EQ(mode(p, "a"), MemMode::Requested);
  EXPECT_EQ(mode(p, "b"), MemMode::Local);
  EXPECT_EQ(mode(p, "c"), MemMode::Materialized);
  EXPECT_THAT(decision(p, "src").reason, HasSubstr("input"));
  EXPECT_THAT(decision(p, "out").reason, HasSubstr("output"));
  EXPECT_THAT(decision(p, "a").reason, HasSubstr("requested"));
  EXPECT_THAT(decision(p, "b").reason, HasSubstr("local"));
}

TEST(Placement, DecidesEveryNodeOnceInDeclarationOrder) {
  auto p = place_text(routine_text("  node a : f32[8] materialized", R"(  for i in 0..7 {
    a[i] = exp.f32(src[i])
  }
  for i in 0..7 {
    out[i] = a[i]
  })"));
  std::vector<std::string> names;
  for (const auto& d : p.decisions) names.push_back(d.node);
  EXPECT_EQ(names, (std::vector<std::string>{"src", "w", "out", "a"}));
  for (const auto& d : p.decisions) EXPECT_EQ(d.mode, mode(p, d.node));
}

// ---- pointwise nodes --------------------------------------------------------------------------

TEST(Placement, RecomputesAPointwiseNodeReadOncePerCellAtOneSite) {
  auto p = place_text(routine_text("  node a : f32[8] materialized", R"(  for i in 0..7 {
    a[i] = exp.f32(src[i])
  }
  for i in 0..7 {
    out[i] = a[i]
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Virtual);
  EXPECT_EQ(decision(p, "a").reason,
            "pointwise, read once per cell at one site (statement 2): recomputed there");
}

TEST(Placement, StoresAnExpensiveNodeReadAtTwoSites) {
  auto p = place_text(routine_text("  node a : f32[8] materialized", R"(  for i in 0..7 {
    a[i] = exp.f32(src[i])
  }
  for i in 0..7 {
    out[i] = a[i]
  }
  for i in 0..7 {
    out[i] = add.f32(out[i], a[i])
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_EQ(decision(p, "a").reason, "read at 2 sites (statements 2, 3), and not trivially cheap (uses exp)");
}

TEST(Placement, StoresAnExpensiveNodeReadTwiceInOneExpression) {
  auto p = place_text(routine_text("  node a : f32[8] materialized", R"(  for i in 0..7 {
    a[i] = div.f32(src[i], 3:f32)
  }
  for i in 0..7 {
    out[i] = mul.f32(a[i], a[i])
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_EQ(decision(p, "a").reason,
            "read 2 times per cell at statement 2, and not trivially cheap (uses div)");
}

TEST(Placement, StoresAnExpensiveNodeReadOncePerIterationOfALoopItDoesNotIndex) {
  auto p = place_text(routine_text("  node a : f32[8] materialized", R"(  for i in 0..7 {
    a[i] = sqrt.f32(src[i])
  }
  for i in 0..7 {
    for j in 0..3 {
      out[i] = add.f32(out[i], mul.f32(a[i], w[i, j]))
    }
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_THAT(decision(p, "a").reason, HasSubstr("read 4 times per cell"));
}

TEST(Placement, CountsAReadUnderAGuardAsARead) {
  auto p = place_text(routine_text("  node a : f32[8] materialized", R"(  for i in 0..7 {
    a[i] = exp.f32(src[i])
  }
  for i in 0..7 {
    if lt.f32(a[i], 1:f32) {
      out[i] = a[i]
    }
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_THAT(decision(p, "a").reason, HasSubstr("read 2 times per cell at statement 2"));
}

TEST(Placement, RecomputesATriviallyCheapNodeAtEverySite) {
  auto p = place_text(routine_text("  node a : f32[8] materialized", R"(  for i in 0..7 {
    a[i] = where.f32(lt.i32(idx.i32(i), 3:i32), -inf:f32, mul.f32(max.f32(src[i], 0:f32), 0.5:f32))
  }
  for i in 0..7 {
    for j in 0..3 {
      out[i] = add.f32(out[i], mul.f32(a[i], w[i, j]))
    }
  }
  for i in 0..7 {
    out[i] = add.f32(out[i], a[i])
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Virtual);
  EXPECT_EQ(
      decision(p, "a").reason,
      "read at 2 sites (statements 2, 3), but trivially cheap (4 operations): recomputed at every site");
}

TEST(Placement, TriviallyCheapMeansAtMostFourCheapOperations) {
  auto with = [](const char* value) {
    return place_text(routine_text("  node a : f32[8] materialized", fmt::format(R"(  for i in 0..7 {{
    a[i] = {}
  }}
  for i in 0..7 {{
    out[i] = a[i]
  }}
  for i in 0..7 {{
    out[i] = add.f32(out[i], a[i])
  }})",
                                                                                 value)));
  };
  auto five = with("add.f32(add.f32(add.f32(add.f32(add.f32(src[i], 1:f32), 1:f32), 1:f32), 1:f32), 1:f32)");
  EXPECT_EQ(mode(five, "a"), MemMode::Materialized);
  EXPECT_THAT(decision(five, "a").reason, HasSubstr("not trivially cheap (5 operations > 4)"));
  EXPECT_EQ(mode(with("abs.f32(neg.f32(cast.f32(min.f32(src[i], 1:f32))))"), "a"), MemMode::Virtual);
  EXPECT_EQ(mode(with("src[i]"), "a"), MemMode::Virtual);  // a copy is 0 operations
  for (const char* op : {"fma.f32(src[i], src[i], 1:f32)", "pow.f32(src[i], 2:f32)", "exp.f32(src[i])"})
    EXPECT_EQ(mode(with(op), "a"), MemMode::Materialized) << op;
}

TEST(Placement, CountsReadsThroughARecomputedNodeAtEachOfItsSites) {
  // b is expensive and read only by a; a is cheap and read at two sites, so b is needed at two.
  auto p = place_text(
      routine_text("  node b : f32[8] materialized\n  node a : f32[8] materialized", R"(  for i in 0..7 {
    b[i] = exp.f32(src[i])
  }
  for i in 0..7 {
    a[i] = add.f32(b[i], 1:f32)
  }
  for i in 0..7 {
    out[i] = a[i]
  }
  for i in 0..7 {
    out[i] = add.f32(out[i], a[i])
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Virtual);
  EXPECT_EQ(mode(p, "b"), MemMode::Materialized);
  EXPECT_EQ(decision(p, "b").reason, "read at 2 sites (statements 3, 4), and not trivially cheap (uses exp)");
}

TEST(Placement, MultipliesMultiplicitiesThroughARecomputedNode) {
  // a (cheap) is read 4 times per cell; each replay reads b once: b is needed 4 times per cell.
  auto p = place_text(
      routine_text("  node b : f32[8] materialized\n  node a : f32[8] materialized", R"(  for i in 0..7 {
    b[i] = exp.f32(src[i])
  }
  for i in 0..7 {
    a[i] = neg.f32(b[i])
  }
  for i in 0..7 {
    for j in 0..3 {
      out[i] = add.f32(out[i], mul.f32(a[i], w[i, j]))
    }
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Virtual);
  EXPECT_EQ(mode(p, "b"), MemMode::Materialized);
  EXPECT_THAT(decision(p, "b").reason, HasSubstr("read 4 times per cell at statement 3"));
}

TEST(Placement, CountsReadsOfAStoredNodesDefinitionOnceAtItsStatement) {
  // a is stored (expensive, two sites); its own read of b is then one site, so b is recomputed.
  auto p = place_text(
      routine_text("  node b : f32[8] materialized\n  node a : f32[8] materialized", R"(  for i in 0..7 {
    b[i] = exp.f32(src[i])
  }
  for i in 0..7 {
    a[i] = exp.f32(b[i])
  }
  for i in 0..7 {
    out[i] = a[i]
  }
  for i in 0..7 {
    out[i] = add.f32(out[i], a[i])
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_EQ(mode(p, "b"), MemMode::Virtual);
  EXPECT_THAT(decision(p, "b").reason, HasSubstr("(statement 2)"));
}

// ---- shapes that are never replayed ----------------------------------------------------------

struct StoredCase {
  const char* name;
  const char* body;
  const char* reason;
};

void PrintTo(const StoredCase& c, std::ostream* os) {
  *os << c.name;
}

class PlacementStores : public ::testing::TestWithParam<StoredCase> {};

TEST_P(PlacementStores, WithTheReason) {
  auto p = place_text(routine_text("  node a : f32[8] materialized", GetParam().body));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_THAT(decision(p, "a").reason, HasSubstr(GetParam().reason));
}

constexpr const char* kReadA = R"(
  for i in 0..7 {
    out[i] = a[i]
  })";

const StoredCase kStoredCases[] = {
    {"SeveralWriters", R"(  for i in 0..7 {
    a[i] = src[i]
  }
  a[0] = 1:f32
  a[1] = 2:f32
  for i in 0..7 {
    out[i] = a[i]
  })",
     "written by 3 statements (statements 1, 2, 3): not one definition"},
    {"WriteInsideIf", R"(  for i in 0..7 {
    if lt.f32(src[i], 0:f32) {
      a[i] = src[i]
    }
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "written inside an 'if' (statement 1): a conditional write is not a definition"},
    {"WriteInsideScan", R"(  scan i in 0..7 forward carry(p -> n : f32 = 0:f32) {
    n := add.f32(p, src[i])
    a[i] = n
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "written inside a scan body (statement 1): a recurrence is never replayed"},
    {"NestWithALocal", R"(  for i in 0..7 {
    local v : f32
    v := src[i]
    a[i] = v
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "written by statement 1, which is not a plain nest"},
    {"PartialCoverage", R"(  for i in 0..5 {
    a[i] = src[i]
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "statement 1 does not write every cell once: its axis 0 is not one full loop over 0..7"},
    {"WriteRepeatedByAnOuterLoop", R"(  for j in 0..3 {
    for i in 0..7 {
      a[i] = w[i, j]
    }
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "statement 1 writes each cell again on every iteration of 'for j'"},
    {"ReadsItself", R"(  for i in 0..7 {
    a[i] = mul.f32(a[i], src[i])
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "statement 1 reads the node it writes"},
    {"AccumulatesWithoutAFill", R"(  for i in 0..7 {
    for j in 0..3 {
      a[i] = add.f32(a[i], w[i, j])
    }
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "statement 1 accumulates into it without a preceding fill"},
    {"ReadBetweenFillAndAccumulation", R"(  zero a
  for i in 0..7 {
    out[i] = a[i]
  }
  for i in 0..7 {
    for j in 0..3 {
      a[i] = add.f32(a[i], w[i, j])
    }
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "read at statement 2, before its definition is complete (statement 3)"},
    {"ReadBeforeItsDefinition", R"(  for i in 0..7 {
    out[i] = a[i]
  }
  for i in 0..7 {
    a[i] = src[i]
  })",
     "read at statement 1, before its definition is complete (statement 2)"},
    {"FillThatIsNotConstant", R"(  for i in 0..7 {
    a[i] = src[i]
  }
  for i in 0..7 {
    for j in 0..3 {
      a[i] = add.f32(a[i], w[i, j])
    }
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "statement 1 is not a whole-node fill"},
    {"SecondWriterNotAnAccumulation", R"(  zero a
  for i in 0..7 {
    for j in 0..3 {
      a[i] = mul.f32(a[i], w[i, j])
    }
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "statement 2 is not an accumulation"},
    {"AccumulationAtOtherIndices", R"(  zero a
  for i in 0..6 {
    for j in 0..3 {
      a[i + 1] = add.f32(a[i], w[i, j])
    }
  }
  for i in 0..7 {
    out[i] = a[i]
  })",
     "statement 2 is not an accumulation"},
    {"NeverWritten", R"(  for i in 0..7 {
    out[i] = a[i]
  })",
     "never written (its cells stay 0)"},
    {"NeverRead", R"(  for i in 0..7 {
    a[i] = src[i]
  })",
     "never read: dead code stays stored"},
    {"ReadOnlyUnderADeadLoop", R"(  for i in 0..7 {
    a[i] = src[i]
  }
  for i in 7..0 {
    out[i] = a[i]
  })",
     "never read"},
    {"DefinitionReadsALocal", R"(  local c : f32
  c := 2:f32
  for i in 0..7 {
    a[i] = mul.f32(src[i], c)
  }
  c := 3:f32
  for i in 0..7 {
    out[i] = a[i]
  })",
     "its definition (statement 3) reads scalar local 'c'"},
};

INSTANTIATE_TEST_SUITE_P(Placement, PlacementStores, ::testing::ValuesIn(kStoredCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(Placement, StoresANodeWhoseInputIsOverwrittenBeforeItsRead) {
  // Replaying a at statement 3 would read the new b.
  auto p = place_text(
      routine_text("  node b : f32[8] requested\n  node a : f32[8] materialized", R"(  for i in 0..7 {
    b[i] = src[i]
  }
  for i in 0..7 {
    a[i] = exp.f32(b[i])
  }
  for i in 0..7 {
    b[i] = 0:f32
  }
  for i in 0..7 {
    out[i] = a[i]
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_EQ(decision(p, "a").reason,
            "its definition reads 'b', which statement 3 writes before a read at statement 4");
}

TEST(Placement, ReconsidersANodeMarkedVirtualThatCannotBe) {
  auto p = place_text(routine_text("  node a : f32[8] virtual", R"(  a[0] = 1:f32
  a[1] = 1:f32
  for i in 0..7 {
    out[i] = a[i]
  })"));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
}

// ---- reductions and the recompute cap ---------------------------------------------------------

// a[i] = sum over j in 0..J-1 (and k in 0..K-1) of w; read at two sites.
std::string reduction_text(int j_extent, int k_extent, bool constant_fill) {
  std::string fill = constant_fill ? "  for i in 0..7 {\n    a[i] = -inf:f32\n  }" : "  zero a";
  return fmt::format(R"(routine t {{
  node w : f32[8, {0}, {1}] materialized input
  node out : f32[8] materialized output
  node a : f32[8] materialized
{2}
  for i in 0..7 {{
    for j in 0..{3} {{
      for k in 0..{4} {{
        a[i] = {5}.f32(a[i], w[i, j, k])
      }}
    }}
  }}
  for i in 0..7 {{
    out[i] = a[i]
  }}
  for i in 0..7 {{
    for j in 0..3 {{
      out[i] = add.f32(out[i], a[i])
    }}
  }}
}}
)",
                     j_extent, k_extent, fill, j_extent - 1, k_extent - 1, constant_fill ? "max" : "add");
}

TEST(Placement, RecomputesAReductionWithinTheCapAtAnyNumberOfSites) {
  auto p = place_text(reduction_text(4, 4, false));
  EXPECT_EQ(mode(p, "a"), MemMode::Virtual);
  EXPECT_EQ(
      decision(p, "a").reason,
      "reduction over 16 iterations (cap 16): recomputed at each of its 2 read sites (statements 3, 4)");
}

TEST(Placement, StoresAReductionOverTheCap) {
  auto p = place_text(reduction_text(17, 1, false));
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_EQ(decision(p, "a").reason,
            "reduction over 17 iterations exceeds virtualize_max_inline_reduction = 16");
  EXPECT_EQ(mode(place_text(reduction_text(17, 1, false), 17), "a"), MemMode::Virtual);
}

TEST(Placement, NegativeCapNeverRecomputesAReduction) {
  auto p = place_text(reduction_text(1, 1, false), -1);
  EXPECT_EQ(mode(p, "a"), MemMode::Materialized);
  EXPECT_THAT(decision(p, "a").reason, HasSubstr("recomputing reductions is disabled"));
  EXPECT_EQ(mode(place_text(reduction_text(1, 1, false), 0), "a"), MemMode::Materialized);
}

TEST(Placement, AcceptsAConstantFillNestAndAMaxAccumulation) {
  auto p = place_text(reduction_text(2, 3, true));
  EXPECT_EQ(mode(p, "a"), MemMode::Virtual);
  EXPECT_THAT(decision(p, "a").reason, HasSubstr("reduction over 6 iterations"));
}

// ---- attention --------------------------------------------------------------------------------

// Attention for one batch and head, seq query and key rows, head width d, value width 8, a causal
// mask; composed as raw lowering emits it, or rewritten by online softmax (scan for m and l, the
// value pass reading P once per (b, s, h, t) with its f-loop inside).
std::string attention_text(int seq, int d, bool rewritten) {
  int last = seq - 1;
  std::string rows = fmt::format("for b in 0..0 {{ for s in 0..{} {{ for h in 0..0 {{", last);
  std::string close3 = "}}}";
  std::string cell = fmt::format("{} for t in 0..{} {{", rows, last);
  std::string close4 = "}}}}";
  std::string out = fmt::format(R"(routine attention {{
  attr seq_q = {0}
  attr seq_k = {0}
  node q : f32[1, {0}, 1, {1}] materialized input
  node k : f32[1, {0}, 1, {1}] materialized input
  node v : f32[1, {0}, 1, 8] materialized input
  node S : f32[1, {0}, 1, {0}] materialized
  node x : f32[1, {0}, 1, {0}] materialized
  node m : f32[1, {0}, 1] materialized
  node n : f32[1, {0}, 1, {0}] materialized
  node e : f32[1, {0}, 1, {0}] materialized
  node l : f32[1, {0}, 1] materialized
  node P : f32[1, {0}, 1, {0}] materialized
  node O : f32[1, {0}, 1, 8] materialized output
  zero S
  {2} for c in 0..{3} {{
    S[b, s, h, t] = add.f32(S[b, s, h, t], mul.f32(q[b, s, h, c], k[b, t, h, c]))
  }} {4}
  {2} x[b, s, h, t] = where.f32(lt.i32(idx.i32(s), idx.i32(t)), -inf:f32, mul.f32(S[b, s, h, t], 0.125:f32)) {4}
)",
                                seq, d, cell, d - 1, close4);
  if (!rewritten) {
    out += fmt::format(R"(  {0} m[b, s, h] = -inf:f32 {1}
  {2} m[b, s, h] = max.f32(m[b, s, h], x[b, s, h, t]) {3}
)",
                       rows, close3, cell, close4);
  } else {
    out += fmt::format(R"(  {0}
    scan t in 0..{1} forward carry(mp -> mn : f32 = -inf:f32, lp -> ln : f32 = 0:f32) {{
      local xs : f32
      xs := x[b, s, h, t]
      mn := max.f32(mp, xs)
      ln := add.f32(mul.f32(lp, exp.f32(sub.f32(mp, mn))), exp.f32(sub.f32(xs, mn)))
      m[b, s, h] = mn
      l[b, s, h] = ln
    }}
  {2}
)",
                       rows, last, close3);
  }
  out += fmt::format(R"(  {0} n[b, s, h, t] = sub.f32(x[b, s, h, t], m[b, s, h]) {1}
  {0} e[b, s, h, t] = exp.f32(n[b, s, h, t]) {1}
)",
                     cell, close4);
  if (!rewritten)
    out += fmt::format("  zero l\n  {} l[b, s, h] = add.f32(l[b, s, h], e[b, s, h, t]) {}\n", cell, close4);
  out += fmt::format("  {} P[b, s, h, t] = div.f32(e[b, s, h, t], l[b, s, h]) {}\n  zero O\n", cell, close4);
  if (!rewritten)
    out += fmt::format(
        "  {} for f in 0..7 {{ O[b, s, h, f] = add.f32(O[b, s, h, f], mul.f32(P[b, s, h, t], v[b, t, h, f])) "
        "}} "
        "{}\n",
        cell, close4);
  else
    out += fmt::format(R"(  {}
    local p : f32
    p := P[b, s, h, t]
    for f in 0..7 {{
      O[b, s, h, f] = add.f32(O[b, s, h, f], mul.f32(p, v[b, t, h, f]))
    }}
  {}
)",
                       cell, close4);
  return out + "}\n";
}

std::string modes(const PlacementResult& p) {
  std::string s;
  for (const char* n : {"S", "x", "m", "n", "e", "l", "P"})
    s += fmt::format("{}={} ", n, p.routine.find_node(n)->mode == MemMode::Virtual ? "V" : "M");
  return s;
}

TEST(PlacementAttention, ComposedKeepsTwoSquareBuffersWithinTheCap) {
  auto p = place_text(attention_text(32, 8, false));
  // S is replayed inside x, which is cheap and needed by the max and (through n) by e.
  EXPECT_EQ(modes(p), "S=V x=V m=M n=V e=M l=M P=M ");
  EXPECT_THAT(decision(p, "S").reason,
              HasSubstr("reduction over 8 iterations (cap 16): recomputed at each of its 2"));
  EXPECT_THAT(decision(p, "x").reason, HasSubstr("trivially cheap"));
  EXPECT_THAT(decision(p, "e").reason, HasSubstr("read at 2 sites"));
  EXPECT_THAT(decision(p, "P").reason, HasSubstr("read 8 times per cell"));
  EXPECT_EQ(memory_report(p.routine).square_buffers, 2);
}

TEST(PlacementAttention, ComposedStoresTheScoresOverTheCap) {
  auto p = place_text(attention_text(32, 24, false));
  EXPECT_EQ(modes(p), "S=M x=V m=M n=V e=M l=M P=M ");
  EXPECT_EQ(decision(p, "S").reason,
            "reduction over 24 iterations exceeds virtualize_max_inline_reduction = 16");
  EXPECT_EQ(memory_report(p.routine).square_buffers, 3);
}

TEST(PlacementAttention, RewrittenStoresNoSquareBufferWithinTheCap) {
  auto p = place_text(attention_text(32, 8, true));
  EXPECT_EQ(modes(p), "S=V x=V m=M n=V e=V l=M P=V ");
  EXPECT_THAT(decision(p, "m").reason, HasSubstr("written inside a scan body"));
  EXPECT_THAT(decision(p, "P").reason, HasSubstr("read once per cell at one site"));
  EXPECT_THAT(decision(p, "S").reason, HasSubstr("recomputed at each of its 2 read sites"));
  EXPECT_EQ(memory_report(p.routine).square_buffers, 0);
}

TEST(PlacementAttention, RewrittenStoresOnlyTheScoresOverTheCap) {
  auto p = place_text(attention_text(32, 24, true));
  EXPECT_EQ(modes(p), "S=M x=V m=M n=V e=V l=M P=V ");
  auto report = memory_report(p.routine);
  EXPECT_EQ(report.square_buffers, 1);
  // Raising the cap to the head width recomputes the scores too.
  EXPECT_EQ(memory_report(place_text(attention_text(32, 24, true), 24).routine).square_buffers, 0);
}

// ---- determinism, idempotence, robustness -----------------------------------------------------

TEST(Placement, IsDeterministicAndIdempotent) {
  Routine r = parse(attention_text(32, 8, false));
  auto a = place(r, {});
  auto b = place(r, {});
  auto again = place(a.routine, {});
  EXPECT_TRUE(equal(a.routine, b.routine));
  EXPECT_TRUE(equal(a.routine, again.routine));
  for (std::size_t i = 0; i < a.decisions.size(); ++i)
    EXPECT_EQ(a.decisions[i].reason, again.decisions[i].reason);
  // Only modes change.
  Routine stripped = a.routine;
  for (std::size_t i = 0; i < r.nodes.size(); ++i) stripped.nodes[i].mode = r.nodes[i].mode;
  EXPECT_TRUE(equal(stripped, r));
}

RC_GTEST_PROP(PlacementProperty, ChangesOnlyCandidateModesAndIsIdempotent, ()) {
  Routine r = *fuzz::gen_routine();
  for (std::int64_t cap : {-1, 0, 16}) {
    auto p = place(r, PlacementConfig{cap});
    RC_ASSERT(p.decisions.size() == r.nodes.size());
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
      const Node& before = r.nodes[i];
      const Node& after = p.routine.nodes[i];
      bool fixed = before.is_input || before.is_output || before.mode == MemMode::Requested ||
                   before.mode == MemMode::Local;
      if (fixed)
        RC_ASSERT(after.mode == before.mode);
      else
        RC_ASSERT(after.mode == MemMode::Virtual || after.mode == MemMode::Materialized);
    }
    RC_ASSERT(equal(place(p.routine, PlacementConfig{cap}).routine, p.routine));
  }
}

}  // namespace
}  // namespace fp
