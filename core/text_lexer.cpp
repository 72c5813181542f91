// The `.fp` lexer: one pass over the bytes, no copies (tokens are views into the source), every
// malformed byte reported as a located Tok::Error token rather than an exception so that the
// parser reports errors in source order.

#include "core/text_lexer.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace fp::text {

namespace {

struct KeywordEntry {
  std::string_view word;
  Kw kw;
};

constexpr std::array<KeywordEntry, 27> kKeywords{{
    {"routine", Kw::Routine},
    {"attr", Kw::Attr},
    {"node", Kw::Node},
    {"zero", Kw::Zero},
    {"local", Kw::Local},
    {"for", Kw::For},
    {"in", Kw::In},
    {"scan", Kw::Scan},
    {"forward", Kw::Forward},
    {"backward", Kw::Backward},
    {"carry", Kw::Carry},
    {"if", Kw::If},
    {"comment", Kw::Comment},
    {"noop", Kw::Noop},
    {"idx", Kw::Idx},
    {"input", Kw::Input},
    {"output", Kw::Output},
    {"inf", Kw::Inf},
    {"nan", Kw::Nan},
    {"f64", Kw::F64},
    {"f32", Kw::F32},
    {"f16", Kw::F16},
    {"bf16", Kw::BF16},
    {"i32", Kw::I32},
    {"virtual", Kw::Virtual},
    {"materialized", Kw::Materialized},
    {"requested", Kw::Requested},
}};

bool is_ident_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(unsigned char c) {
  return is_ident_start(c) || is_digit(c);
}
bool is_hex(unsigned char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
// Bytes that may not appear raw anywhere (binary data): C0 controls other than tab, CR, LF; DEL.
bool is_forbidden_control(unsigned char c) {
  return (c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f;
}

std::string describe_byte(unsigned char c) {
  if (c == 0) return "byte 0x00 (NUL)";
  return fmt::format("byte 0x{:02x}", c);
}

// What follows a '\\' that starts no valid escape.
std::string describe_escape(std::string_view src, std::size_t pos) {
  if (pos >= src.size()) return "end of file";
  auto c = static_cast<unsigned char>(src[pos]);
  if (c > 0x20 && c < 0x7f) return fmt::format("'\\{}'", static_cast<char>(c));
  return fmt::format("'\\' followed by {}", describe_byte(c));
}

}  // namespace

Kw keyword_of(std::string_view word) {
  for (const auto& k : kKeywords)
    if (word.size() == k.word.size() && word[0] == k.word[0] && word == k.word) return k.kw;
  return Kw::None;
}

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  auto cont = [&](std::size_t k) { return (byte(k) & 0xC0u) == 0x80u; };
  unsigned b0 = byte(0);
  if (i >= s.size()) return 0;
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
    unsigned hi = b0 == 0xED ? 0x9F : 0xBF;  // no surrogates
    return byte(1) >= lo && byte(1) <= hi && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;  // no overlong forms
    unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
    return byte(1) >= lo && byte(1) <= hi && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

Token Lexer::make(Tok kind, std::size_t begin, std::size_t end) const {
  Token t;
  t.kind = kind;
  t.text = src_.substr(begin, end - begin);
  t.line = line_;
  t.col = static_cast<int>(begin - line_start_) + 1;
  return t;
}

Token Lexer::error_at(std::size_t pos, std::string message) {
  error_token_ = make(Tok::Error, pos, pos);
  error_ = std::move(message);
  failed_ = true;
  return error_token_;
}

// Checks the comment byte at pos and moves past it (a whole UTF-8 sequence).
bool Lexer::check_comment_byte(std::size_t& pos, Token& error) {
  auto c = static_cast<unsigned char>(src_[pos]);
  if (c < 0x80) {
    if (is_forbidden_control(c)) {
      error = error_at(pos, fmt::format("expected text in a comment, found {}", describe_byte(c)));
      return false;
    }
    ++pos;
    return true;
  }
  std::size_t n = utf8_sequence_length(src_, pos);
  if (n == 0) {
    error = error_at(pos, fmt::format("expected UTF-8 text, found {}", describe_byte(c)));
    return false;
  }
  pos += n;
  return true;
}

bool Lexer::skip_blanks_and_comments(Token& error) {
  while (pos_ < src_.size()) {
    char c = src_[pos_];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '\n') {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (c == '#') {
      ++pos_;
      while (pos_ < src_.size() && src_[pos_] != '\n')
        if (!check_comment_byte(pos_, error)) return false;
    } else {
      return true;
    }
  }
  return true;
}

Token Lexer::check_length(Token t) {
  if (t.text.size() <= kMaxTokenBytes) return t;
  std::size_t begin = static_cast<std::size_t>(t.text.data() - src_.data());
  return error_at(begin,
                  fmt::format("expected a token of at most {} bytes, found a longer one", kMaxTokenBytes));
}

Token Lexer::lex_identifier(std::size_t begin) {
  std::size_t end = begin + 1;
  while (end < src_.size() && is_ident_char(static_cast<unsigned char>(src_[end]))) ++end;
  pos_ = end;
  Token t = check_length(make(Tok::Ident, begin, end));
  if (t.kind == Tok::Ident) t.kw = keyword_of(t.text);
  return t;
}

Token Lexer::lex_number(std::size_t begin) {
  auto digit_at = [&](std::size_t k) {
    return k < src_.size() && is_digit(static_cast<unsigned char>(src_[k]));
  };
  std::size_t end = begin;
  while (digit_at(end)) ++end;
  bool integer = true;
  // A '.' belongs to the number only before a digit, so `0..3` is 0, '..', 3.
  if (end < src_.size() && src_[end] == '.' && digit_at(end + 1)) {
    integer = false;
    ++end;
    while (digit_at(end)) ++end;
  }
  if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
    std::size_t k = end + 1;
    if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
    if (digit_at(k)) {
      integer = false;
      end = k;
      while (digit_at(end)) ++end;
    }
  }
  pos_ = end;
  Token t = check_length(make(Tok::Number, begin, end));
  t.integer = integer;
  return t;
}

Token Lexer::lex_string(std::size_t begin) {
  std::size_t pos = begin + 1;
  for (;;) {
    if (pos - begin > kMaxTokenBytes)
      return error_at(
          begin, fmt::format("expected a token of at most {} bytes, found a longer string", kMaxTokenBytes));
    if (pos >= src_.size()) return error_at(pos, "expected '\"' closing the string, found end of file");
    auto c = static_cast<unsigned char>(src_[pos]);
    if (c == '"') break;
    if (c == '\n') return error_at(pos, "expected '\"' closing the string, found end of line");
    if (c == '\\') {
      auto e = pos + 1 < src_.size() ? static_cast<unsigned char>(src_[pos + 1]) : 0u;
      if (e == '"' || e == '\\' || e == 'n' || e == 't') {
        pos += 2;
      } else if (e == 'x' && pos + 3 < src_.size() && is_hex(src_[pos + 2]) && is_hex(src_[pos + 3])) {
        pos += 4;
      } else {
        return error_at(pos, fmt::format("expected an escape (\\\" \\\\ \\n \\t \\xHH), found {}",
                                         describe_escape(src_, pos + 1)));
      }
      continue;
    }
    if (c == '\r' || is_forbidden_control(c))
      return error_at(pos, fmt::format("expected text in a string, found {}", describe_byte(c)));
    if (c >= 0x80) {
      std::size_t n = utf8_sequence_length(src_, pos);
      if (n == 0) return error_at(pos, fmt::format("expected UTF-8 text, found {}", describe_byte(c)));
      pos += n;
      continue;
    }
    ++pos;
  }
  pos_ = pos + 1;
  return make(Tok::String, begin, pos_);
}

Token Lexer::unexpected_byte(std::size_t pos) {
  auto c = static_cast<unsigned char>(src_[pos]);
  if (c >= 0x80) {
    std::size_t n = utf8_sequence_length(src_, pos);
    if (n == 0) return error_at(pos, fmt::format("expected UTF-8 text, found {}", describe_byte(c)));
    return error_at(pos, fmt::format("expected a token, found '{}'", src_.substr(pos, n)));
  }
  if (c < 0x20 || c == 0x7f)
    return error_at(pos, fmt::format("expected a token, found {}", describe_byte(c)));
  return error_at(pos, fmt::format("expected a token, found '{}'", static_cast<char>(c)));
}

Token Lexer::lex_punctuation(std::size_t begin) {
  auto followed_by = [&](char c) { return begin + 1 < src_.size() && src_[begin + 1] == c; };
  auto one = [&](Tok k) {
    pos_ = begin + 1;
    return make(k, begin, pos_);
  };
  auto two = [&](Tok k) {
    pos_ = begin + 2;
    return make(k, begin, pos_);
  };
  switch (src_[begin]) {
    case '{':
      return one(Tok::LBrace);
    case '}':
      return one(Tok::RBrace);
    case '[':
      return one(Tok::LBracket);
    case ']':
      return one(Tok::RBracket);
    case '(':
      return one(Tok::LParen);
    case ')':
      return one(Tok::RParen);
    case ',':
      return one(Tok::Comma);
    case '+':
      return one(Tok::Plus);
    case '*':
      return one(Tok::Star);
    case '=':
      return one(Tok::Assign);
    case ':':
      return followed_by('=') ? two(Tok::ColonAssign) : one(Tok::Colon);
    case '-':
      return followed_by('>') ? two(Tok::Arrow) : one(Tok::Minus);
    case '.':
      return followed_by('.') ? two(Tok::DotDot) : one(Tok::Dot);
    default:
      return unexpected_byte(begin);
  }
}

Token Lexer::next() {
  if (failed_) return error_token_;
  Token error;
  if (!skip_blanks_and_comments(error)) return error;
  if (pos_ >= src_.size()) return make(Tok::End, pos_, pos_);
  auto c = static_cast<unsigned char>(src_[pos_]);
  if (is_ident_start(c)) return lex_identifier(pos_);
  if (is_digit(c)) return lex_number(pos_);
  if (c == '"') return lex_string(pos_);
  return lex_punctuation(pos_);
}

std::string decode_string(std::string_view quoted) {
  std::string out;
  out.reserve(quoted.size());
  auto hex_value = [](char h) {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    return h - 'A' + 10;
  };
  for (std::size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    char e = quoted[++i];
    if (e == 'n') {
      out.push_back('\n');
    } else if (e == 't') {
      out.push_back('\t');
    } else if (e == 'x') {
      out.push_back(static_cast<char>(hex_value(quoted[i + 1]) * 16 + hex_value(quoted[i + 2])));
      i += 2;
    } else {
      out.push_back(e);  // '"' or '\\'
    }
  }
  return out;
}

}  // namespace fp::text
