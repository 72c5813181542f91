#pragma once
// The `.fp` printer: routines, statements, expressions and indices to the text format of
// docs/text-format.md, and the header comment every file flashproof writes starts with.
// parse_routine(print_routine(r)) is structurally equal to r, and printing is a fixed point of
// parse-then-print, for every routine whose names are valid identifiers that are not keywords.

#include <cstdint>
#include <optional>
#include <string>

#include "core/ir.h"

namespace fp {

// The producing command line and, when one was used, the random seed.
struct FileHeader {
  std::string command;
  std::optional<std::uint64_t> seed;
};

// "# flashproof <VERSION>\n# command: <command>\n" then "# seed: N\n" when a seed is given.
// Control characters and invalid UTF-8 in the command are escaped (\n, \t, \xHH) so the header
// stays one readable comment line each.
std::string format_file_header(const FileHeader& h);

// The routine text, no header, ending in "}\n".
std::string print_routine(const Routine& r);
// format_file_header(h) + print_routine(r).
std::string print_routine_file(const Routine& r, const FileHeader& h);

// One expression, e.g. `add.f32(x[i, 0], 1:f32)`.
std::string print_expr(const Expr& e);
// The canonical form of an index, e.g. `4*tb + j - 1`, `-j + 2`, `3`.
std::string print_index(const Index& i);
// One statement (a Seq prints its statements one after another, braces never) indented by
// `indent` levels of two spaces; every line ends in '\n'.
std::string print_stmt(const Stmt& s, int indent = 0);

// A constant's spelling without its precision: shortest decimal that reads back to the same
// double, `inf`, `-inf`, `nan`, `-0`; an i32 constant as an integer.
std::string print_constant(double value, Prec prec);
// A comment statement's text as a quoted string with escapes.
std::string print_string_literal(const std::string& text);

}  // namespace fp
