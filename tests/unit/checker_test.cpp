// The well-formedness checker (core/checker.h): one test per rule, each asserting the message and
// where it points, plus properties over random well-formed routines. Routines the parser accepts
// are written as text; what the parser already refuses (unknown locals in reads, bad node
// declarations) is built in memory, which also covers the path-style location of such routines.

#include "core/checker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <chrono>

#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "fuzz/random_routine.h"

namespace fp {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<Diagnostic> check_text(std::string_view text) {
  return check_routine(parse_routine(text, "t.fp"));
}

// The single diagnostic of `diags` (fails the test when there is not exactly one).
Diagnostic single(const std::vector<Diagnostic>& diags) {
  EXPECT_EQ(diags.size(), 1u) << (diags.size() > 1 ? diags[1].message : std::string("none"));
  return diags.empty() ? Diagnostic{} : diags.front();
}

Node node(std::string name, std::vector<std::int64_t> dims, Prec p = Prec::F32) {
  return make_node(std::move(name), std::move(dims), p);
}

Routine routine(std::vector<Node> nodes, std::vector<StmtP> body) {
  Routine r;
  r.name = "t";
  r.nodes = std::move(nodes);
  r.body = seq(std::move(body));
  return r;
}

Index I(const std::string& s) {
  return Index::iter(s);
}
Index K(std::int64_t k) {
  return Index::fixed(k);
}
ExprP f32(double v) {
  return constant(v, Prec::F32);
}

// A well-formed routine using every construct: a reduction, a guarded tail, a scan with locals.
constexpr std::string_view kGood = R"(routine good {
  node s : f32[2, 10] materialized input
  node m : f32[2] materialized output
  node y : f32[10] materialized output
  for tb in 0..2 {
    for j in 0..3 {
      if lt.i32(idx.i32(4*tb + j), 10:i32) {
        y[4*tb + j] = add.f32(s[0, j + 4*tb], 1:f32)
      }
    }
  }
  for b in 0..1 {
    scan t in 0..9 forward carry(mp -> mn : f32 = -inf:f32, lp -> ln : f32 = 0:f32) {
      local xs : f32
      xs := s[b, t]
      mn := max.f32(mp, xs)
      ln := add.f32(mul.f32(lp, exp.f32(sub.f32(mp, mn))), exp.f32(sub.f32(xs, mn)))
      m[b] = mn
    }
  }
  for dead in 5..4 {
    y[dead] = 0:f32
  }
}
)";

TEST(Checker, AcceptsAWellFormedRoutine) {
  EXPECT_THAT(check_text(kGood), IsEmpty());
}

// ---- nodes ------------------------------------------------------------------------------------

TEST(Checker, RejectsADuplicateNodeName) {
  Routine r = routine({node("x", {2}), node("x", {3})}, {});
  Diagnostic d = single(check_routine(r));
  EXPECT_EQ(d.message, "in node x: expected a unique node name, found 'x' declared twice");
}

TEST(Checker, RejectsAnInvalidNodeName) {
  Routine r = routine({node("1x", {2}), node("scan", {2})}, {});
  auto diags = check_routine(r);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_THAT(diags[0].message,
              HasSubstr("expected a node name (an identifier that is not a keyword), found '1x'"));
  EXPECT_THAT(diags[1].message, HasSubstr("found 'scan'"));
}

TEST(Checker, RejectsAnExtentBelowOneAndARankZeroNode) {
  auto diags = check_routine(routine({node("x", {2, 0}), node("y", {})}, {}));
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_THAT(diags[0].message, HasSubstr("expected every extent of node 'x' to be >= 1, found 0 at axis 1"));
  EXPECT_THAT(diags[1].message, HasSubstr("expected node 'y' to have at least one axis"));
}

TEST(Checker, RejectsACellCountThatWouldOverflow) {
  // 2^40 * 2^40 overflows int64: the count must be refused, not wrapped into something small.
  std::int64_t big = std::int64_t{1} << 40;
  Diagnostic d = single(check_routine(routine({node("x", {big, big, 4})}, {})));
  EXPECT_THAT(d.message, HasSubstr("expected node 'x' to have at most 2^40 cells"));
  EXPECT_THAT(check_routine(routine({node("x", {big})}, {})), IsEmpty());
}

