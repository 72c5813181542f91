// The `.fp` text format: golden printing of every construct, the documentation's example,
// file headers, constants' exact round trip, canonical indices, source locations and scoping.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "flashproof/version.h"

namespace fp {
namespace {

using ::testing::HasSubstr;

// A routine that uses every statement kind, every expression kind and every op at least once.
Routine golden_routine() {
  Routine r;
  r.name = "golden";
  r.attrs = {{"seq_q", 2}, {"seq_k", 3}};
  r.nodes = {
      Node{"x", {2, 3}, Prec::F32, MemMode::Materialized, true, false, {}},
      Node{"w", {3}, Prec::BF16, MemMode::Requested, true, false, {}},
      Node{"y", {2}, Prec::F64, MemMode::Virtual, false, true, {}},
      Node{"c", {4}, Prec::I32, MemMode::Local, false, false, {}},
  };
  auto i = Index::iter("i"), j = Index::iter("j"), t = Index::iter("t");
  auto prod = binary(BinOp::Mul, get("x", {i, j}, Prec::F32), get("w", {j}, Prec::BF16), Prec::F32);
  auto accumulate = set("y", {i}, binary(BinOp::Add, get("y", {i}, Prec::F64), prod, Prec::F64));
  auto mp = get_local("mp", Prec::F32), lp = get_local("lp", Prec::F64);
  auto chain = unary(
      UnOp::Sqrt,
      unary(UnOp::Abs, unary(UnOp::Neg, unary(UnOp::Exp, constant(1e-300, Prec::F32), Prec::F32), Prec::F32),
            Prec::F32),
      Prec::F32);
  auto pow_nan = binary(BinOp::Pow, constant(NAN, Prec::F64), constant(5e-324, Prec::F64), Prec::F64);
  auto cond =
      binary(BinOp::Eq, embed_index(Index{{{2, "t"}}, -1}, Prec::I32), constant(7, Prec::I32), Prec::I32);
  auto lt_extremes =
      binary(BinOp::Lt, constant(-2147483648.0, Prec::I32), constant(2147483647.0, Prec::I32), Prec::I32);
  std::vector<StmtP> scan_body = {
      set_local("mn", binary(BinOp::Max, mp, chain, Prec::F32)),
      set_local("ln", ternary(TernOp::Fma, lp, constant(0.1, Prec::F64), pow_nan, Prec::F64)),
      set("c", {Index{{{-1, "t"}}, 3}},
          ternary(TernOp::Where, cond, lt_extremes, constant(-9, Prec::I32), Prec::I32)),
  };
  std::vector<Carried> carried = {
      Carried{"mp", "mn", Prec::F32, constant(-INFINITY, Prec::F32)},
      Carried{"lp", "ln", Prec::F64, constant(0.0, Prec::F64)},
  };
  r.body = seq({
      zero("y"),
      for_loop("i", 0, 1, {for_loop("j", 0, 2, {accumulate})}),
      declare_local("acc", Prec::F16),
      set_local("acc", unary(UnOp::Cast, constant(-0.0, Prec::F64), Prec::F16)),
      scan_loop("t", 0, 3, ScanDir::Backward, carried, scan_body),
      for_loop("k", 5, 4, {}),
      if_(binary(BinOp::Lt, get_local("acc", Prec::F16), constant(INFINITY, Prec::BF16), Prec::BF16),
          {comment("tab\there \"quoted\" back\\slash\nnewline \x01 \xc3\xa9"), noop()}),
  });
  return r;
}

constexpr const char* kGoldenText = R"(routine golden {
  attr seq_k = 3
  attr seq_q = 2
  node x : f32[2, 3] materialized input
  node w : bf16[3] requested input
  node y : f64[2] virtual output
  node c : i32[4] local
  zero y
  for i in 0..1 {
    for j in 0..2 {
      y[i] = add.f64(y[i], mul.f32(x[i, j], w[j]))
    }
  }
  local acc : f16
  acc := cast.f16(-0:f64)
  scan t in 0..3 backward carry(mp -> mn : f32 = -inf:f32, lp -> ln : f64 = 0:f64) {
    mn := max.f32(mp, sqrt.f32(abs.f32(neg.f32(exp.f32(1e-300:f32)))))
    ln := fma.f64(lp, 0.1:f64, pow.f64(nan:f64, 5e-324:f64))
    c[-t + 3] = where.i32(eq.i32(idx.i32(2*t - 1), 7:i32), lt.i32(-2147483648:i32, 2147483647:i32), -9:i32)
  }
  for k in 5..4 {
  }
  if lt.bf16(acc, inf:bf16) {
    comment "tab\there \"quoted\" back\\slash\nnewline \x01 é"
    noop
  }
}
)";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fenced block under "## Example" in docs/text-format.md.
std::string documentation_example() {
  std::string doc = read_text(std::string(FLASHPROOF_SOURCE_DIR) + "/docs/text-format.md");
  auto section = doc.find("## Example");
  EXPECT_NE(section, std::string::npos);
  auto begin = doc.find("```\n", section);
  EXPECT_NE(begin, std::string::npos);
  begin += 4;
  auto end = doc.find("\n```", begin);
  return doc.substr(begin, end - begin + 1);
}

