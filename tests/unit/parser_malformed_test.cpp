// The `.fp` parser on malformed input: one test per class of error (each checks exit code 65,
// the exact line:col, an "expected ..." message and that the parser returns quickly), plus a
// deterministic mutation smoke test over printed random routines.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "fuzz/random_routine.h"

namespace fp {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Deterministic across platforms (std distributions are not).
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

constexpr auto kFast = std::chrono::seconds(1);

// Parses text expecting a malformed-input error at line:col whose message contains fragment.
void expect_malformed(const std::string& text, int line, int col, const std::string& fragment) {
  auto start = std::chrono::steady_clock::now();
  try {
    parse_routine(text, "bad.fp");
    ADD_FAILURE() << "parsed without error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMalformed);
    EXPECT_EQ(e.file(), "bad.fp");
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.col(), col) << e.what();
    EXPECT_THAT(e.message(), StartsWith("expected "));
    EXPECT_THAT(e.message(), HasSubstr(fragment));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, kFast);
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(ParserMalformed, TruncatedFile) {
  expect_malformed("routine r {\n  node a : f32[2] materialized\n  for i in 0..1 {\n    zero a\n", 5, 1,
                   "expected '}', found end of file");
  expect_malformed("routine r {\n  x := add.f32(", 2, 16, "expected an expression, found end of file");
  expect_malformed("routine r {\n  node a : f32[2", 2, 17, "found end of file");
  expect_malformed("routine r {\n  comment \"open", 2, 16, "closing the string, found end of file");
}

TEST(ParserMalformed, UnknownOp) {
  expect_malformed(
      "routine r {\n  local v : f32\n  v := foo.f32(v)\n}", 3, 8,
      "expected an operation (neg, exp, sqrt, abs, cast, add, sub, mul, div, max, min, pow, eq, lt, "
      "where, fma), found 'foo'");
}

TEST(ParserMalformed, UnknownNode) {
  expect_malformed("routine r {\n  local v : f32\n  v := q[0]\n}", 3, 8, "found unknown node 'q'");
}

TEST(ParserMalformed, UnknownLocal) {
  expect_malformed("routine r {\n  local v : f32\n  v := xs\n}", 3, 8, "found unknown local 'xs'");
}

TEST(ParserMalformed, UnknownPrecision) {
  expect_malformed("routine r {\n  node a : f31[2] materialized\n}", 2, 12,
                   "expected a precision (f64, f32, f16, bf16, i32), found 'f31'");
  expect_malformed("routine r {\n  local v : f32\n  v := 1:f8\n}", 3, 10, "found 'f8'");
}

TEST(ParserMalformed, UnknownMode) {
  expect_malformed("routine r {\n  node a : f32[2] stored\n}", 2, 19, "expected a memory mode");
}

TEST(ParserMalformed, NegativeExtent) {
  expect_malformed("routine r {\n  node a : f32[-1] materialized\n}", 2, 16,
                   "expected an extent of at least 1, found -1");
}

TEST(ParserMalformed, ZeroExtent) {
  expect_malformed("routine r {\n  node a : f32[2, 0] materialized\n}", 2, 19,
                   "expected an extent of at least 1, found 0");
}

TEST(ParserMalformed, HugeExtent) {
  expect_malformed("routine r {\n  node a : f32[1048576, 1048577] materialized\n}", 2, 25,
                   "expected at most 2^40 cells in node 'a'");
  expect_malformed("routine r {\n  node a : f32[1099511627777] materialized\n}", 2, 16, "2^40 cells");
  // Exactly 2^40 cells is allowed.
  EXPECT_NO_THROW(parse_routine("routine r { node a : f32[1048576, 1048576] materialized }", "ok.fp"));
}

TEST(ParserMalformed, IntegerOverflow) {
  expect_malformed("routine r {\n  for i in 0..9223372036854775808 {\n  }\n}", 2, 15,
                   "expected an integer in the 64-bit range, found '9223372036854775808'");
  expect_malformed("routine r {\n  attr a = -99999999999999999999\n}", 2, 12,
                   "found '-99999999999999999999'");
  expect_malformed("routine r {\n  node a : f32[1] local\n  a[9223372036854775807 + 1] = 0:f32\n}", 3, 27,
                   "expected an index whose coefficients and offset fit in 64 bits");
  // The extremes themselves are fine.
  EXPECT_NO_THROW(
      parse_routine("routine r { for i in -9223372036854775808..9223372036854775807 { } }", "ok.fp"));
}

TEST(ParserMalformed, DeepNesting) {
  // Blocks: the routine body is level 0, the 257th nested block is rejected at its '{'.
  std::string blocks = "routine r { " + repeat("for i in 0..0 { ", 10000);
  expect_malformed(blocks, 1, 12 + 256 * 16 + 14 + 1, "expected at most 256 levels of nesting, found more");
  // Expressions: the 257th nested operation is rejected at its name.
  std::string exprs = "routine r {\n  local v : f32\n  v := " + repeat("neg.f32(", 10000);
  expect_malformed(exprs, 3, 8 + 256 * 8, "expected at most 256 levels of nesting");
  // A statement cannot start with '{'.
  expect_malformed("routine r {" + std::string(10000, '{'), 1, 12, "expected a statement or '}', found '{'");
  // 256 levels are fine.
  std::string ok =
      "routine r { local v : f32\n v := " + repeat("neg.f32(", 255) + "v" + std::string(255, ')') + " }";
  EXPECT_NO_THROW(parse_routine(ok, "ok.fp"));
}

TEST(ParserMalformed, BinaryGarbage) {
  expect_malformed(std::string("routine r {\n  noop\n\0\x01\xff", 22), 3, 1,
                   "expected a token, found byte 0x00 (NUL)");
  expect_malformed("routine r {\n  comment \"ok \xff\"\n}", 2, 15, "expected UTF-8 text, found byte 0xff");
  expect_malformed("# caf\xc3\nroutine r {}", 1, 6, "expected UTF-8 text, found byte 0xc3");
  expect_malformed("routine r {\n  noop \x07\n}", 2, 8, "expected a token, found byte 0x07");
  expect_malformed("routine r {\n  \xed\xa0\x80\n}", 2, 3, "expected UTF-8 text");  // a surrogate
  // Random bytes (NUL included) are always a located malformed-input error.
  SplitMix64 rng{2024};
  for (int round = 0; round < 200; ++round) {
    std::string bytes(1 + rng.below(512), '\0');
    for (auto& b : bytes) b = static_cast<char>(rng.next());
    auto start = std::chrono::steady_clock::now();
    try {
      parse_routine(bytes, "garbage.fp");
      ADD_FAILURE() << "random bytes parsed";
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitMalformed);
      EXPECT_GE(e.line(), 1);
      EXPECT_GE(e.col(), 1);
      EXPECT_THAT(e.message(), StartsWith("expected "));
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, kFast);
  }
}

