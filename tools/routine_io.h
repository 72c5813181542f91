#pragma once
// Loading and writing routines for the subcommands: every file read is parsed and checked, every
// file written starts with the header comment (tool version, producing command, seed).

#include <optional>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"

namespace fp::cli {

// Parses and well-formedness-checks FILE ("-" reads standard input). Throws UserError (65/66).
Routine load_checked_routine(const std::string& path);

// Parses FILE ("-" reads standard input) without checking it; a FILE named *.te is a
// tensor-expression file (docs/frontend.md), lowered as `flashproof lower` lowers it. Throws
// UserError (65/66).
Routine load_routine(const std::string& path);

// The whole text of FILE ("-" reads standard input, kept for diagnostics). Throws UserError (66).
std::string read_source(const std::string& path);

// The routine's default name for FILE: its stem ("attn.te" -> attn); "stdin" for standard input.
std::string stem_name(const std::string& path);

// The name messages use for FILE: "<stdin>" for "-".
std::string source_name(const std::string& path);

// The routine's inputs: random from `seed` when given, then each NAME=PATH.npy in `specs` read
// over them. A malformed spec or a name that is not an input is a usage error (64); the file's
// own errors are npy's (65/66); a file whose dtype or shape does not fit the input is 65 naming
// the file, the input and both types (core/input_validation.h).
TensorMap load_inputs(const Routine& r, const std::vector<std::string>& specs,
                      std::optional<std::uint64_t> seed);

// The routine in the text format with the header comment for this invocation.
std::string routine_file_text(const Routine& r, std::optional<std::uint64_t> seed = std::nullopt);

}  // namespace fp::cli
