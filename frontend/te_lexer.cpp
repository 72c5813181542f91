// Lexer of the tensor-expression language (te_lexer.h).
#include "frontend/te_lexer.h"

#include <fmt/format.h>

#include <cctype>

namespace fp::fe {

namespace {
constexpr std::size_t kMaxTokenBytes = 4096;

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}
}  // namespace

std::string describe(TeTok k) {
  switch (k) {
    case TeTok::End:
      return "end of file";
    case TeTok::Newline:
      return "end of line";
    case TeTok::Error:
      return "invalid input";
    case TeTok::Ident:
      return "a name";
    case TeTok::Number:
      return "a number";
    case TeTok::LBracket:
      return "'['";
    case TeTok::RBracket:
      return "']'";
    case TeTok::LParen:
      return "'('";
    case TeTok::RParen:
      return "')'";
    case TeTok::Comma:
      return "','";
    case TeTok::Colon:
      return "':'";
    case TeTok::Assign:
      return "'='";
    case TeTok::Plus:
      return "'+'";
    case TeTok::Minus:
      return "'-'";
    case TeTok::Star:
      return "'*'";
    case TeTok::Slash:
      return "'/'";
    case TeTok::Lt:
      return "'<'";
    case TeTok::Le:
      return "'<='";
    case TeTok::Gt:
      return "'>'";
    case TeTok::Ge:
      return "'>='";
    case TeTok::EqEq:
      return "'=='";
    case TeTok::NotEq:
      return "'!='";
    case TeTok::AndAnd:
      return "'&&'";
    case TeTok::OrOr:
      return "'||'";
    case TeTok::Bang:
      return "'!'";
  }
  return "?";
}

std::string describe(const TeToken& t) {
  if (t.kind == TeTok::Ident) return fmt::format("'{}'", t.text);
  if (t.kind == TeTok::Number) return fmt::format("number {}", t.text);
  if (t.kind == TeTok::Error) return t.text;
  return describe(t.kind);
}

void TeLexer::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

TeToken TeLexer::make(TeTok k, std::string text, int line, int col) const {
  TeToken t;
  t.kind = k;
  t.text = std::move(text);
  t.line = line;
  t.col = col;
  return t;
}

TeToken TeLexer::number(int line, int col) {
  std::size_t start = pos_;
  bool integer = true;
  while (digit(peek())) advance();
  if (peek() == '.' && digit(peek(1))) {
    integer = false;
    advance();
    while (digit(peek())) advance();
  }
  if ((peek() == 'e' || peek() == 'E') &&
      (digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && digit(peek(2))))) {
    integer = false;
    advance();
    if (peek() == '+' || peek() == '-') advance();
    while (digit(peek())) advance();
  }
  if (ident_char(peek()))
    return make(TeTok::Error,
                fmt::format("malformed number '{}{}'", text_.substr(start, pos_ - start), peek()), line, col);
  TeToken t = make(TeTok::Number, std::string(text_.substr(start, pos_ - start)), line, col);
  t.integer = integer;
  return t;
}

TeToken TeLexer::next() {
  if (done_) return last_;
  for (;;) {
    char c = peek();
    if (c == '#') {
      while (peek() != '\n' && peek() != '\0') advance();
      continue;
    }
    if (c == '\n' && depth_ == 0) break;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance();
      continue;
    }
    break;
  }
  const int line = line_, col = col_;
  const std::size_t start = pos_;
  TeToken t;
  if (pos_ >= text_.size()) {
    t = make(TeTok::End, "", line, col);
  } else if (text_[pos_] == '\0') {
    t = make(TeTok::Error, "a NUL byte", line, col);
  } else {
    char c = peek();
    auto one = [&](TeTok k) {
      advance();
      return make(k, std::string(1, c), line, col);
    };
    auto two = [&](char second, TeTok both, TeTok single) {
      advance();
      if (peek() == second) {
        advance();
        return make(both, std::string(text_.substr(start, 2)), line, col);
      }
      return make(single, std::string(1, c), line, col);
    };
    if (c == '\n') {
      t = one(TeTok::Newline);
    } else if (ident_start(c)) {
      while (ident_char(peek())) advance();
      t = make(TeTok::Ident, std::string(text_.substr(start, pos_ - start)), line, col);
    } else if (digit(c)) {
      t = number(line, col);
    } else {
      switch (c) {
        case '[':
          ++depth_;
          t = one(TeTok::LBracket);
          break;
        case '(':
          ++depth_;
          t = one(TeTok::LParen);
          break;
        case ']':
          depth_ = depth_ > 0 ? depth_ - 1 : 0;
          t = one(TeTok::RBracket);
          break;
        case ')':
          depth_ = depth_ > 0 ? depth_ - 1 : 0;
          t = one(TeTok::RParen);
          break;
        case ',':
          t = one(TeTok::Comma);
          break;
        case ':':
          t = one(TeTok::Colon);
          break;
        case '+':
          t = one(TeTok::Plus);
          break;
        case '-':
          t = one(TeTok::Minus);
          break;
        case '*':
          t = one(TeTok::Star);
          break;
        case '/':
          t = one(TeTok::Slash);
          break;
        case '=':
          t = two('=', TeTok::EqEq, TeTok::Assign);
          break;
        case '<':
          t = two('=', TeTok::Le, TeTok::Lt);
          break;
        case '>':
          t = two('=', TeTok::Ge, TeTok::Gt);
          break;
        case '!':
          t = two('=', TeTok::NotEq, TeTok::Bang);
          break;
        case '&':
          t = two('&', TeTok::AndAnd, TeTok::Error);
          if (t.kind == TeTok::Error) t.text = "'&' (did you mean '&&'?)";
          break;
        case '|':
          t = two('|', TeTok::OrOr, TeTok::Error);
          if (t.kind == TeTok::Error) t.text = "'|' (did you mean '||'?)";
          break;
        default: {
          unsigned char u = static_cast<unsigned char>(c);
          t = make(TeTok::Error,
                   (u >= 0x20 && u < 0x7f) ? fmt::format("unexpected character '{}'", c)
                                           : fmt::format("unexpected byte 0x{:02x}", u),
                   line, col);
        }
      }
    }
  }
  if (t.kind == TeTok::Ident || t.kind == TeTok::Number)
    if (t.text.size() > kMaxTokenBytes)
      t = make(TeTok::Error, "a token longer than 4096 characters", line, col);
  if (t.kind == TeTok::End || t.kind == TeTok::Error) {
    done_ = true;
    last_ = t;
  }
  return t;
}

}  // namespace fp::fe
