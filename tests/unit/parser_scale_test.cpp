// The parser's cost is linear with a small constant whatever the input's shape: for 10 MB of text
// it finishes (a routine or a located error) in a few seconds of CPU and grows the process by at
// most 100 MB. Each shape is parsed in a forked child, so its peak (getrusage's ru_maxrss, which
// starts at the child's size at fork) is its own and not the test binary's history. The precise
// figures (<= 1 s, <= 100 MB) are bench/parser_bench.cpp's BM_ParsePathological.
//
// What broke before: a 10 MB line of `noop`s took 2.6 s and 508 MB before its error; 10 MB of
// `x:=x` statements took 744 MB.

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "child_process.h"
#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "sanitizer.h"

namespace fp {
namespace {

constexpr std::size_t kTenMB = 10'000'000;

// `head`, then `unit` repeated to 10 MB, then `tail`.
std::string ten_mb(const std::string& head, const std::string& unit, const std::string& tail) {
  std::string s = head;
  s.reserve(kTenMB + head.size() + tail.size());
  while (s.size() + unit.size() <= kTenMB + head.size()) s += unit;
  return s + tail;
}

long rss_kib() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

struct ParseCost {
  double cpu_s = -1;
  long growth_mb = -1;
  std::string outcome;  // "ok" or the error
};

// Parses `text` in a child: CPU seconds, peak growth over the child's size at fork, outcome.
ParseCost parse_cost(const std::string& text) {
  testing::ChildResult r = testing::run_in_child([&] {
    const long before = rss_kib();
    rusage u0{};
    ::getrusage(RUSAGE_SELF, &u0);
    std::string outcome = "ok";
    try {
      parse_routine(text, "big.fp");
    } catch (const UserError& e) {
      outcome = std::string(e.what()).substr(0, 160);
    }
    rusage u1{};
    ::getrusage(RUSAGE_SELF, &u1);
    auto secs = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    const double cpu = secs(u1.ru_utime) - secs(u0.ru_utime) + secs(u1.ru_stime) - secs(u0.ru_stime);
    std::printf("%.3f %ld %s\n", cpu, (u1.ru_maxrss - before) / 1024, outcome.c_str());
    return 0;
  });
  ParseCost c;
  char outcome[256] = {};
  if (std::sscanf(r.output.c_str(), "%lf %ld %255[^\n]", &c.cpu_s, &c.growth_mb, outcome) == 3)
    c.outcome = outcome;
  return c;
}

void expect_bounded(const std::string& shape, const std::string& text) {
  ASSERT_GE(text.size(), kTenMB);
  const ParseCost c = parse_cost(text);
  ASSERT_GE(c.cpu_s, 0) << shape << ": the child reported nothing";
  // The issue's figure (<= 1 s; the plain build takes 0.06-0.2 s); the sanitizers slow every
  // instruction several times over.
  EXPECT_LT(c.cpu_s, fp::testing::kAddressSanitizer ? 5.0 : 1.0) << shape;
  // (AddressSanitizer's redzones inflate every allocation: the memory figure is the plain build's.)
  if (!fp::testing::kAddressSanitizer) {
    EXPECT_LE(c.growth_mb, 100) << shape << " (" << c.outcome << ")";
  }
  std::printf("[ parse 10 MB ] %-22s cpu %.2f s, +%ld MB: %s\n", shape.c_str(), c.cpu_s, c.growth_mb,
              c.outcome.substr(0, 90).c_str());
}

TEST(ParserScale, TenMegabyteLineOfNoopsIsBoundedNotHalfAGigabyte) {
  expect_bounded("one line of noops", ten_mb("routine r {\n", "noop ", "\n}\n"));
}

TEST(ParserScale, TenMegabytesOfLocalStoresAreBounded) {
  expect_bounded("x:=x statements", ten_mb("routine r {\n  local x : f32\n", "x:=x ", "\n}\n"));
}

TEST(ParserScale, TenMegabytesOfZeroStatementsAreBounded) {
  expect_bounded("zero statements",
                 ten_mb("routine r {\n  node a : f32[1] materialized output\n", "zero a\n", "}\n"));
}

TEST(ParserScale, TenMegabytesOfCommentsAreBounded) {
  expect_bounded("comment statements", ten_mb("routine r {\n", "comment \"\" ", "\n}\n"));
}

TEST(ParserScale, TenMegabytesOfIndicesInOneAccessAreBounded) {
  expect_bounded("indices of one access", ten_mb("routine r {\n  node a : f32[1] materialized output\n  a[",
                                                 "0, ", "0] = 1:f32\n}\n"));
}

TEST(ParserScale, TenMegabytesOfExtentsAreBounded) {
  expect_bounded("extents of one node",
                 ten_mb("routine r {\n  node a : f32[", "1, ", "1] materialized\n}\n"));
}

TEST(ParserScale, TenMegabytesOfIndexTermsAreBounded) {
  expect_bounded("terms of one index", ten_mb("routine r {\n  node a : f32[1] materialized output\n  a[",
                                              "0 + i - ", "i] = 1:f32\n}\n"));
}

TEST(ParserScale, DeeplyNestedParensAndBracketsAreBounded) {
  expect_bounded("nested operations", ten_mb("routine r {\n  local x : f64\n  x := ", "neg.f64(", "\n}\n"));
  expect_bounded("brackets", ten_mb("routine r {\n", "[", "\n}\n"));
  expect_bounded("nested blocks", ten_mb("routine r {\n", "if 1:i32 { ", "\n}\n"));
}

TEST(ParserScale, TenMegabyteNumberAndIdentifierAreBounded) {
  expect_bounded("a number literal", ten_mb("routine r {\n  local x : f64\n  x := ", "7", ":f64\n}\n"));
  expect_bounded("an identifier", ten_mb("routine ", "a", " {}\n"));
  expect_bounded("a string", ten_mb("routine r {\n  comment \"", "s", "\"\n}\n"));
  expect_bounded("a comment line", ten_mb("routine r {\n  #", "c", "\n}\n"));
}

TEST(ParserScale, TheBudgetErrorIsLocatedWhereItRanOut) {
  try {
    parse_routine(ten_mb("routine r {\n", "noop ", "\n}\n"), "big.fp");
    FAIL() << "10 MB of noops fit the budget: the test no longer exercises it";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMalformed);
    EXPECT_EQ(e.line(), 2);
    EXPECT_GT(e.col(), 1);
    EXPECT_NE(e.message().find("expected a routine of at most 64 MiB in memory"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fp
