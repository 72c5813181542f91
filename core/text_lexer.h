#pragma once
// The tokens of the `.fp` text format (docs/text-format.md) and the lexer that produces them one
// at a time. Shared by the parser (core/text_parser.cpp) and, for the keyword list and UTF-8
// validation, by the printer.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fp::text {

// Longest token the lexer accepts; a longer one is an error (bounded work per token).
inline constexpr std::size_t kMaxTokenBytes = 4096;

enum class Tok : std::uint8_t {
  End,          // end of input
  Error,        // malformed input; Lexer::error_message() says why
  Ident,        // [A-Za-z_][A-Za-z0-9_]* (keywords included, see Token::kw)
  Number,       // digits ['.' digits] [('e'|'E') ['+'|'-'] digits]; never signed
  String,       // '"' ... '"' with escapes; text keeps the quotes and the escapes
  LBrace,       // {
  RBrace,       // }
  LBracket,     // [
  RBracket,     // ]
  LParen,       // (
  RParen,       // )
  Comma,        // ,
  Colon,        // :
  ColonAssign,  // :=
  Assign,       // =
  Arrow,        // ->
  DotDot,       // ..
  Dot,          // .
  Plus,         // +
  Minus,        // -
  Star,         // *
};

// Reserved words: an identifier token spelled like one of these carries its Kw; none can name a
// node, local, loop symbol, attr or routine.
enum class Kw : std::uint8_t {
  None,
  Routine,
  Attr,
  Node,
  Zero,
  Local,
  For,
  In,
  Scan,
  Forward,
  Backward,
  Carry,
  If,
  Comment,
  Noop,
  Idx,
  Input,
  Output,
  Inf,
  Nan,
  F64,
  F32,
  F16,
  BF16,
  I32,
  Virtual,
  Materialized,
  Requested,  // with Local, the memory modes
};

Kw keyword_of(std::string_view word);
inline bool is_keyword(std::string_view word) {
  return keyword_of(word) != Kw::None;
}

struct Token {
  Tok kind = Tok::End;
  Kw kw = Kw::None;       // Ident only
  bool integer = false;   // Number only: digits with no '.' or exponent
  std::string_view text;  // view into the source
  int line = 1;           // 1-based
  int col = 1;            // 1-based, counted in bytes
};

// Length of the well-formed UTF-8 sequence starting at s[i] (1..4), or 0 if the bytes there are
// not one (overlong forms, surrogates and code points above U+10FFFF are not well-formed).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

// Produces tokens on demand, skipping blanks and `#` comments. Never throws: malformed input
// (a stray or binary byte, invalid UTF-8, an unterminated string, an over-long token) yields one
// Tok::Error token located at the offending byte, and every later call yields it again.
class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(source) {}
  Token next();
  // "expected ..., found ..." for the last Tok::Error token.
  const std::string& error_message() const { return error_; }

 private:
  Token make(Tok kind, std::size_t begin, std::size_t end) const;
  Token error_at(std::size_t pos, std::string message);
  bool skip_blanks_and_comments(Token& error);
  bool check_comment_byte(std::size_t& pos, Token& error);
  Token lex_identifier(std::size_t begin);
  Token lex_number(std::size_t begin);
  Token lex_string(std::size_t begin);
  Token lex_punctuation(std::size_t begin);
  Token unexpected_byte(std::size_t pos);
  Token check_length(Token t);

  std::string_view src_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;  // offset of the current line's first byte
  std::string error_;
  bool failed_ = false;
  Token error_token_;
};

// Decodes the escapes of a String token's text (quotes included) that the lexer accepted.
std::string decode_string(std::string_view quoted);

}  // namespace fp::text