TEST(Checker, RejectsAccessesToUndeclaredNodes) {
  Routine r =
      routine({node("x", {2})},
              {zero("nope"), for_loop("i", 0, 1, {set("gone", {I("i")}, get("x", {I("i")}, Prec::F32))}),
               set("x", {K(0)}, get("ghost", {K(0)}, Prec::F32))});
  auto diags = check_routine(r);
  ASSERT_EQ(diags.size(), 3u);
  EXPECT_EQ(diags[0].message, "in zero nope: expected a declared node, found 'nope'");
  EXPECT_EQ(diags[1].message, "in 'for i' > set gone: expected a declared node, found 'gone'");
  EXPECT_EQ(diags[2].message, "in set x: expected a declared node, found 'ghost'");
}

TEST(Checker, RejectsAnIndexCountDifferentFromTheRank) {
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[2, 3] materialized
  x[0] = 1:f32
}
)"));
  EXPECT_EQ(d.message, "expected 2 indices for node 'x' (rank 2), found 1");
  EXPECT_EQ(d.loc.line, 3);
}

TEST(Checker, RejectsAReadAtAnotherPrecisionThanTheNode) {
  Routine r =
      routine({node("x", {2}), node("y", {2}, Prec::F16)}, {set("x", {K(0)}, get("y", {K(1)}, Prec::F32))});
  EXPECT_EQ(single(check_routine(r)).message,
            "in set x: expected the read of 'y' at f16 (the node's precision), found f32");
}

// ---- symbols and loops ------------------------------------------------------------------------

TEST(Checker, RejectsAnUnboundIndexSymbol) {
  auto diags = check_text(R"(routine t {
  node x : f32[4] materialized
  for i in 0..3 {
    x[i] = idx.f32(k)
  }
}
)");
  EXPECT_EQ(single(diags).message,
            "expected index symbol 'k' bound by an enclosing for or scan, found it unbound");
}

TEST(Checker, RejectsAnUnboundSymbolInAStoreIndex) {
  auto diags = check_text(R"(routine t {
  node x : f32[4] materialized
  for i in 0..3 {
    x[j] = 0:f32
  }
}
)");
  Diagnostic d = single(diags);
  EXPECT_THAT(d.message, HasSubstr("index symbol 'j'"));
  EXPECT_EQ(d.loc.line, 4);
}

TEST(Checker, RejectsALoopReusingAnEnclosingLoopsSymbol) {
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[4] materialized
  for i in 0..3 {
    scan i in 0..3 forward carry(a -> b : f32 = 0:f32) {
      b := a
    }
  }
}
)"));
  EXPECT_EQ(d.message, "expected a loop symbol not bound by an enclosing loop, found 'i' already bound");
  EXPECT_EQ(d.loc.line, 4);
}

TEST(Checker, AcceptsADeadForButNotAnEmptyScan) {
  EXPECT_THAT(check_text(R"(routine t {
  node x : f32[4] materialized
  for i in 3..0 {
    x[i] = 0:f32
  }
}
)"),
              IsEmpty());
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[4] materialized
  scan t in 3..2 forward carry(a -> b : f32 = 0:f32) {
    b := a
  }
}
)"));
  EXPECT_EQ(d.message,
            "expected a non-empty scan range, found 3..2 (a producer with no iterations emits noop)");
}

// ---- bounds -----------------------------------------------------------------------------------

TEST(Checker, RejectsAnIndexPastTheUpperBound) {
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[4] materialized
  node y : f32[4] materialized
  for i in 0..3 {
    y[i] = x[i + 1]
  }
}
)"));
  EXPECT_EQ(
      d.message,
      "expected index 0 of 'x' within 0..3 (extent 4) on every iteration, found i + 1 ranging over 1..4");
  EXPECT_EQ(d.loc.line, 5);
}

TEST(Checker, RejectsANegativeIndexFromANegativeCoefficient) {
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[4] materialized
  for i in 0..3 {
    x[-i + 2] = 0:f32
  }
}
)"));
  EXPECT_THAT(d.message, HasSubstr("found -i + 2 ranging over -1..2"));
}

TEST(Checker, AcceptsAReversedIndexExactlyInBounds) {
  EXPECT_THAT(check_text(R"(routine t {
  node x : f32[4] materialized
  for i in 0..3 {
    for j in 1..2 {
      x[-i + 3] = x[2*j - 2]
    }
  }
}
)"),
              IsEmpty());
}

