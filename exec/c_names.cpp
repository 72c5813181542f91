// The identifier sanitizer (exec/c_names.h).

#include "exec/c_names.h"

#include <algorithm>
#include <array>

namespace fp {

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_alnum_ascii(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

std::string c_identifier(char prefix, std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out += prefix;
  out += '_';
  for (char c : name) {
    if (c == 'Z') {
      out += "ZZ";
    } else if (c == '_') {
      out += "Z_";
    } else if (is_alnum_ascii(c)) {
      out += c;
    } else {
      const auto u = static_cast<unsigned char>(c);
      out += 'Z';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::optional<std::string> c_identifier_decode(std::string_view id) {
  if (id.size() < 2 || !(id[0] >= 'a' && id[0] <= 'z') || id[1] != '_') return std::nullopt;
  std::string name;
  for (std::size_t i = 2; i < id.size(); ++i) {
    const char c = id[i];
    if (c == 'Z') {
      if (i + 1 >= id.size()) return std::nullopt;
      const char d = id[i + 1];
      if (d == 'Z' || d == '_') {
        name += d;
        ++i;
        continue;
      }
      if (i + 2 >= id.size()) return std::nullopt;
      const int hi = hex_value(d), lo = hex_value(id[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      const char byte = static_cast<char>(hi * 16 + lo);
      // Only bytes the encoder escapes may appear escaped (keeps the decoding unique).
      if (is_alnum_ascii(byte) || byte == '_') return std::nullopt;
      name += byte;
      i += 2;
    } else if (is_alnum_ascii(c)) {
      name += c;
    } else {
      return std::nullopt;
    }
  }
  return name;
}

bool is_c_or_cpp_keyword(std::string_view w) {
  static constexpr std::array<std::string_view, 113> kWords = {"_Alignas",
                                                               "_Alignof",
                                                               "_Atomic",
                                                               "_Bool",
                                                               "_Complex",
                                                               "_Generic",
                                                               "_Imaginary",
                                                               "_Noreturn",
                                                               "_Static_assert",
                                                               "_Thread_local",
                                                               "alignas",
                                                               "alignof",
                                                               "and",
                                                               "and_eq",
                                                               "asm",
                                                               "atomic_cancel",
                                                               "atomic_commit",
                                                               "atomic_noexcept",
                                                               "auto",
                                                               "bitand",
                                                               "bitor",
                                                               "bool",
                                                               "break",
                                                               "case",
                                                               "catch",
                                                               "char",
                                                               "char16_t",
                                                               "char32_t",
                                                               "char8_t",
                                                               "class",
                                                               "co_await",
                                                               "co_return",
                                                               "co_yield",
                                                               "compl",
                                                               "concept",
                                                               "const",
                                                               "const_cast",
                                                               "consteval",
                                                               "constexpr",
                                                               "constinit",
                                                               "continue",
                                                               "decltype",
                                                               "default",
                                                               "delete",
                                                               "do",
                                                               "double",
                                                               "dynamic_cast",
                                                               "else",
                                                               "enum",
                                                               "explicit",
                                                               "export",
                                                               "extern",
                                                               "false",
                                                               "float",
                                                               "for",
                                                               "friend",
                                                               "goto",
                                                               "if",
                                                               "inline",
                                                               "int",
                                                               "long",
                                                               "mutable",
                                                               "namespace",
                                                               "new",
                                                               "noexcept",
                                                               "not",
                                                               "not_eq",
                                                               "nullptr",
                                                               "operator",
                                                               "or",
                                                               "or_eq",
                                                               "private",
                                                               "protected",
                                                               "public",
                                                               "reflexpr",
                                                               "register",
                                                               "reinterpret_cast",
                                                               "requires",
                                                               "restrict",
                                                               "return",
                                                               "short",
                                                               "signed",
                                                               "sizeof",
                                                               "static",
                                                               "static_assert",
                                                               "static_cast",
                                                               "struct",
                                                               "switch",
                                                               "synchronized",
                                                               "template",
                                                               "this",
                                                               "thread_local",
                                                               "throw",
                                                               "true",
                                                               "try",
                                                               "typedef",
                                                               "typeid",
                                                               "typename",
                                                               "union",
                                                               "unsigned",
                                                               "using",
                                                               "virtual",
                                                               "void",
                                                               "volatile",
                                                               "wchar_t",
                                                               "while",
                                                               "xor",
                                                               "xor_eq",
                                                               "__restrict__",
                                                               "__global__",
                                                               "__device__"};
  return std::find(kWords.begin(), kWords.end(), w) != kWords.end();
}

}  // namespace fp