TEST(ParserMalformed, WrongArity) {
  expect_malformed("routine r {\n  local v : f32\n  v := add.f32(v)\n}", 3, 17,
                   "expected ',' (add takes 2 operands), found ')'");
  expect_malformed("routine r {\n  local v : f32\n  v := neg.f32(v, v)\n}", 3, 17,
                   "expected ')' (neg takes 1 operand), found ','");
  expect_malformed("routine r {\n  local v : f32\n  v := fma.f32(v, v)\n}", 3, 20,
                   "expected ',' (fma takes 3 operands), found ')'");
  expect_malformed("routine r {\n  local v : f32\n  v := idx.f32(1, 2)\n}", 3, 17,
                   "expected ')' (idx takes one index)");
}

TEST(ParserMalformed, DuplicateNode) {
  expect_malformed("routine r {\n  node a : f32[1] local\n  node a : f64[2] local\n}", 3, 8,
                   "expected a new node name, found duplicate 'a' (declared at 2:3)");
  expect_malformed("routine r {\n  attr n = 1\n  attr n = 2\n}", 3, 8,
                   "expected a new attr name, found duplicate 'n'");
}

TEST(ParserMalformed, MissingRoutineKeyword) {
  expect_malformed("rutine r {}", 1, 1, "expected 'routine', found 'rutine'");
  expect_malformed("# header\n  node a : f32[1] local\n", 2, 3, "expected 'routine', found 'node'");
}