std::uint64_t bits(double v) {
  return std::bit_cast<std::uint64_t>(v);
}

// The value of `v := <constant>` after a print/parse round trip through a whole routine.
double round_trip_constant(double v, Prec p) {
  Routine r;
  r.name = "k";
  r.nodes = {Node{"n", {1}, Prec::F64, MemMode::Materialized, false, true, {}}};
  r.body = seq({set("n", {Index::fixed(0)}, constant(v, p))});
  Routine back = parse_routine(print_routine(r), "k.fp");
  const Stmt& s = *back.body->body.at(0);
  EXPECT_EQ(s.value->kind, ExprKind::Const);
  EXPECT_EQ(s.value->prec, p);
  return s.value->value;
}

TEST(TextFormat, GoldenPrintCoversEveryConstruct) {
  Routine r = golden_routine();
  EXPECT_EQ(print_routine(r), kGoldenText);
  Routine back = parse_routine(kGoldenText, "golden.fp");
  EXPECT_TRUE(equal(back, r));
  EXPECT_EQ(print_routine(back), kGoldenText);
}

TEST(TextFormat, PrintsPiecesOnTheirOwn) {
  EXPECT_EQ(print_stmt(*noop(), 2), "    noop\n");
  EXPECT_EQ(print_stmt(*for_loop("i", 0, 0, {zero("y")}), 1), "  for i in 0..0 {\n    zero y\n  }\n");
  EXPECT_EQ(print_stmt(*seq({noop(), comment("")})), "noop\ncomment \"\"\n");
  EXPECT_EQ(print_expr(*ternary(TernOp::Where, get_local("c", Prec::I32), constant(1, Prec::F16),
                                embed_index(Index::fixed(-2), Prec::F32), Prec::F16)),
            "where.f16(c, 1:f16, idx.f32(-2))");
  EXPECT_EQ(print_expr(*get("q", {Index::fixed(0), Index{{{4, "tb"}, {1, "j"}}, -1}}, Prec::F32)),
            "q[0, 4*tb + j - 1]");
}

TEST(TextFormat, ParsesTheDocumentationExample) {
  std::string text = documentation_example();
  Routine r = parse_routine(text, "text-format.md");
  EXPECT_EQ(r.name, "attention_forward");
  EXPECT_EQ(r.attrs, (std::map<std::string, std::int64_t>{{"seq_q", 2}, {"seq_k", 3}}));
  ASSERT_EQ(r.nodes.size(), 5u);
  EXPECT_EQ(r.nodes[0].dims, (std::vector<std::int64_t>{1, 2, 1, 4}));
  EXPECT_TRUE(r.nodes[0].is_input);
  EXPECT_TRUE(r.nodes[4].is_output);
  ASSERT_EQ(r.body->body.size(), 4u);
  const Stmt& scan = *r.body->body[2];
  ASSERT_EQ(scan.kind, StmtKind::Scan);
  ASSERT_EQ(scan.carried.size(), 2u);
  EXPECT_EQ(bits(scan.carried[0].init->value), bits(-INFINITY));
  EXPECT_EQ(scan.body[1]->value->prec, Prec::F32);  // max.f32(mp, xs)
  const Stmt& guard = *r.body->body[3];
  ASSERT_EQ(guard.kind, StmtKind::If);
  EXPECT_EQ(guard.body[0]->name, "guarded tail");
  // Printing it loses only the file comments; the printed form reads back the same.
  Routine again = parse_routine(print_routine(r), "printed.fp");
  EXPECT_TRUE(equal(again, r));
}

