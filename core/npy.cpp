// .npy reading and writing (core/npy.h): a strict parser of the header dictionary NumPy writes,
// bounds-checked before any allocation, and a writer whose output np.load reads back.

#include "core/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "core/diagnostic.h"
#include "core/support/input_file.h"
#include "core/numerics.h"
#include "core/support/atomic_file.h"

namespace fp {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

[[noreturn]] void malformed(const std::string& source, const std::string& msg) {
  throw UserError(kExitMalformed, source, 0, 0, msg);
}

std::optional<Prec> prec_of_descr(std::string_view d) {
  for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::I32, Prec::BF16})
    if (d == npy_descr(p)) return p;
  return std::nullopt;
}

// Printable form of bytes found where something else was expected.
std::string quoted(std::string_view s, std::size_t limit = 24) {
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out += std::isprint(c) ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
  }
  if (s.size() > limit) out += "...";
  return out + "'";
}

// ---- the header dictionary ------------------------------------------------------------------

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// A parser for the Python literal NumPy writes: {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), } followed by spaces and a newline.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    for (;;) {
      skip_ws();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        h.descr = string_literal();
        seen_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        seen_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        seen_shape = true;
      } else {
        fail(fmt::format("expected a header key 'descr', 'fortran_order' or 'shape', found '{}'", key));
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail(fmt::format("expected ',' or '}}' in the header, found {}", rest()));
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) fail(fmt::format("expected the end of the header, found {}", rest()));
    if (!seen_descr || !seen_order || !seen_shape)
      fail("expected a header with the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { malformed(source_, msg); }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  std::string rest() const { return pos_ < s_.size() ? quoted(s_.substr(pos_)) : "the end of the header"; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(fmt::format("expected '{}' in the header, found {}", c, rest()));
    ++pos_;
  }
  std::string string_literal() {
    skip_ws();
    const char q = peek();
    if (q != '\'' && q != '"') fail(fmt::format("expected a quoted string in the header, found {}", rest()));
    const std::size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos)
      fail("expected a closing quote in the header, found the end of the header");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    if (s_.substr(pos_, 4) == "True") return pos_ += 4, true;
    if (s_.substr(pos_, 5) == "False") return pos_ += 5, false;
    fail(fmt::format("expected True or False for 'fortran_order', found {}", rest()));
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> out;
    expect('(');
    for (;;) {
      skip_ws();
      if (peek() == ')') break;
      out.push_back(integer());
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail(fmt::format("expected ',' or ')' in the shape, found {}", rest()));
    }
    ++pos_;
    return out;
  }
  std::int64_t integer() {
    if (!std::isdigit(static_cast<unsigned char>(peek())))
      fail(fmt::format("expected a non-negative integer in the shape, found {}", rest()));
    std::int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      if (v > (INT64_MAX - 9) / 10) fail("expected a shape extent below 2^63, found a longer number");
      v = v * 10 + (s_[pos_++] - '0');
    }
    return v;
  }

  std::string_view s_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

// ---- little-endian cells ------------------------------------------------------------------------

template <typename U>
U load_le(const char* p) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i)
    v |= static_cast<U>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

template <typename U>
void store_le(std::string& out, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

double decode_cell(Prec p, const char* c) {
  switch (p) {
    case Prec::F64:
      return std::bit_cast<double>(load_le<std::uint64_t>(c));
    case Prec::F32:
      return static_cast<double>(std::bit_cast<float>(load_le<std::uint32_t>(c)));
    case Prec::F16:
      return f16_value(load_le<std::uint16_t>(c));
    case Prec::BF16:
      return bf16_value(load_le<std::uint16_t>(c));
    case Prec::I32:
      return static_cast<double>(static_cast<std::int32_t>(load_le<std::uint32_t>(c)));
  }
  return 0;
}

void encode_cell(Prec p, double v, std::string& out) {
  switch (p) {
    case Prec::F64:
      store_le(out, std::bit_cast<std::uint64_t>(v));
      return;
    case Prec::F32:
      store_le(out, std::bit_cast<std::uint32_t>(static_cast<float>(v)));
      return;
    case Prec::F16:
      store_le(out, f16_bits(v));
      return;
    case Prec::BF16:
      store_le(out, bf16_bits(v));
      return;
    case Prec::I32:
      store_le(out, static_cast<std::uint32_t>(static_cast<std::int32_t>(round_i32(v))));
      return;
  }
}

std::string shape_literal(const std::vector<std::int64_t>& dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

}  // namespace

const char* npy_descr(Prec p) {
  switch (p) {
    case Prec::F64:
      return "<f8";
    case Prec::F32:
      return "<f4";
    case Prec::F16:
      return "<f2";
    case Prec::I32:
      return "<i4";
    case Prec::BF16:
      return "<u2";
  }
  return "?";
}

Tensor parse_npy(std::string_view bytes, const std::string& source) {
  if (bytes.substr(0, kMagic.size()) != kMagic)
    malformed(source,
              fmt::format("expected the .npy magic '\\x93NUMPY', found {}", quoted(bytes.substr(0, 8))));
  if (bytes.size() < 10)
    malformed(source, fmt::format("expected a .npy preamble of 10 bytes, found {}", bytes.size()));
  const int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2) || minor != 0)
    malformed(source, fmt::format("expected .npy format version 1.0 or 2.0, found {}.{}", major, minor));
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  const std::size_t preamble = 8 + len_bytes;
  if (bytes.size() < preamble)
    malformed(source, fmt::format("expected a .npy preamble of {} bytes, found {}", preamble, bytes.size()));
  const std::size_t header_len =
      major == 1 ? load_le<std::uint16_t>(bytes.data() + 8) : load_le<std::uint32_t>(bytes.data() + 8);
  if (bytes.size() - preamble < header_len)
    malformed(source,
              fmt::format("expected a {}-byte header, found {} bytes", header_len, bytes.size() - preamble));
  const Header h = HeaderParser(bytes.substr(preamble, header_len), source).parse();

  const std::optional<Prec> prec = prec_of_descr(h.descr);
  if (!prec) {
    const bool big = !h.descr.empty() && h.descr[0] == '>';
    malformed(source,
              fmt::format("expected {}dtype '<f8', '<f4', '<f2', '<i4' or '<u2' (bf16 bits), found '{}'",
                          big ? "a little-endian " : "", h.descr));
  }
  if (h.fortran_order) malformed(source, "expected C order (fortran_order False), found Fortran order");

  // Cell count, bounded by the bytes present before anything is allocated.
  const std::size_t item = static_cast<std::size_t>(prec_bytes(*prec));
  const std::size_t data_bytes = bytes.size() - preamble - header_len;
  const std::uint64_t max_cells = data_bytes / item;
  std::uint64_t cells = 1;
  bool empty = false;
  for (auto d : h.shape) empty = empty || d == 0;
  if (!empty) {
    for (auto d : h.shape) {
      const auto ud = static_cast<std::uint64_t>(d);
      if (cells > max_cells / ud)
        malformed(source,
                  fmt::format("expected a shape whose data fits the {} data bytes present, found {} shape {}",
                              data_bytes, h.descr, shape_literal(h.shape)));
      cells *= ud;
    }
  } else {
    cells = 0;
  }
  if (cells * item != data_bytes)
    malformed(source, fmt::format("expected {} data bytes for {} shape {}, found {}", cells * item, h.descr,
                                  shape_literal(h.shape), data_bytes));

  Tensor t;
  t.prec = *prec;
  t.dims = h.shape;
  t.data.resize(static_cast<std::size_t>(cells));
  const char* p = bytes.data() + preamble + header_len;
  for (std::size_t i = 0; i < t.data.size(); ++i, p += item) t.data[i] = decode_cell(*prec, p);
  return t;
}