TEST(ParserMalformed, EmptyFile) {
  expect_malformed("", 1, 1, "expected 'routine', found end of file");
  expect_malformed("# only a comment\n\n", 3, 1, "expected 'routine', found end of file");
}

TEST(ParserMalformed, OverlongToken) {
  expect_malformed("routine " + std::string(5000, 'a') + " {}", 1, 9,
                   "expected a token of at most 4096 bytes");
  expect_malformed("routine r {\n  comment \"" + std::string(5000, 'x') + "\"\n}", 2, 11,
                   "expected a token of at most 4096 bytes");
  expect_malformed("routine r { for i in " + std::string(5000, '7') + "..1 { } }", 1, 22,
                   "at most 4096 bytes");
}

TEST(ParserMalformed, KeywordAsName) {
  expect_malformed("routine r {\n  node for : f32[1] local\n}", 2, 8,
                   "expected a node name, found keyword 'for'");
  expect_malformed("routine r {\n  local nan : f32\n}", 2, 9, "expected a local name, found keyword 'nan'");
}

TEST(ParserMalformed, MisplacedDeclarationsAndTrailingText) {
  expect_malformed("routine r {\n  node a : f32[1] local\n  attr n = 1\n}", 3, 3,
                   "expected a statement or '}', found 'attr'");
  expect_malformed("routine r {\n}\nroutine s {}", 3, 1, "expected end of file, found 'routine'");
  expect_malformed("routine r {\n  x = 1:f32\n}", 2, 5, "expected '[' or ':=' after 'x', found '='");
}

TEST(ParserMalformed, BadConstants) {
  expect_malformed("routine r {\n  local v : i32\n  v := 1.5:i32\n}", 3, 8, "expected an i32 constant");
  expect_malformed("routine r {\n  local v : i32\n  v := -2147483649:i32\n}", 3, 8, "found '-2147483649'");
  expect_malformed("routine r {\n  local v : i32\n  v := inf:i32\n}", 3, 8, "expected an i32 constant");
  expect_malformed("routine r {\n  local v : f32\n  v := 1.5\n}", 4, 1, "expected ':' and a precision");
  expect_malformed("routine r {\n  local v : f32\n  v := -v\n}", 3, 9, "expected a number, found 'v'");
  expect_malformed("routine r {\n  comment \"a\\qb\"\n}", 2, 13, "expected an escape");
}

// Random byte edits of valid routines: every parse either succeeds or throws UserError(65), and
// whatever parses prints to text that parses back to the same routine.
TEST(ParserMalformed, MutationSmoke) {
  std::vector<std::string> corpus;
  for (std::uint64_t seed = 1; seed <= 24; ++seed)
    corpus.push_back(print_routine(fuzz::sample_routine(seed)));
  const std::string interesting = "{}[]().,:=-+*\"#\\\n 0123456789eE_a";
  SplitMix64 rng{0xF1A5};
  int parsed = 0, rejected = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string text = corpus[rng.below(corpus.size())];
    int edits = 1 + static_cast<int>(rng.below(3));
    for (int k = 0; k < edits && !text.empty(); ++k) {
      std::size_t at = rng.below(text.size());
      switch (rng.below(6)) {
        case 0:
          text[at] = static_cast<char>(rng.next());
          break;
        case 1:
          text[at] = interesting[rng.below(interesting.size())];
          break;
        case 2:
          text.erase(at, 1 + rng.below(8));
          break;
        case 3:
          text.insert(at, 1, interesting[rng.below(interesting.size())]);
          break;
        case 4:
          text.resize(at);
          break;
        default:
          text.insert(at, text.substr(rng.below(text.size()), rng.below(64)));
          break;
      }
    }
    try {
      Routine r = parse_routine(text, "mutant.fp");
      ++parsed;
      EXPECT_TRUE(equal(parse_routine(print_routine(r), "reprinted.fp"), r)) << text;
    } catch (const UserError& e) {
      ++rejected;
      EXPECT_EQ(e.code(), kExitMalformed) << e.what();
      EXPECT_GE(e.line(), 1) << e.what();
      EXPECT_THAT(e.message(), StartsWith("expected ")) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unexpected exception " << e.what() << " on:\n" << text;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace fp
