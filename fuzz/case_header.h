#pragma once
// The text format of a case whose first line is a header of two keyword/integer pairs (the `exec`
// target's `data-seed N hostile P`, the `verify` target's `application A mutant M`) and whose body
// follows. The parsed body keeps the file's line numbers: the header line becomes an empty line,
// so a diagnostic in the body names the line of the case file.
#include <cstdint>
#include <string>

namespace fp::fuzz {

struct CaseHeader {
  std::int64_t first = 0, second = 0;
  std::string body;  // starts with "\n" standing for the header line
};

std::string case_header_text(const std::string& first_word, std::int64_t first, const std::string& second_word,
                             std::int64_t second, const std::string& body);

// Throws UserError 65 at line 1 of `name`, saying `expected`, when the first line is not exactly
// `first_word N second_word M` with N >= first_min and M in [second_min, second_max].
CaseHeader parse_case_header(const std::string& text, const std::string& name, const std::string& first_word,
                             std::int64_t first_min, const std::string& second_word, std::int64_t second_min,
                             std::int64_t second_max, const std::string& expected);

}  // namespace fp::fuzz
