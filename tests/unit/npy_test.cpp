// Unit tests of core/npy.h: round trips per dtype (bf16 as <u2 bit patterns, scalars, special
// values), the exact bytes NumPy writes, files on disk, and rejection of malformed, truncated,
// garbage and oversized inputs with the documented exit codes.

#include "core/npy.h"

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "core/diagnostic.h"
#include "core/input_validation.h"
#include "core/numerics.h"
#include "tensor_expect.h"

namespace fp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor make(Prec p, std::vector<std::int64_t> dims, std::vector<double> data) {
  Tensor t;
  t.prec = p;
  t.dims = std::move(dims);
  t.data = std::move(data);
  return t;
}

// A .npy file with the given header dictionary text and data bytes (version 1.0 framing).
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const std::size_t preamble = major == 1 ? 10 : 12;
  header.append(64 - (preamble + header.size() + 1) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const auto len = static_cast<std::uint32_t>(header.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>((len >> 8) & 0xff));
  if (major != 1) {
    out.push_back(static_cast<char>((len >> 16) & 0xff));
    out.push_back(static_cast<char>(len >> 24));
  }
  return out + header + data;
}

// The error code and message of parsing `bytes`, or {0, ""} if it parses.
std::pair<int, std::string> parse_error(const std::string& bytes) {
  try {
    parse_npy(bytes, "t.npy");
  } catch (const UserError& e) {
    return {static_cast<int>(e.code()), e.message()};
  }
  return {0, ""};
}

// ---- round trips -------------------------------------------------------------------------------

TEST(NpyRoundTrip, EveryDtypeWithSpecialValues) {
  const std::vector<Tensor> tensors = {
      make(Prec::F64, {2, 3}, {0.1, -0.0, kInf, -kInf, kNaN, 0x1p-1074}),
      make(Prec::F32, {3}, {round_to(Prec::F32, 0.1), 0x1p-149, -3.4028234663852886e38}),
      make(Prec::F16, {2, 2}, {65504.0, 0x1p-24, -0.0, kNaN}),
      make(Prec::BF16, {1, 4}, {round_to(Prec::BF16, 3.14159), 0x1p-133, -kInf, 1.0}),
      make(Prec::I32, {4}, {-2147483648.0, 2147483647.0, 0, -7}),
  };
  for (const Tensor& t : tensors) {
    SCOPED_TRACE(prec_name(t.prec));
    const std::string bytes = serialize_npy(t);
    EXPECT_EQ((bytes.size() - static_cast<std::size_t>(t.size() * prec_bytes(t.prec))) % 64, 0u);
    EXPECT_TRUE(testing::bitwise_equal(parse_npy(bytes), t));
  }
}

TEST(NpyRoundTrip, ScalarsAndEmptyArrays) {
  const Tensor scalar = make(Prec::F32, {}, {2.5});
  const std::string bytes = serialize_npy(scalar);
  EXPECT_NE(bytes.find("'shape': (), }"), std::string::npos);
  EXPECT_TRUE(testing::bitwise_equal(parse_npy(bytes), scalar));
  const Tensor empty = make(Prec::F64, {0, 3}, {});
  EXPECT_TRUE(testing::bitwise_equal(parse_npy(serialize_npy(empty)), empty));
  // Dims whose product overflows int64 before the zero is reached (found by the .npy libFuzzer
  // harness; the writer multiplied them in order, which is undefined behaviour).
  const Tensor huge_empty = make(Prec::I32, {551615, 50002, 72, 429, 5072100, 0, 272, 4225072, 2}, {});
  EXPECT_TRUE(testing::bitwise_equal(parse_npy(serialize_npy(huge_empty)), huge_empty));
}

