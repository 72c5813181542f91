#pragma once
// Node, local and loop names become C (and CUDA C++) identifiers only through this sanitizer, so no
// name from a routine reaches a compiler unescaped (and none ever reaches a shell: the JIT runs the
// compiler with an argument vector).
//
// c_identifier(prefix, name) = prefix + "_" + escape(name), where escape keeps ASCII letters and
// digits except 'Z', and writes 'Z' as "ZZ", '_' as "Z_" and every other byte as 'Z' + two
// upper-case hex digits. Properties (fuzzed by exec_names_test):
//  - the result is a valid identifier: [A-Za-z][A-Za-z0-9_]*;
//  - it is never reserved in C or C++: it does not start with '_' and never contains "__" (every
//    '_' of escape(name) follows a 'Z'), and no keyword has the form "<prefix>_...";
//  - it is injective for a fixed prefix (c_identifier_decode inverts it), and identifiers of
//    different prefixes differ in their first segment;
//  - generated code's own names (fpc_*, fpx_*, t<N>, ...) never have a one-letter prefix + '_'.
// `prefix` must be one lower-case letter (the codegen uses n: node, l: local, s: loop symbol).

#include <optional>
#include <string>
#include <string_view>

namespace fp {

std::string c_identifier(char prefix, std::string_view name);
// The name an identifier was made from, or nullopt if `id` is not an output of c_identifier.
std::optional<std::string> c_identifier_decode(std::string_view id);
// True for C11 and C++20 keywords and the alternative tokens (and, bitor, ...).
bool is_c_or_cpp_keyword(std::string_view word);

}  // namespace fp
