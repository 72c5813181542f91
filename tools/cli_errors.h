#pragma once
// How a command line CLI11 rejects is reported: one diagnostic in the same layout as every other
// error (core/diagnostic_render.h), a "did you mean" for a mistyped subcommand or option, and the
// usage exit code.
//
//   flashproof: error: unknown command 'verfy'; did you mean 'verify'?
//   flashproof: error: unknown option '--timout' for 'verify'; did you mean '--timeout'?
//   flashproof: error: --timeout: expected seconds > 0 and <= 1e+06, found 'nan'
//   flashproof: note: run 'flashproof verify --help' for the options

#include <CLI/CLI.hpp>

namespace fp::cli {

// Prints what `e` says (help and version go to standard output as CLI11 prints them) and returns
// the exit code: 0 for --help/--version, 64 (usage) otherwise.
int report_parse_error(CLI::App& app, const CLI::ParseError& e);

}  // namespace fp::cli