TEST(Checker, AcceptsAGuardedTailAndRejectsAWrongGuard) {
  // 3 blocks of 4 cover 0..11; the guard keeps 4*tb + j below 10.
  constexpr std::string_view kTail = R"(routine t {
  node x : f32[10] materialized
  for tb in 0..2 {
    for j in 0..3 {
      if lt.i32(idx.i32(4*tb + j), LIMIT:i32) {
        x[j + 4*tb] = x[4*tb + j - 1 + 1]
      }
    }
  }
}
)";
  auto with = [&](const char* limit) {
    std::string text(kTail);
    text.replace(text.find("LIMIT"), 5, limit);
    return check_text(text);
  };
  EXPECT_THAT(with("10"), IsEmpty());
  auto diags = with("11");
  ASSERT_EQ(diags.size(), 2u);  // the write and the read both reach 10
  EXPECT_THAT(diags[0].message, HasSubstr("ranging over 0..10"));
}

TEST(Checker, UsesALowerBoundGuardAndShiftsGuardsByConstantOffsets) {
  // 1 < i gives i >= 2, so i - 2 >= 0; with 0 < i, i - 2 can be -1.
  constexpr std::string_view kLower = R"(routine t {
  node x : f32[8] materialized
  for i in 0..9 {
    if lt.f32(C:f32, idx.f32(i)) {
      x[i - 2] = 0:f32
    }
  }
}
)";
  auto with = [&](const char* c) {
    std::string text(kLower);
    text.replace(text.find("C:"), 1, c);
    return check_text(text);
  };
  EXPECT_THAT(with("1"), IsEmpty());
  EXPECT_THAT(single(with("0")).message, HasSubstr("found i - 2 ranging over -1..7"));
}

TEST(Checker, AccumulatesNestedGuards) {
  // Each guard bounds one side; only together do they keep i - 2 inside 0..7.
  EXPECT_THAT(check_text(R"(routine t {
  node x : f32[8] materialized
  for i in 0..19 {
    if lt.i32(idx.i32(i), 10:i32) {
      if lt.i32(1:i32, idx.i32(i)) {
        x[i - 2] = 0:f32
      }
    }
  }
}
)"),
              IsEmpty());
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[8] materialized
  for i in 0..19 {
    if lt.i32(idx.i32(i), 10:i32) {
      x[i - 2] = 0:f32
    }
  }
}
)"));
  EXPECT_THAT(d.message, HasSubstr("ranging over -2..7"));
}

TEST(Checker, DoesNotTrustAGuardThatRoundingCouldBreak) {
  // At bf16, integers above 256 are not all representable: idx.bf16(i) < 300 says nothing exact.
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[300] materialized
  for i in 0..999 {
    if lt.bf16(idx.bf16(i), 300:bf16) {
      x[i] = 0:f32
    }
  }
}
)"));
  EXPECT_THAT(d.message, HasSubstr("ranging over 0..999"));
}

TEST(Checker, SkipsBoundsInsideADeadLoopAndUnderAnImpossibleGuard) {
  EXPECT_THAT(check_text(R"(routine t {
  node x : f32[4] materialized
  for i in 0..3 {
    for never in 1..0 {
      x[i + 100] = 0:f32
    }
    if lt.i32(idx.i32(i), 0:i32) {
      x[i - 50] = 0:f32
    }
  }
}
)"),
              IsEmpty());
}

TEST(Checker, ChecksHugeExtentsWithoutEnumeratingThem) {
  Routine r = routine({node("x", {std::int64_t{1} << 39})},
                      {for_loop("i", 0, (std::int64_t{1} << 39) - 1,
                                {for_loop("j", 0, 999999, {set("x", {I("i")}, f32(1))})}),
                       for_loop("k", 0, std::int64_t{1} << 39, {set("x", {I("k")}, f32(1))})});
  auto start = std::chrono::steady_clock::now();
  Diagnostic d = single(check_routine(r));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_THAT(d.message, HasSubstr("ranging over 0..549755813888"));
  EXPECT_EQ(d.where, "'for k' > set x");
}

// ---- locals -----------------------------------------------------------------------------------