TEST(TextFormat, FileHeaderNamesVersionCommandAndSeed) {
  const std::string version = FLASHPROOF_VERSION;
  EXPECT_EQ(format_file_header({"flashproof attention --sq 2", std::nullopt}),
            "# flashproof " + version + "\n# command: flashproof attention --sq 2\n");
  EXPECT_EQ(format_file_header({"flashproof fuzz", 42}),
            "# flashproof " + version + "\n# command: flashproof fuzz\n# seed: 42\n");
  // A command with a newline or a NUL must not break out of its comment line.
  EXPECT_EQ(format_file_header({std::string("a\nb\0c", 5), std::nullopt}),
            "# flashproof " + version + "\n# command: a\\nb\\x00c\n");
  Routine r = golden_routine();
  std::string file = print_routine_file(r, {std::string("x\ny\xff"), 18446744073709551615ull});
  EXPECT_THAT(file, HasSubstr("# seed: 18446744073709551615\n"));
  EXPECT_TRUE(equal(parse_routine(file, "with-header.fp"), r));
}

TEST(TextFormat, ConstantsRoundTripBitwise) {
  using L = std::numeric_limits<double>;
  struct Case {
    double value;
    const char* spelling;
  };
  const Case cases[] = {
      {-0.0, "-0"},
      {0.0, "0"},
      {L::denorm_min(), "5e-324"},
      {-L::denorm_min(), "-5e-324"},
      {L::min(), "2.2250738585072014e-308"},
      {L::max(), "1.7976931348623157e+308"},
      {-L::max(), "-1.7976931348623157e+308"},
      {L::infinity(), "inf"},
      {-L::infinity(), "-inf"},
      {0.1, "0.1"},
      {1e16, "1e+16"},
      {1.0 / 3.0, "0.3333333333333333"},
  };
  for (const auto& c : cases) {
    for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16}) {
      EXPECT_EQ(print_constant(c.value, p), c.spelling);
      EXPECT_EQ(bits(round_trip_constant(c.value, p)), bits(c.value)) << c.spelling;
    }
  }
  EXPECT_EQ(print_constant(L::quiet_NaN(), Prec::F32), "nan");
  EXPECT_EQ(print_constant(-L::quiet_NaN(), Prec::F32), "nan");
  EXPECT_TRUE(std::isnan(round_trip_constant(L::quiet_NaN(), Prec::F64)));
}

TEST(TextFormat, I32ConstantsAreIntegers) {
  EXPECT_EQ(print_constant(7, Prec::I32), "7");
  EXPECT_EQ(print_constant(-2147483648.0, Prec::I32), "-2147483648");
  EXPECT_EQ(print_constant(-0.0, Prec::I32), "0");
  EXPECT_EQ(print_constant(1e9, Prec::I32), "1000000000");
  EXPECT_EQ(bits(round_trip_constant(2147483647.0, Prec::I32)), bits(2147483647.0));
  EXPECT_EQ(bits(round_trip_constant(-0.0, Prec::I32)), bits(0.0));  // -0 is not an i32 value
}

