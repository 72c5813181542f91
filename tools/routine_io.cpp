#include "tools/routine_io.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/support/input_file.h"
#include "core/diagnostic_render.h"
#include "core/input_validation.h"
#include "core/npy.h"
#include "core/random_inputs.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/te_parser.h"
#include "tools/command.h"
#include "tools/standard_output.h"

namespace fp::cli {

std::string source_name(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
}

// The whole text of FILE ("-" reads standard input). Throws UserError (66).
std::string read_source(const std::string& path) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (std::cin.bad()) throw UserError(kExitMissingInput, "<stdin>", 0, 0, "cannot read standard input");
    // Standard input cannot be read twice: keep it for the source line under a diagnostic.
    remember_source("<stdin>", text);
    return text;
  }
  // Not a directory, a device or a socket; a pipe up to the cap (core/support/input_file.h).
  return read_input_file(path, InputFileRules{kMaxRoutineBytes, true, "a program (.fp or .te text)"});
}

// The routine's default name: the file's stem when it is a valid name ("attn.te" -> attn);
// "stdin" for standard input.
std::string stem_name(const std::string& path) {
  if (path == "-") return "stdin";
  std::string stem =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  stem = stem.substr(0, stem.find('.'));
  return stem;
}

namespace {

bool is_tensor_expression_file(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".te") == 0;
}

}  // namespace

Routine load_routine(const std::string& path) {
  note_input_file(path);
  // A tensor-expression file is lowered as `flashproof lower` lowers it.
  if (is_tensor_expression_file(path)) return fe::lower_source(read_source(path), path, stem_name(path), false);
  if (path != "-") return parse_routine_file(path);
  return parse_routine(read_source(path), "<stdin>");
}

Routine load_checked_routine(const std::string& path) {
  Routine r = load_routine(path);
  check_routine_or_throw(r, source_name(path));
  return r;
}

std::string routine_file_text(const Routine& r, std::optional<std::uint64_t> seed) {
  return print_routine_file(r, FileHeader{command_line(), seed});
}

TensorMap load_inputs(const Routine& r, const std::vector<std::string>& specs,
                      std::optional<std::uint64_t> seed) {
  TensorMap in;
  if (seed) in = random_inputs(r, *seed);
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError(kExitUsage, "", 0, 0, fmt::format("--input expects NAME=PATH.npy, found '{}'", spec));
    const std::string name = spec.substr(0, eq);
    const Node* n = r.find_node(name);
    if (!n || !n->is_input)
      throw UserError(kExitUsage, "", 0, 0,
                      fmt::format("--input {}: the routine has no input named '{}'", spec, name));
    const std::string path = spec.substr(eq + 1);
    note_input_file(path);
    Tensor t = read_npy(path);
    check_input_file(*n, t, path);
    in[name] = std::move(t);
  }
  return in;
}

}  // namespace fp::cli