TEST(Checker, RejectsAnUndeclaredLocalAndAReadAtTheWrongPrecision) {
  Routine r = routine({node("x", {1})}, {declare_local("a", Prec::F32), set_local("b", f32(1)),
                                         set("x", {K(0)}, get_local("a", Prec::F64))});
  auto diags = check_routine(r);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message,
            "in b :=: expected a local declared before use in an enclosing scope, found 'b'");
  EXPECT_EQ(diags[1].message,
            "in set x: expected the read of local 'a' at f32 (its declared precision), found f64");
}

TEST(Checker, ScopesALocalToTheRestOfItsStatementList) {
  Routine r =
      routine({node("x", {2})}, {for_loop("i", 0, 1, {declare_local("a", Prec::F32), set_local("a", f32(2))}),
                                 set("x", {K(0)}, get_local("a", Prec::F32))});
  EXPECT_EQ(single(check_routine(r)).message,
            "in set x: expected a local declared before use in an enclosing scope, found 'a'");
  Routine before = routine({node("x", {2})}, {set_local("a", f32(2)), declare_local("a", Prec::F32)});
  EXPECT_THAT(single(check_routine(before)).message, HasSubstr("found 'a'"));
}

TEST(Checker, TreatsANestedSeqAsPartOfItsEnclosingList) {
  // The printer writes a seq's statements inline, so the checker must judge them as if inline: a
  // local declared in a seq stays visible, and a next written in a seq is top-level.
  Routine r =
      routine({node("x", {1})},
              {scan_loop("t", 0, 1, ScanDir::Forward, {Carried{"a", "b", Prec::F32, f32(0)}},
                         {seq({declare_local("v", Prec::F32), set_local("b", get_local("a", Prec::F32))}),
                          set_local("v", get_local("b", Prec::F32))})});
  EXPECT_THAT(check_routine(r), IsEmpty());
  Routine twice =
      routine({node("x", {1})}, {declare_local("v", Prec::F32), seq({declare_local("v", Prec::F32)})});
  EXPECT_EQ(single(check_routine(twice)).message,
            "in local v: expected a new local name, found 'v' already declared in this scope");
}

TEST(Checker, RejectsARedeclarationInTheSameScopeButAllowsAnInnerOne) {
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[1] materialized
  local a : f32
  for i in 0..0 {
    local a : f64
  }
  local a : f32
}
)"));
  EXPECT_EQ(d.message, "expected a new local name, found 'a' already declared in this scope");
  EXPECT_EQ(d.loc.line, 7);
}

TEST(Checker, RejectsALocalNamedLikeANode) {
  Diagnostic d = single(check_text(R"(routine t {
  node x : f32[1] materialized
  local x : f32
}
)"));
  EXPECT_EQ(d.message, "expected a local name distinct from node names, found 'x', a node");
}

// ---- precision --------------------------------------------------------------------------------

TEST(Checker, RejectsFloatOnlyOperationsAtI32) {
  auto diags = check_text(R"(routine t {
  node x : i32[1] materialized
  x[0] = exp.i32(sqrt.i32(fma.i32(1:i32, 2:i32, 3:i32)))
}
)");
  ASSERT_EQ(diags.size(), 3u);
  EXPECT_EQ(diags[0].message, "expected a float precision for exp, found i32");
  EXPECT_EQ(diags[1].message, "expected a float precision for sqrt, found i32");
  EXPECT_EQ(diags[2].message, "expected a float precision for fma, found i32");
  EXPECT_EQ(diags[2].loc.col, 27);
}

TEST(Checker, AcceptsComparisonsAndWhereAtAnyPrecision) {
  EXPECT_THAT(check_text(R"(routine t {
  node x : i32[1] materialized
  node y : bf16[1] materialized
  x[0] = where.i32(eq.i32(1:i32, 2:i32), lt.i32(3:i32, 4:i32), div.i32(7:i32, 0:i32))
  y[0] = where.bf16(lt.f16(1:f16, 2:f16), eq.bf16(1:bf16, 1:bf16), 0:bf16)
}
)"),
              IsEmpty());
}

TEST(Checker, RejectsNonIntegralAndOutOfRangeI32Constants) {
  Routine r = routine(
      {node("x", {1}, Prec::I32)},
      {set("x", {K(0)},
           binary(BinOp::Add, constant(1.5, Prec::I32), constant(4294967296.0, Prec::I32), Prec::I32))});
  auto diags = check_routine(r);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message,
            "in set x: expected an integral i32 constant in [-2147483648, 2147483647], found 1.5");
  EXPECT_THAT(diags[1].message, HasSubstr("found 4294967296"));
}

