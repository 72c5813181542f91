#pragma once
// The `.fp` parser: text (docs/text-format.md) to a Routine. Robust against arbitrary input: it
// never crashes or hangs, recursion is capped at kMaxNesting levels, the routine it builds at
// kMaxRoutineBytes of memory, time is linear in the text, and the first problem is thrown as
// fp::UserError(kExitMalformed, file, line, col, "expected X, found Y").
//
// The parser resolves exactly what it needs to build the IR: a node read `x[...]` takes the
// node's precision and a local read `x` the local's (locals are lexically scoped: `local`
// statements to the rest of their statement list, scan carries to the scan body), so an unknown
// node or local in a read is a parse error. Every other scope and type rule (loop symbols, the
// node of a store, bounds, the scan contract) is the well-formedness checker's.

#include <cstddef>
#include <string>
#include <string_view>

#include "core/ir.h"

namespace fp {

// Deepest nesting of blocks and expression operations the parser accepts.
inline constexpr int kMaxNesting = 256;
// Most cells one node may have.
inline constexpr std::int64_t kMaxNodeCells = std::int64_t{1} << 40;
// Most memory the parsed routine may take (statements, expressions, indices, extents, names),
// counted as it is built: no input, however shaped, makes the parser allocate more, and a text past
// it is an error located where the budget ran out. The IR costs 10 to 20 bytes per byte of typical
// text (a 200-byte statement for `zero a`), so this admits routines of about 4 MB of text.
inline constexpr std::size_t kMaxRoutineBytes = std::size_t{64} << 20;

// Parses one routine. file_name only labels errors. Sets SrcLoc (line, col: 1-based, columns
// in bytes) on every Node, Stmt and Expr it creates; the body Seq is located at the routine's '{'.
Routine parse_routine(std::string_view text, const std::string& file_name);

// Reads and parses the file at path; a missing or unreadable file is
// UserError(kExitMissingInput, path, 0, 0, "cannot open ...").
Routine parse_routine_file(const std::string& path);

// True for the reserved words of the format, which cannot name anything.
bool is_text_keyword(std::string_view word);
// True when word can name a routine, node, local, loop symbol or attr: an identifier that is
// not a keyword.
bool is_valid_text_name(std::string_view word);

}  // namespace fp
