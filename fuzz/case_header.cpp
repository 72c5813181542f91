// Case files with a header line (case_header.h).
#include "fuzz/case_header.h"

#include <fmt/format.h>

#include <charconv>
#include <sstream>

#include "core/diagnostic.h"

namespace fp::fuzz {

std::string case_header_text(const std::string& first_word, std::int64_t first, const std::string& second_word,
                             std::int64_t second, const std::string& body) {
  return fmt::format("{} {} {} {}\n{}", first_word, first, second_word, second, body);
}

CaseHeader parse_case_header(const std::string& text, const std::string& name, const std::string& first_word,
                             std::int64_t first_min, const std::string& second_word, std::int64_t second_min,
                             std::int64_t second_max, const std::string& expected) {
  const auto eol = text.find('\n');
  const std::string head = text.substr(0, eol);
  // Exactly four words separated by single spaces, the numbers in decimal.
  std::string words[4];
  std::size_t at = 0;
  for (int k = 0; k < 4; ++k) {
    const std::size_t end = k < 3 ? head.find(' ', at) : head.size();
    if (end == std::string::npos || end == at) throw UserError(kExitMalformed, name, 1, 1, expected);
    words[k] = head.substr(at, end - at);
    at = end + 1;
  }
  auto number = [&](const std::string& w, std::int64_t lo, std::int64_t hi) {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (ec != std::errc() || p != w.data() + w.size() || v < lo || v > hi)
      throw UserError(kExitMalformed, name, 1, 1, expected);
    return v;
  };
  if (words[0] != first_word || words[2] != second_word) throw UserError(kExitMalformed, name, 1, 1, expected);
  CaseHeader h;
  h.first = number(words[1], first_min, INT64_MAX);
  h.second = number(words[3], second_min, second_max);
  h.body = eol == std::string::npos ? "\n" : "\n" + text.substr(eol + 1);
  return h;
}

}  // namespace fp::fuzz