TEST(Checker, RejectsAnOperandCountThatDoesNotMatchTheOperation) {
  Expr bad;
  bad.kind = ExprKind::Binary;
  bad.op = static_cast<std::uint8_t>(BinOp::Add);
  bad.args = {f32(1)};
  Expr worse;
  worse.kind = ExprKind::Ternary;
  worse.op = 7;
  Routine r = routine({node("x", {1})}, {set("x", {K(0)}, std::make_shared<const Expr>(bad)),
                                         set("x", {K(0)}, std::make_shared<const Expr>(worse))});
  auto diags = check_routine(r);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message, "in set x: expected 2 operands for binary 'add', found 1");
  EXPECT_EQ(diags[1].message, "in set x: expected a ternary operator, found code 7");
}

TEST(Checker, RejectsAMissingExpressionWithoutCrashing) {
  Routine r = routine({node("x", {1})}, {set("x", {K(0)}, nullptr), if_(nullptr, {})});
  auto diags = check_routine(r);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message, "in set x: expected an expression as value, found none");
  EXPECT_EQ(diags[1].message, "in 'if': expected an expression as condition, found none");
}

// ---- the scan contract ------------------------------------------------------------------------

// A scan over t with carried (mp -> mn, lp -> ln); BODY replaces the body's statements.
std::string scan_routine(std::string_view body,
                         std::string_view carry = "mp -> mn : f32 = -inf:f32, lp -> ln : f32 = 0:f32") {
  return fmt::format(R"(routine t {{
  node s : f32[2, 8] materialized input
  node m : f32[2] materialized output
  for b in 0..1 {{
    local seen : f32
    scan t in 0..7 forward carry({}) {{
{}
    }}
  }}
}}
)",
                     carry, body);
}

constexpr std::string_view kMaxWrite = "      mn := max.f32(mp, s[b, t])";
constexpr std::string_view kSumWrite = "      ln := add.f32(lp, exp.f32(sub.f32(s[b, t], mn)))";
constexpr std::string_view kStore = "      m[b] = mn";

std::string lines(std::initializer_list<std::string_view> ls) {
  std::string out;
  for (auto l : ls) {
    if (!out.empty()) out += "\n";
    out += l;
  }
  return out;
}

TEST(Checker, AcceptsTheScanTemplate) {
  EXPECT_THAT(check_text(scan_routine(lines({kMaxWrite, kSumWrite, kStore}))), IsEmpty());
}

TEST(Checker, ScanRejectsCarriedNamesThatAreNotPairwiseDistinct) {
  auto diags = check_text(scan_routine("      mp := mp", "mp -> mp : f32 = 0:f32"));
  ASSERT_FALSE(diags.empty());
  EXPECT_EQ(diags[0].message, "expected carried local names pairwise distinct, found 'mp' twice");
  EXPECT_EQ(diags[0].loc.line, 6);
}

TEST(Checker, ScanRejectsACarriedNameThatShadowsAVisibleLocal) {
  Diagnostic d = single(check_text(scan_routine("      mn := seen", "seen -> mn : f32 = 0:f32")));
  EXPECT_EQ(d.message,
            "expected carried local 'seen' distinct from the locals visible at the scan, found a visible "
            "local 'seen'");
}

TEST(Checker, ScanRejectsACarriedNameThatIsANode) {
  Diagnostic d = single(check_text(scan_routine("      m := mp", "mp -> m : f32 = 0:f32")));
  EXPECT_EQ(d.message,
            "expected carried local 'm' distinct from node names (scan state never lives in a node), found "
            "node 'm'");
}

TEST(Checker, ScanRejectsANextWrittenTwice) {
  Diagnostic d = single(check_text(scan_routine(lines({kMaxWrite, kSumWrite, "      mn := mp", kStore}))));
  EXPECT_EQ(d.message, "expected carried 'mn' written exactly once in the scan body, found a second write");
  EXPECT_EQ(d.loc.line, 9);
}

TEST(Checker, ScanRejectsANextWrittenUnderAGuard) {
  Diagnostic d = single(check_text(scan_routine(
      lines({"      if lt.i32(idx.i32(t), 4:i32) {", "        mn := mp", "      }", "      ln := lp"}))));
  EXPECT_EQ(
      d.message,
      "expected carried 'mn' written by a top-level statement of the scan body, found a write inside 'if'");
  EXPECT_EQ(d.loc.line, 8);
}