namespace {

// The header of t's file: magic, version, header length and the padded dictionary.
std::string npy_header(const Tensor& t) {
  // The product of the dims, without overflow: a zero dimension makes it 0 whatever the others are
  // (a read tensor of shape (551615, …, 5072100, 0, …) overflowed here; found by the .npy harness).
  bool empty = false;
  for (auto d : t.dims) empty = empty || d == 0;
  std::int64_t cells = empty ? 0 : 1;
  bool overflow = false;
  for (auto d : t.dims) overflow = overflow || (!empty && __builtin_mul_overflow(cells, d, &cells));
  FP_INTERNAL_CHECK(!overflow && cells == t.size(), "tensor holds {} values for shape {}", t.size(),
                    shape_literal(t.dims));
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 npy_descr(t.prec), shape_literal(t.dims));
  // Pad with spaces and a final newline so the data starts on a 64-byte boundary, exactly as
  // NumPy's writer does (1 to 64 spaces).
  const bool v2 = dict.size() + 1 + 64 > 65535;  // 1.0 stores the header length in 16 bits
  const std::size_t preamble = v2 ? 12 : 10;
  dict.append(64 - (preamble + dict.size() + 1) % 64, ' ');
  dict.push_back('\n');

  std::string out(kMagic);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  if (v2)
    store_le(out, static_cast<std::uint32_t>(dict.size()));
  else
    store_le(out, static_cast<std::uint16_t>(dict.size()));
  return out + dict;
}

// Calls sink(bytes) with the whole file in order: the header, then the cells a bounded block at a
// time, so a file on disk never needs a second copy of a large tensor in memory.
template <class Sink>
void emit_npy(const Tensor& t, Sink&& sink) {
  constexpr std::size_t kBlockCells = std::size_t{1} << 16;
  sink(npy_header(t));
  std::string block;
  block.reserve(kBlockCells * static_cast<std::size_t>(prec_bytes(t.prec)));
  for (std::size_t i = 0; i < t.data.size(); i += kBlockCells) {
    block.clear();
    const std::size_t end = std::min(t.data.size(), i + kBlockCells);
    for (std::size_t k = i; k < end; ++k) encode_cell(t.prec, round_to(t.prec, t.data[k]), block);
    sink(std::string_view(block));
  }
}

}  // namespace

std::string serialize_npy(const Tensor& t) {
  std::string out;
  out.reserve(128 + t.data.size() * static_cast<std::size_t>(prec_bytes(t.prec)));
  emit_npy(t, [&](std::string_view bytes) { out.append(bytes); });
  return out;
}

Tensor read_npy(const std::string& path) {
  // A regular file only (a device could be endless, a FIFO hang), up to kMaxNpyFileBytes
  // (core/support/input_file.h).
  return parse_npy(read_input_file(path, InputFileRules{kMaxNpyFileBytes, false, "a .npy file"}), path);
}

void write_npy(AtomicFile& out, const Tensor& t) {
  emit_npy(t, [&](std::string_view bytes) { out.write(bytes); });
}

void write_npy(const std::string& path, const Tensor& t) {
  AtomicFile out(path);
  write_npy(out, t);
  out.commit();
}

}  // namespace fp
