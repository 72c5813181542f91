#pragma once
// How a diagnostic reaches a person: clang's and mlir-opt's layout, so that editors and terminals
// that already understand those tools understand ours.
//
//   a.fp:3:14: error: expected ']' after index
//     o[i = a[i] + 1
//                ^
//
// The location is `file:line:col` (or `file`, or the program name when the problem is not in a
// file); the severity follows; for a located problem the source line and a caret under the column
// follow on their own lines. With colour on, the location and message are bold, `error:` red,
// `warning:` magenta, `note:` cyan and the caret green (clang's scheme; cyan for notes as gcc
// does, since clang's bold black vanishes on dark terminals).
//
// UserError::what() stays the one-line machine form ("file:line:col: message"); this is the
// rendering the command-line program prints on standard error.
//
// The source line is looked up among the texts remembered with remember_source() (standard input
// cannot be read twice), then read back from the file; when neither works the snippet is left out.

#include <string>
#include <string_view>

namespace fp {

class UserError;

enum class Severity { Error, Warning, Note };

struct DiagnosticText {
  Severity severity = Severity::Error;
  std::string file;  // empty: not in a file (the program name is printed instead)
  int line = 0;      // 0: not located within the file
  int col = 0;       // 1-based byte column
  std::string message;
};

// Keeps `text` as the contents of `name` (e.g. "<stdin>") for source-line lookups.
void remember_source(const std::string& name, std::string text);

// Line `line` (1-based) of `file` without its line terminator, or false when it cannot be found.
bool source_line(const std::string& file, int line, std::string& out);

// The source line made printable (control bytes and invalid UTF-8 as <XX>, tabs expanded to
// multiples of 8) and the caret line under byte column `col` (1-based; past the end points just
// after the last character).
struct SourceSnippet {
  std::string line;
  std::string caret;
};
SourceSnippet make_snippet(std::string_view line, int col);

// The diagnostic as printed, ending in a newline. `program` names the tool for unlocated ones.
std::string render_diagnostic(const DiagnosticText& d, bool color, std::string_view program = "flashproof");

// Whether standard error gets colour: a terminal, NO_COLOR unset or empty (no-color.org), and
// TERM not "dumb". color_wanted is the pure rule, for tests.
bool color_wanted(bool is_terminal, const char* no_color, const char* term);
bool stderr_wants_color();

// Renders to standard error with stderr_wants_color().
void print_diagnostic(const DiagnosticText& d, std::string_view program = "flashproof");
void print_diagnostic(const UserError& e);

}  // namespace fp