TEST(NpyRoundTrip, Bf16TravelsAsU2BitPatterns) {
  const Tensor t = make(Prec::BF16, {2}, {1.0, -2.0});
  const std::string bytes = serialize_npy(t);
  EXPECT_NE(bytes.find("'descr': '<u2'"), std::string::npos);
  // 1.0 = 0x3F80, -2.0 = 0xC000, little-endian.
  EXPECT_EQ(bytes.substr(bytes.size() - 4), std::string("\x80\x3F\x00\xC0", 4));
  // Any <u2 array reads as bf16 bit patterns.
  const Tensor u = parse_npy(
      npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", std::string("\x49\x40", 2)));
  EXPECT_EQ(u.prec, Prec::BF16);
  EXPECT_EQ(u.data[0], 3.140625);
}

TEST(NpyRoundTrip, WritesExactlyWhatNumPyWrites) {
  // np.save of np.array([[1, 2, 3], [4, 5, 6]], dtype='<f4'): a 128-byte preamble+header.
  const std::string bytes = serialize_npy(make(Prec::F32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string want = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                     std::string(128 - 10 - dict.size() - 1, ' ') + "\n";
  for (float f : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) {
    const auto u = std::bit_cast<std::uint32_t>(f);
    for (int i = 0; i < 4; ++i) want.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
  EXPECT_EQ(bytes, want);
  EXPECT_NE(serialize_npy(make(Prec::I32, {5}, {1, 2, 3, 4, 5})).find("'shape': (5,), }"), std::string::npos);
}

TEST(NpyRoundTrip, ReadsVersion2AndDoubleQuotedHeaders) {
  const std::string data(8, '\0');
  const Tensor t =
      parse_npy(npy_bytes("{\"descr\": \"<f8\", \"shape\": (1,), \"fortran_order\": False}", data, 2));
  EXPECT_EQ(t.prec, Prec::F64);
  EXPECT_EQ(t.dims, std::vector<std::int64_t>{1});
  EXPECT_EQ(t.data[0], 0.0);
}

TEST(NpyFiles, WriteThenReadFromDisk) {
  const std::string path = ::testing::TempDir() + "npy_test_roundtrip.npy";
  const Tensor t = make(Prec::F16, {3, 1}, {1.5, -0.25, 0x1p-24});
  write_npy(path, t);
  EXPECT_TRUE(testing::bitwise_equal(read_npy(path), t));
  std::remove(path.c_str());
}

TEST(NpyFiles, MissingFileIs66) {
  try {
    read_npy(::testing::TempDir() + "does/not/exist.npy");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMissingInput);
  }
  EXPECT_THROW(write_npy(::testing::TempDir() + "does/not/exist.npy", make(Prec::F32, {1}, {0})), UserError);
}

// ---- malformed input ------------------------------------------------------------------------------

TEST(NpyMalformed, HeadersAreRejectedWith65) {
  const std::string data4(4, '\0');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"magic", std::string("\x93NUMPX\x01\x00\x10\x00", 10) + std::string(16, ' ')},
      {"short", std::string("\x93NUMPY\x01", 7)},
      {"version 3", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data4, 3)},
      {"header length", std::string("\x93NUMPY\x01\x00\xff\x00{}", 12)},
      {"not a dict", npy_bytes("['descr', '<f4']", data4)},
      {"missing shape", npy_bytes("{'descr': '<f4', 'fortran_order': False, }", data4)},
      {"unknown key", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1, }", data4)},
      {"fortran", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", data4)},
      {"big-endian", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", data4)},
      {"int64", npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", data4 + data4)},
      {"negative extent", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", data4)},
      {"bad bool", npy_bytes("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", data4)},
      {"trailing text", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", data4)},
      {"unterminated", npy_bytes("{'descr': '<f4", data4)},
      {"truncated data", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data4)},
      {"extra data", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data4 + "xx")},
  };
  for (const auto& [what, bytes] : cases) {
    const auto [code, message] = parse_error(bytes);
    EXPECT_EQ(code, kExitMalformed) << what;
    EXPECT_NE(message.find("expected"), std::string::npos) << what << ": " << message;
  }
  EXPECT_NE(parse_error(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", data4))
                .second.find("'>f4'"),
            std::string::npos);
}

TEST(NpyMalformed, HugeDeclaredShapesFailFastWithoutAllocating) {
  const auto start = std::chrono::steady_clock::now();
  // (2^61 + 1) · 8 wraps to 8 cells in 64 bits, which the 64 data bytes would hold: only an
  // overflow-checked product rejects it.
  for (const char* shape :
       {"(1000000000000,)", "(4611686018427387904, 4)", "(9223372036854775807, 9223372036854775807)",
        "(65536, 65536, 65536, 65536)", "(99999999999999999999999,)", "(2305843009213693953, 8)"}) {
    const std::string dict =
        std::string("{'descr': '<f8', 'fortran_order': False, 'shape': ") + shape + ", }";
    EXPECT_EQ(parse_error(npy_bytes(dict, std::string(64, '\0'))).first, kExitMalformed) << shape;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(NpyMalformed, GarbageAndMutationsNeverCrash) {
  std::mt19937_64 g(21);
  const std::string valid = serialize_npy(make(Prec::F32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  int rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string bytes = valid;
    switch (i % 4) {
      case 0:  // random bytes overwritten
        for (int k = 0; k < 3; ++k) bytes[g() % bytes.size()] = static_cast<char>(g());
        break;
      case 1:
        bytes.resize(g() % bytes.size());
        break;  // truncated anywhere
      case 2:   // pure garbage
        bytes.assign(g() % 200, '\0');
        for (auto& ch : bytes) ch = static_cast<char>(g());
        break;
      case 3:  // a header character replaced by a printable one
        bytes[10 + g() % 60] = static_cast<char>(' ' + g() % 95);
        break;
    }
    try {
      const Tensor t = parse_npy(bytes);
      std::int64_t cells = 1;
      for (auto d : t.dims) cells *= d;
      EXPECT_EQ(cells, t.size());
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitMalformed);
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 2500);
}

// A bound .npy of the wrong dtype or shape named only the routine; the message now names the file
// (its location), the input, and both types in the IR's and NumPy's words.
TEST(NpyInputBinding, DtypeAndShapeMismatchNameTheFile) {
  Node x = make_node("x", {2, 4}, Prec::F32);
  check_input_file(x, make(Prec::F32, {2, 4}, std::vector<double>(8, 0.0)), "x.npy");  // fits: no throw
  try {
    check_input_file(x, make(Prec::F64, {4}, std::vector<double>(4, 0.0)), "data/x.npy");
    FAIL() << "a mismatch was accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMalformed);
    EXPECT_EQ(e.file(), "data/x.npy");
    EXPECT_EQ(e.message(),
              "expected f32[2,4] (dtype '<f4', shape (2, 4)) for input 'x', found f64[4] (dtype '<f8', shape "
              "(4,))");
  }
}

}  // namespace
}  // namespace fp
