// The memory report (core/memory_report.h): buffer sizes, the square-buffer count, and the peak
// from liveness over the top-level statements, including reads that happen through virtual nodes.

#include "core/memory_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "core/checker.h"
#include "core/placement.h"
#include "core/text_parser.h"
#include "fuzz/random_routine.h"

namespace fp {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

Routine parse(std::string_view text) {
  Routine r = parse_routine(text, "t.fp");
  auto diags = check_routine(r);
  EXPECT_TRUE(diags.empty()) << diags.front().message;
  return r;
}

TEST(MemoryReport, ListsEveryStoredNodeWithItsBytes) {
  auto m = memory_report(parse(R"(routine t {
  node a : f64[2, 3] materialized input
  node b : f32[4] requested
  node c : f16[5] local
  node d : bf16[3] materialized
  node e : i32[2] materialized output
  node gone : f32[1000] virtual
}
)"));
  EXPECT_THAT(m.buffers, ElementsAre(Field(&BufferInfo::bytes, 48), Field(&BufferInfo::bytes, 16),
                                     Field(&BufferInfo::bytes, 10), Field(&BufferInfo::bytes, 6),
                                     Field(&BufferInfo::bytes, 8)));
  EXPECT_EQ(m.buffers[2].name, "c");
  EXPECT_EQ(m.buffers[2].mode, MemMode::Local);
  EXPECT_EQ(m.buffers[2].prec, Prec::F16);
  EXPECT_EQ(m.buffers[0].dims, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(m.total_bytes, 88);
  EXPECT_EQ(m.square_buffers, 0);
}

TEST(MemoryReport, SquareMeansTwoAxesOfTheSequenceLengths) {
  constexpr std::string_view kNodes = R"(
  node qk : f32[4, 6] materialized
  node kk : f32[1, 6, 1, 6] materialized
  node q5 : f32[4, 5] materialized
  node row : f32[4] materialized
  node qq : f32[4, 4] materialized
}
)";
  auto m = memory_report(
      parse(std::string("routine t {\n  attr seq_q = 4\n  attr seq_k = 6") + std::string(kNodes)));
  std::vector<bool> square;
  for (const auto& b : m.buffers) square.push_back(b.square);
  EXPECT_EQ(square, (std::vector<bool>{true, true, false, false, true}));
  EXPECT_EQ(m.square_buffers, 3);
  // Without the attrs nothing is square, whatever the shapes.
  EXPECT_EQ(memory_report(parse(std::string("routine t {") + std::string(kNodes))).square_buffers, 0);
  // One attr is enough to define the length.
  EXPECT_EQ(
      memory_report(parse(std::string("routine t {\n  attr seq_k = 6") + std::string(kNodes))).square_buffers,
      1);
}

// src (800 bytes) -> a (400) -> b (400) -> out (4); TAIL is appended to the body.
std::string chain(std::string_view tail) {
  return std::string(R"(routine t {
  node src : f32[200] materialized input
  node a : f32[100] materialized
  node b : f32[100] materialized
  node out : f32[1] materialized output
  for i in 0..99 {
    a[i] = src[i]
  }
  for i in 0..99 {
    b[i] = a[i]
  }
  for i in 0..99 {
    out[0] = add.f32(out[0], b[i])
  }
)") + std::string(tail) +
         "}\n";
}

TEST(MemoryReport, PeakIsTheMostBytesLiveAtOneStatement) {
  // Live: statement 1 src + a = 1200; 2: a + b = 800; 3: b + out = 404.
  auto m = memory_report(parse(chain("")));
  EXPECT_EQ(m.total_bytes, 1604);
  EXPECT_EQ(m.peak_bytes, 1200);
  // A last read of the input at the end keeps it live throughout: 2: src + a + b = 1600.
  EXPECT_EQ(memory_report(parse(chain("  out[0] = src[199]\n"))).peak_bytes, 1600);
}

TEST(MemoryReport, OutputsStayLiveToTheEndAndInputsFromTheStart) {
  auto m = memory_report(parse(R"(routine t {
  node src : f32[10] materialized input
  node early : f32[50] materialized output
  node big : f32[100] materialized
  node unused : f32[1000] materialized input
  for i in 0..49 {
    early[i] = 1:f32
  }
  for i in 0..99 {
    big[i] = src[0]
  }
  for i in 0..99 {
    big[i] = mul.f32(big[i], 2:f32)
  }
}
)"));
  // unused is never read: live at the start only. early stays live after its last write.
  // Statement 1: src 40 + early 200 + unused 4000 = 4240; 2: src + early + big 400 = 640;
  // 3: early + big = 600.
  EXPECT_EQ(m.peak_bytes, 4240);
  EXPECT_EQ(m.total_bytes, 4640);
}