TEST(Checker, ScanRejectsANextWrittenInANestedLoopOrScan) {
  auto diags = check_text(scan_routine(lines({"      for u in 0..0 {", "        mn := mp", "      }",
                                              "      scan w in 0..1 forward carry(a -> z : f32 = 0:f32) {",
                                              "        z := a", "        ln := lp", "      }"})));
  ASSERT_EQ(diags.size(), 2u);  // a misplaced write is not also reported as missing
  EXPECT_THAT(
      diags[0].message,
      HasSubstr("'mn' written by a top-level statement of the scan body, found a write inside 'for u'"));
  EXPECT_EQ(diags[0].loc.line, 8);
  EXPECT_THAT(
      diags[1].message,
      HasSubstr("'ln' written by a top-level statement of the scan body, found a write inside 'scan w'"));
}

TEST(Checker, ScanRejectsANextNeverWritten) {
  Diagnostic d = single(check_text(scan_routine(lines({kMaxWrite, kStore}))));
  EXPECT_EQ(d.message, "expected carried 'ln' written exactly once in the scan body, found no write");
  EXPECT_EQ(d.loc.line, 6);
}

TEST(Checker, ScanRejectsANextReadBeforeItsWrite) {
  auto diags = check_text(scan_routine(lines({kStore, kMaxWrite, "      ln := add.f32(ln, 1:f32)"})));
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message,
            "expected carried 'mn' read only after its write in the scan body, found a read before it");
  EXPECT_EQ(diags[0].loc.line, 7);
  EXPECT_THAT(diags[1].message, HasSubstr("carried 'ln' read only after its write"));
  EXPECT_EQ(diags[1].loc.line, 9);
}

TEST(Checker, ScanRejectsAWriteToPrev) {
  Diagnostic d = single(check_text(scan_routine(lines({kMaxWrite, kSumWrite, "      lp := mn"}))));
  EXPECT_EQ(d.message,
            "expected no write to carried 'lp' (it takes the value of its next after each iteration), found "
            "a write");
}

TEST(Checker, ScanRejectsAnInitReadingACarriedLocal) {
  // The parser scopes carried locals to the body, so this routine is built in memory.
  Routine r =
      routine({node("m", {1})}, {scan_loop("t", 0, 3, ScanDir::Forward,
                                           {Carried{"mp", "mn", Prec::F32, f32(0)},
                                            Carried{"lp", "ln", Prec::F32, get_local("mp", Prec::F32)}},
                                           {set_local("mn", get_local("mp", Prec::F32)),
                                            set_local("ln", get_local("lp", Prec::F32))})});
  EXPECT_EQ(single(check_routine(r)).message,
            "in 'scan t': expected the init of a carried local to read no carried local, found 'mp'");
}

TEST(Checker, ScanRejectsAnInitMentioningTheScanSymbol) {
  auto diags = check_text(
      scan_routine(lines({kMaxWrite, kSumWrite}), "mp -> mn : f32 = idx.f32(t), lp -> ln : f32 = s[b, t]"));
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message,
            "expected the init of a carried local not to mention scan symbol 't', found it");
  EXPECT_EQ(diags[0].loc.line, 6);
  EXPECT_EQ(diags[1].message, diags[0].message);
}

TEST(Checker, ScanRejectsAnInitReadingALocalOfItsBody) {
  Routine r = routine(
      {node("m", {1})},
      {scan_loop("t", 0, 3, ScanDir::Forward, {Carried{"mp", "mn", Prec::F32, get_local("xs", Prec::F32)}},
                 {declare_local("xs", Prec::F32), set_local("mn", get_local("xs", Prec::F32))})});
  EXPECT_EQ(single(check_routine(r)).message,
            "in 'scan t': expected a local declared before use in an enclosing scope, found 'xs'");
}

TEST(Checker, ScanRejectsCarriedLocalsUsedOutsideTheirBody) {
  Routine r = routine({node("m", {1})},
                      {scan_loop("t", 0, 3, ScanDir::Forward, {Carried{"mp", "mn", Prec::F32, f32(0)}},
                                 {set_local("mn", get_local("mp", Prec::F32))}),
                       set("m", {K(0)}, get_local("mn", Prec::F32)), set_local("mp", f32(1))});
  auto diags = check_routine(r);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message,
            "in set m: expected a local visible here, found 'mn', a carried local of 'scan t' usable only "
            "inside its body");
  EXPECT_THAT(diags[1].message, HasSubstr("found 'mp', a carried local of 'scan t'"));
}

