#pragma once
// Tokens of the tensor-expression language (te_parser.h) and the lexer producing them. Newlines
// end statements, except inside brackets or parentheses, so the lexer reports a Newline token only
// at nesting depth 0.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fp::fe {

enum class TeTok : std::uint8_t {
  End,
  Newline,
  Error,
  Ident,
  Number,
  LBracket,
  RBracket,
  LParen,
  RParen,
  Comma,
  Colon,
  Assign,
  Plus,
  Minus,
  Star,
  Slash,
  Lt,
  Le,
  Gt,
  Ge,
  EqEq,
  NotEq,
  AndAnd,
  OrOr,
  Bang,
};

struct TeToken {
  TeTok kind = TeTok::End;
  std::string text;
  bool integer = false;  // Number: written without '.' or exponent
  int line = 1;
  int col = 1;
};

// What a token is, for "expected X, found Y" messages.
std::string describe(const TeToken& t);
std::string describe(TeTok k);

class TeLexer {
 public:
  explicit TeLexer(std::string_view text) : text_(text) {}
  // The next token; after End or Error, the same again.
  TeToken next();

 private:
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void advance();
  TeToken make(TeTok k, std::string text, int line, int col) const;
  TeToken number(int line, int col);

  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  int depth_ = 0;  // open brackets and parentheses
  bool done_ = false;
  TeToken last_;
};

}  // namespace fp::fe