TEST(TextFormat, DecimalsBeyondBinary64RoundToInfinityOrZero) {
  auto value = [](const std::string& literal) {
    Routine r = parse_routine("routine r { local v : f64\n v := " + literal + ":f64 }", "r.fp");
    return r.body->body[1]->value->value;
  };
  EXPECT_EQ(bits(value("1e400")), bits(INFINITY));
  EXPECT_EQ(bits(value("-1e400")), bits(-INFINITY));
  EXPECT_EQ(bits(value("1e-400")), bits(0.0));
  EXPECT_EQ(bits(value("-1e-400")), bits(-0.0));
  EXPECT_EQ(bits(value("0.000001e-320")), bits(0.0));
  EXPECT_EQ(bits(value("100000000000000000000e300")), bits(INFINITY));
  EXPECT_EQ(bits(value("2.5e-324")), bits(std::numeric_limits<double>::denorm_min()));
  EXPECT_EQ(bits(value("1.5E+2")), bits(150.0));
}

TEST(TextFormat, IndicesPrintCanonically) {
  EXPECT_EQ(print_index(Index{{{4, "tb"}, {1, "j"}}, -1}), "4*tb + j - 1");
  EXPECT_EQ(print_index(Index{{{-1, "j"}, {-3, "k"}}, 2}), "-j - 3*k + 2");
  EXPECT_EQ(print_index(Index{{{-2, "j"}}, 0}), "-2*j");
  EXPECT_EQ(print_index(Index::fixed(-3)), "-3");
  EXPECT_EQ(print_index(Index::fixed(0)), "0");
  EXPECT_EQ(print_index(Index{{{2, "tb"}, {1, "j"}, {-2, "tb"}}, 3}), "j + 3");  // merged, zero dropped
  EXPECT_EQ(print_index(Index{{{0, "j"}}, 0}), "0");
}

TEST(TextFormat, IndicesParseToCanonicalFormIncludingInt64Extremes) {
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  auto parse_idx = [](const std::string& idx) {
    Routine r = parse_routine("routine r { node n : f32[1] local\n n[0] = idx.f32(" + idx + ") }", "r.fp");
    return r.body->body[0]->value->indices.at(0);
  };
  EXPECT_EQ(parse_idx("i + i - 2 + 3*j - j"), (Index{{{2, "i"}, {2, "j"}}, -2}));
  EXPECT_EQ(parse_idx("0*i + 5"), Index::fixed(5));
  EXPECT_EQ(parse_idx("i - i"), Index::fixed(0));
  EXPECT_EQ(parse_idx("-j + -4*k - -1"), (Index{{{-1, "j"}, {-4, "k"}}, 1}));
  for (const Index& idx : {Index{{{kMin, "i"}}, kMin}, Index{{{kMax, "i"}, {kMin, "j"}}, kMax},
                           Index::fixed(kMin), Index{{{1, "i"}}, kMin}}) {
    EXPECT_EQ(parse_idx(print_index(idx)), idx) << print_index(idx);
  }
}

TEST(TextFormat, CommentTextSurvivesEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  all += "\xe2\x82\xac \xf0\x9f\x98\x80";  // valid multi-byte UTF-8 stays raw
  Routine r;
  r.name = "c";
  r.body = seq({comment(all)});
  std::string text = print_routine(r);
  EXPECT_THAT(text, HasSubstr("\\x00\\x01"));
  EXPECT_THAT(text, HasSubstr("\xe2\x82\xac \xf0\x9f\x98\x80"));
  Routine back = parse_routine(text, "c.fp");
  EXPECT_EQ(back.body->body.at(0)->name, all);
  EXPECT_EQ(print_routine(back), text);
}

