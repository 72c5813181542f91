// Mutations of valid program text (text_mutation.h).
#include "fuzz/text_mutation.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "core/random_inputs.h"

namespace fp::fuzz {

namespace {

constexpr std::array<std::string_view, 34> kKeywords{
    "routine",   "attr",    "node",     "zero",    "local",        "for",       "in",
    "scan",      "forward", "backward", "carry",   "if",           "comment",   "noop",
    "idx",       "input",   "output",   "inf",     "nan",          "f64",       "f32",
    "f16",       "bf16",    "i32",      "virtual", "materialized", "requested", "add.f32",
    "where.f16", "idx.i32", "max.bf16", "exp.f64", "lt.i32",       "sqrt.f32"};
constexpr std::array<std::string_view, 20> kPunctuation{"{", "}", "[", "]", "(",  ")",  ",", ":",  "=", "..",
                                                        "+", "-", "*", "#", "\"", ":=", ".", "\\", ";", "@"};
constexpr std::array<std::string_view, 14> kExtremes{"1e999",
                                                     "99999999999999999999",
                                                     "-0x",
                                                     "nan",
                                                     "-1e-999",
                                                     "0x1p99999",
                                                     "18446744073709551616",
                                                     "-9223372036854775809",
                                                     "2147483648",
                                                     "-2147483649",
                                                     "1e-400",
                                                     "0x",
                                                     "-",
                                                     "4.9e-324"};
constexpr std::array<std::string_view, 6> kBrackets{"{", "}", "[", "]", "(", ")"};
constexpr std::array<std::string_view, 12> kBytes{
    std::string_view("\0", 1), "\xff", "\x01", "\x7f", "\t", "\r", "\n", "é", "€", "\xc3", "\xe2\x82",
    "\xf0\x9f\x98\x80"};

class Mutator {
 public:
  Mutator(std::string text, std::uint64_t seed) : s_(std::move(text)), rng_(seed ^ 0x6a09e667f3bcc908ULL) {}

  std::string run() {
    const std::string original = s_;
    const int edits = static_cast<int>(rng_.range(1, 4));
    for (int i = 0; i < edits; ++i) edit();
    if (s_ == original) {
      if (s_.empty())
        insert_bytes();
      else
        flip_bit();
    }
    return std::move(s_);
  }

 private:
  template <typename A>
  std::string_view one_of(const A& xs) {
    return xs[static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(xs.size()) - 1))];
  }
  std::size_t pos(std::size_t n) {  // uniform in [0, n]
    return static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(n)));
  }

  // Lines as [begin, end) including their newline.
  std::vector<std::pair<std::size_t, std::size_t>> lines() const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t b = 0;
    while (b < s_.size()) {
      std::size_t e = s_.find('\n', b);
      e = e == std::string::npos ? s_.size() : e + 1;
      out.emplace_back(b, e);
      b = e;
    }
    return out;
  }

  // Tokens: maximal runs of identifier/number characters, or one other non-space byte.
  std::vector<std::pair<std::size_t, std::size_t>> tokens() const {
    auto word = [](unsigned char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
             c == '.';
    };
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (std::size_t i = 0; i < s_.size();) {
      const auto c = static_cast<unsigned char>(s_[i]);
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        ++i;
        continue;
      }
      std::size_t j = i + 1;
      if (word(c))
        while (j < s_.size() && word(static_cast<unsigned char>(s_[j]))) ++j;
      out.emplace_back(i, j);
      i = j;
    }
    return out;
  }

  void edit() {
    switch (rng_.range(0, 11)) {
      case 0:
        return delete_line();
      case 1:
        return duplicate_line();
      case 2:
        return swap_lines();
      case 3:
        return delete_range();
      case 4:
        return insert_bytes();
      case 5:
        return replace_token_with_own();
      case 6:
        return replace_token(one_of(kKeywords));
      case 7:
        return replace_token(one_of(kPunctuation));
      case 8:
        return replace_token(one_of(kExtremes));
      case 9:
        return replace_token(one_of(kBrackets));
      case 10:
        return truncate();
      default:
        return flip_bit();
    }
  }

  void delete_line() {
    auto ls = lines();
    if (ls.empty()) return;
    auto [b, e] = ls[pos(ls.size() - 1)];
    s_.erase(b, e - b);
  }
  void duplicate_line() {
    auto ls = lines();
    if (ls.empty()) return;
    auto [b, e] = ls[pos(ls.size() - 1)];
    std::string line = s_.substr(b, e - b);
    if (line.empty() || line.back() != '\n') line += '\n';
    s_.insert(pos(ls.size()) == 0 ? 0 : e, line);
  }
  void swap_lines() {
    auto ls = lines();
    if (ls.size() < 2) return;
    std::size_t i = pos(ls.size() - 1), j = pos(ls.size() - 1);
    if (i == j) j = (i + 1) % ls.size();
    if (i > j) std::swap(i, j);
    auto take = [&](std::size_t k) {
      std::string l = s_.substr(ls[k].first, ls[k].second - ls[k].first);
      if (l.empty() || l.back() != '\n') l += '\n';
      return l;
    };
    std::string a = take(i), b = take(j);
    std::string out = s_.substr(0, ls[i].first) + b + s_.substr(ls[i].second, ls[j].first - ls[i].second) +
                      a + s_.substr(ls[j].second);
    s_ = std::move(out);
  }
  void delete_range() {
    if (s_.empty()) return;
    std::size_t b = pos(s_.size() - 1);
    std::size_t len = static_cast<std::size_t>(rng_.range(1, rng_.range(0, 3) == 0 ? 200 : 8));
    s_.erase(b, std::min(len, s_.size() - b));
  }
  void insert_bytes() {
    std::string bytes;
    const int n = static_cast<int>(rng_.range(1, 4));
    for (int i = 0; i < n; ++i) {
      if (rng_.range(0, 1) == 0)
        bytes += one_of(kBytes);
      else
        bytes += static_cast<char>(rng_.range(0, 255));
    }
    s_.insert(pos(s_.size()), bytes);
  }
  void replace_token(std::string_view with) {
    auto ts = tokens();
    if (ts.empty()) {
      s_.insert(pos(s_.size()), with);
      return;
    }
    auto [b, e] = ts[pos(ts.size() - 1)];
    s_.replace(b, e - b, with);
  }
  void replace_token_with_own() {
    auto ts = tokens();
    if (ts.empty()) return;
    auto [b, e] = ts[pos(ts.size() - 1)];
    replace_token(s_.substr(b, e - b));
  }
  void truncate() {
    if (s_.empty()) return;
    s_.resize(pos(s_.size() - 1));
  }
  void flip_bit() {
    if (s_.empty()) return;
    s_[pos(s_.size() - 1)] ^= static_cast<char>(1 << rng_.range(0, 7));
  }

  std::string s_;
  SplitMix64 rng_;
};

}  // namespace

std::string mutate_text(const std::string& text, std::uint64_t seed) {
  return Mutator(text, seed).run();
}

rc::Gen<std::string> gen_malformed_text(rc::Gen<std::string> valid) {
  return rc::gen::apply([](const std::string& text, std::uint64_t seed) { return mutate_text(text, seed); },
                        std::move(valid), rc::gen::arbitrary<std::uint64_t>());
}

}  // namespace fp::fuzz