TEST(Checker, ScanRejectsALocalShadowingACarriedOne) {
  Diagnostic d = single(check_text(scan_routine(
      lines({kMaxWrite, kSumWrite, "      for u in 0..0 {", "        local lp : f32", "      }"}))));
  EXPECT_EQ(d.message, "expected a local name distinct from the enclosing scan's carried locals, found 'lp'");
}

// ---- locations and the throwing entry point ---------------------------------------------------

TEST(Checker, NamesThePathOfAnInMemoryRoutine) {
  Routine r = routine(
      {node("s", {4})},
      {for_loop("t", 0, 3,
                {scan_loop("j", 0, 1, ScanDir::Forward, {Carried{"a", "b", Prec::F32, f32(0)}},
                           {set_local("b", get_local("a", Prec::F32)), set("s", {I("q")}, f32(0))})})});
  Diagnostic d = single(check_routine(r));
  EXPECT_EQ(d.where, "'for t' > 'scan j' > set s");
  EXPECT_EQ(d.message,
            "in 'for t' > 'scan j' > set s: expected index symbol 'q' bound by an enclosing for or scan, "
            "found it unbound");
}

TEST(Checker, ThrowsTheFirstDiagnosticLocated) {
  Routine parsed = parse_routine(R"(routine t {
  node x : f32[4] materialized
  for i in 0..3 {
    x[i] = exp.i32(1:i32)
  }
}
)",
                                 "attn.fp");
  try {
    check_routine_or_throw(parsed, "attn.fp");
    FAIL() << "no throw";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMalformed);
    EXPECT_EQ(e.line(), 4);
    EXPECT_EQ(e.col(), 12);
    EXPECT_STREQ(e.what(), "attn.fp:4:12: expected a float precision for exp, found i32");
  }
  EXPECT_NO_THROW(check_routine_or_throw(parse_routine(kGood, "g.fp"), "g.fp"));
}

TEST(Checker, ThrowsWithThePathForAnInMemoryRoutine) {
  Routine r = routine({node("x", {2})}, {zero("y")});
  try {
    check_routine_or_throw(r, "");
    FAIL() << "no throw";
  } catch (const UserError& e) {
    EXPECT_EQ(e.line(), 0);
    EXPECT_STREQ(e.what(), "in zero y: expected a declared node, found 'y'");
  }
}

TEST(Checker, ReportsEveryProblemInProgramOrder) {
  auto diags = check_text(R"(routine t {
  node x : f32[4] materialized
  scan t in 0..3 forward carry(a -> b : f32 = 0:f32) {
    x[t + 1] = 0:f32
  }
  x[9] = 0:f32
}
)");
  ASSERT_EQ(diags.size(), 3u);
  EXPECT_EQ(diags[0].loc.line, 3);  // b never written, reported at the scan
  EXPECT_EQ(diags[1].loc.line, 4);
  EXPECT_EQ(diags[2].loc.line, 6);
}

// ---- properties -------------------------------------------------------------------------------

RC_GTEST_PROP(CheckerProperty, AcceptsEveryGeneratedWellFormedRoutine, ()) {
  Routine r = *fuzz::gen_routine();
  auto diags = check_routine(r);
  if (!diags.empty()) RC_FAIL(diags.front().message);
}

RC_GTEST_PROP(CheckerProperty, RejectsAnAccessMovedPastItsNodesEnd, ()) {
  // Shifting one store past the last cell of its node must be caught, whatever surrounds it.
  Routine r = *fuzz::gen_routine();
  Node& n = r.nodes.front();
  std::vector<Index> past;
  for (auto d : n.dims) past.push_back(Index::fixed(d));
  std::vector<StmtP> body = r.body->body;
  body.push_back(set(n.name, past, constant(0.0, n.prec)));
  r.body = seq(body);
  auto diags = check_routine(r);
  RC_ASSERT(!diags.empty());
  RC_ASSERT(diags.back().where == "set " + n.name);
}

}  // namespace
}  // namespace fp