TEST(MemoryReport, ReadsThroughAVirtualNodeHappenWhereItIsRead) {
  // a is virtual: its nest (statement 2) does not run there; its read of b happens at statement 4,
  // so b is live while c is.
  constexpr std::string_view kText = R"(routine t {
  node src : f32[4] materialized input
  node b : f32[300] materialized
  node a : f32[100] MODE
  node c : f32[100] materialized
  node out : f32[100] materialized output
  for i in 0..99 {
    b[i] = src[0]
  }
  for i in 0..99 {
    a[i] = exp.f32(b[i])
  }
  for i in 0..99 {
    c[i] = src[1]
  }
  for i in 0..99 {
    out[i] = add.f32(a[i], c[i])
  }
}
)";
  auto with = [&](const char* mode) {
    std::string text(kText);
    text.replace(text.find("MODE"), 4, mode);
    return memory_report(parse(text));
  };
  // Virtual: statement 4 holds b 1200 + c 400 + out 400 = 2000.
  auto replayed = with("virtual");
  EXPECT_EQ(replayed.peak_bytes, 2000);
  EXPECT_EQ(replayed.total_bytes, 2016);
  // Stored: b dies after statement 2, which holds src 16 + b + a 400 = 1616; statement 4 holds
  // a + c + out = 1200.
  EXPECT_EQ(with("materialized").peak_bytes, 1616);
}

TEST(MemoryReport, AVirtualNodesDefinitionDoesNotRunWhereItStands) {
  // a is virtual and never read, so its nest never runs: b is dead once written and read by
  // nothing else. Were the nest run at statement 3, b would be live beside c (816 bytes).
  EXPECT_EQ(memory_report(parse(R"(routine t {
  node src : f32[4] materialized input
  node b : f32[100] materialized
  node c : f32[100] materialized output
  node a : f32[100] virtual
  for i in 0..99 {
    b[i] = src[0]
  }
  for i in 0..99 {
    c[i] = src[1]
  }
  for i in 0..99 {
    a[i] = b[i]
  }
}
)"))
                .peak_bytes,
            416);
}

TEST(MemoryReport, EmptyBodyHoldsTheInputsAndOutputs) {
  auto m = memory_report(parse(R"(routine t {
  node src : f32[10] materialized input
  node out : f64[10] materialized output
  node tmp : f32[10] materialized
}
)"));
  EXPECT_EQ(m.peak_bytes, 120);
  EXPECT_EQ(m.total_bytes, 160);
}

TEST(MemoryReport, FormatsOneBufferPerLineThenTheTotals) {
  auto m = memory_report(parse(R"(routine t {
  attr seq_q = 3
  attr seq_k = 3
  node scores : f32[1, 3, 1, 3] materialized input
  node o : bf16[3] materialized output
  node skip : f32[3] virtual
}
)"));
  EXPECT_EQ(format_memory_report(m),
            "buffer  prec  dims          mode          bytes\n"
            "scores  f32   [1, 3, 1, 3]  materialized     36  square\n"
            "o       bf16  [3]           materialized      6\n"
            "total 42 bytes in 2 buffers (1 square), peak 42 bytes\n");
}

RC_GTEST_PROP(MemoryReportProperty, AgreesWithTheNodesOfAnyPlacedRoutine, ()) {
  Routine r = place(*fuzz::gen_routine(), {}).routine;
  auto m = memory_report(r);
  std::size_t stored = 0;
  std::int64_t total = 0;
  for (const Node& n : r.nodes)
    if (n.mode != MemMode::Virtual) {
      ++stored;
      total += n.cell_count() * prec_bytes(n.prec);
    }
  RC_ASSERT(m.buffers.size() == stored);
  RC_ASSERT(m.total_bytes == total);
  RC_ASSERT(m.peak_bytes <= m.total_bytes);
  int square = 0;
  for (const auto& b : m.buffers) square += b.square;
  RC_ASSERT(square == m.square_buffers);
}

}  // namespace
}  // namespace fp