TEST(TextFormat, ParserSetsSourceLocations) {
  const char* text =
      "# header\n"
      "routine r {\n"
      "  node a : f32[2] materialized\n"
      "  for i in 0..1 {\n"
      "    a[i] = add.f32(a[i],   1:f32)\n"
      "  }\n"
      "}\n";
  Routine r = parse_routine(text, "loc.fp");
  EXPECT_EQ(r.nodes[0].loc.line, 3);
  EXPECT_EQ(r.nodes[0].loc.col, 3);
  EXPECT_EQ(r.body->loc.line, 2);
  EXPECT_EQ(r.body->loc.col, 11);
  const Stmt& loop = *r.body->body[0];
  EXPECT_EQ(loop.loc.line, 4);
  EXPECT_EQ(loop.loc.col, 3);
  const Stmt& store = *loop.body[0];
  EXPECT_EQ(store.loc.line, 5);
  EXPECT_EQ(store.loc.col, 5);
  const Expr& add = *store.value;
  EXPECT_EQ(add.loc.col, 12);
  EXPECT_EQ(add.args[0]->loc.col, 20);
  EXPECT_EQ(add.args[1]->loc.col, 28);
  EXPECT_EQ(add.args[1]->loc.line, 5);
}

TEST(TextFormat, LocalsAreLexicallyScoped) {
  // Shadowing: the innermost declaration gives the precision of a read.
  Routine r = parse_routine("routine r { local v : f32\n for i in 0..0 { local v : f16\n v := v }\n v := v }",
                            "s.fp");
  EXPECT_EQ(r.body->body[1]->body[1]->value->prec, Prec::F16);
  EXPECT_EQ(r.body->body[2]->value->prec, Prec::F32);
  // A local declared in a block is gone after it.
  EXPECT_THROW(parse_routine("routine r { if 1:i32 { local v : f32 }\n v := v }", "s.fp"), UserError);
  // Carried locals are visible in the scan body only, not in their own init nor after the scan.
  Routine scan =
      parse_routine("routine r { scan t in 0..1 forward carry(p -> n : bf16 = 0:f32) { n := p } }", "s.fp");
  EXPECT_EQ(scan.body->body[0]->body[0]->value->prec, Prec::BF16);
  EXPECT_THROW(parse_routine("routine r { scan t in 0..1 forward carry(p -> n : f32 = p) { } }", "s.fp"),
               UserError);
  EXPECT_THROW(
      parse_routine("routine r { scan t in 0..1 forward carry(p -> n : f32 = 0:f32) { }\n n := p }", "s.fp"),
      UserError);
}

TEST(TextFormat, NamesThatLookLikeOpsAreNamesInContext) {
  // Operation names are not keywords: a node may be called `add` and a local `exp`.
  Routine r = parse_routine(
      "routine r { node add : f16[2] materialized\n local exp : i32\n add[1] = add.f32(add[0], exp) }",
      "n.fp");
  const Expr& e = *r.body->body[1]->value;
  EXPECT_EQ(e.kind, ExprKind::Binary);
  EXPECT_EQ(e.args[0]->kind, ExprKind::Get);
  EXPECT_EQ(e.args[0]->prec, Prec::F16);
  EXPECT_EQ(e.args[1]->kind, ExprKind::GetLocal);
  EXPECT_EQ(e.args[1]->prec, Prec::I32);
  EXPECT_TRUE(is_valid_text_name("add"));
  EXPECT_FALSE(is_valid_text_name("nan"));
  EXPECT_FALSE(is_valid_text_name("for"));
  EXPECT_FALSE(is_valid_text_name("9a"));
  EXPECT_FALSE(is_valid_text_name(""));
}

TEST(TextFormat, ParseRoutineFileReadsFilesAndReportsMissingOnes) {
  std::string path = ::testing::TempDir() + "text_format_test_routine.fp";
  {
    std::ofstream out(path, std::ios::binary);
    out << print_routine_file(golden_routine(), {"test", 1});
  }
  EXPECT_TRUE(equal(parse_routine_file(path), golden_routine()));
  std::remove(path.c_str());
  try {
    parse_routine_file(path);
    FAIL() << "a missing file parsed";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMissingInput);
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 0);
    EXPECT_THAT(e.message(), HasSubstr("cannot open"));
  }
  try {
    std::ofstream(path, std::ios::binary) << "routine r {\n  noop\n";
    parse_routine_file(path);
    FAIL() << "a truncated file parsed";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMalformed);
    EXPECT_EQ(std::string(e.what()), path + ":3:1: expected '}', found end of file");
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace fp
