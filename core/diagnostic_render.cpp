// Rendering diagnostics for people (core/diagnostic_render.h).
#include "core/diagnostic_render.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "core/diagnostic.h"

namespace fp {

namespace {

constexpr const char* kBold = "\033[1m";
constexpr const char* kRed = "\033[1;31m";
constexpr const char* kMagenta = "\033[1;35m";
constexpr const char* kCyan = "\033[1;36m";
constexpr const char* kGreen = "\033[1;32m";
constexpr const char* kReset = "\033[0m";

std::mutex& sources_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::string>& sources() {
  static std::map<std::string, std::string> s;
  return s;
}

bool nth_line(std::string_view text, int line, std::string& out) {
  std::size_t begin = 0;
  for (int k = 1; k < line; ++k) {
    const std::size_t nl = text.find('\n', begin);
    if (nl == std::string_view::npos) return false;
    begin = nl + 1;
  }
  if (begin > text.size() || (begin == text.size() && line > 1 && text.back() == '\n')) return false;
  std::string_view rest = text.substr(begin);
  out = std::string(rest.substr(0, rest.find('\n')));
  if (!out.empty() && out.back() == '\r') out.pop_back();
  return true;
}

// Length of the valid UTF-8 sequence starting at s[i] (2 to 4), or 0.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t n = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 0;
  if (n == 0 || b >= 0xF5 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

const char* severity_word(Severity s) {
  switch (s) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Note:
      return "note";
  }
  return "error";
}

const char* severity_colour(Severity s) {
  switch (s) {
    case Severity::Error:
      return kRed;
    case Severity::Warning:
      return kMagenta;
    case Severity::Note:
      return kCyan;
  }
  return kRed;
}

}  // namespace

void remember_source(const std::string& name, std::string text) {
  std::lock_guard<std::mutex> lock(sources_mutex());
  sources()[name] = std::move(text);
}

bool source_line(const std::string& file, int line, std::string& out) {
  if (line < 1 || file.empty()) return false;
  {
    std::lock_guard<std::mutex> lock(sources_mutex());
    auto it = sources().find(file);
    if (it != sources().end()) return nth_line(it->second, line, out);
  }
  // Only a regular file is read again: a FIFO would wait for a writer, a device never end.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return false;
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::string text;
  for (int k = 1; k <= line; ++k)
    if (!std::getline(in, text)) return false;
  if (!text.empty() && text.back() == '\r') text.pop_back();
  out = std::move(text);
  return true;
}

SourceSnippet make_snippet(std::string_view line, int col) {
  SourceSnippet s;
  std::size_t caret_at = std::string::npos;  // display column of byte col-1
  std::size_t width = 0;
  for (std::size_t i = 0; i < line.size();) {
    if (static_cast<int>(i) == col - 1) caret_at = width;
    const auto b = static_cast<unsigned char>(line[i]);
    if (b == '\t') {
      const std::size_t to = (width / 8 + 1) * 8;
      s.line.append(to - width, ' ');
      width = to;
      ++i;
    } else if (b >= 0x20 && b < 0x7F) {
      s.line += static_cast<char>(b);
      ++width;
      ++i;
    } else if (const std::size_t n = b >= 0x80 ? utf8_sequence(line, i) : 0; n > 0) {
      s.line.append(line.substr(i, n));
      ++width;
      // A column inside a multibyte character points at the character.
      for (std::size_t k = 1; k < n; ++k)
        if (static_cast<int>(i + k) == col - 1) caret_at = width - 1;
      i += n;
    } else {
      s.line += fmt::format("<{:02X}>", b);
      width += 4;
      ++i;
    }
  }
  if (caret_at == std::string::npos) caret_at = width;
  s.caret = std::string(caret_at, ' ') + "^";
  return s;
}

std::string render_diagnostic(const DiagnosticText& d, bool color, std::string_view program) {
  std::string where;
  if (d.file.empty())
    where = std::string(program);
  else if (d.line == 0)
    where = d.file;
  else
    where = fmt::format("{}:{}:{}", d.file, d.line, d.col);
  const char* bold = color ? kBold : "";
  const char* sev = color ? severity_colour(d.severity) : "";
  const char* reset = color ? kReset : "";
  std::string out = fmt::format("{}{}: {}{}: {}{}{}{}\n", bold, where, sev, severity_word(d.severity), reset,
                                bold, d.message, reset);
  std::string text;
  if (d.line > 0 && source_line(d.file, d.line, text)) {
    const SourceSnippet s = make_snippet(text, d.col);
    out += fmt::format("{}\n{}{}{}\n", s.line, color ? kGreen : "", s.caret, reset);
  }
  return out;
}

bool color_wanted(bool is_terminal, const char* no_color, const char* term) {
  if (!is_terminal) return false;
  if (no_color && *no_color) return false;
  return !(term && std::string_view(term) == "dumb");
}

bool stderr_wants_color() {
  return color_wanted(::isatty(STDERR_FILENO) != 0, std::getenv("NO_COLOR"), std::getenv("TERM"));
}

void print_diagnostic(const DiagnosticText& d, std::string_view program) {
  const std::string text = render_diagnostic(d, stderr_wants_color(), program);
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

void print_diagnostic(const UserError& e) {
  print_diagnostic(DiagnosticText{Severity::Error, e.file(), e.line(), e.col(), e.message()});
}

}  // namespace fp
