#pragma once
// Where a subcommand's report or routine goes: the file -o names, or standard output. Standard
// output is an output like any file: a report written there and lost (a full disk behind a
// redirection, /dev/full, a closed descriptor) is exit 74 (EX_IOERR), never a silent 0.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fp::cli {

// The files a command reads (routines, programs, input tensors: tools/routine_io.cpp notes them)
// and the files it writes: an output that names one of this run's inputs is refused (UserError
// 73) before it is written — `-o` equal to the input would destroy it; write_text_output checks
// it. A command with several outputs calls check_distinct_outputs first: two outputs naming one
// file (`compile -o X --abi X` would keep only the last) is UserError 73 before anything runs.
// Devices and FIFOs (/dev/null, /dev/stdout) are never refused.
void note_input_file(const std::string& path);
void check_output_path(const std::string& path);
// (option, path) pairs; empty paths are absent options.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// Writes `text` to `path` through an AtomicFile (whole or not at all; 73/74 naming the path on
// failure), or to standard output when path is empty or "-" (74 when that write fails).
void write_text_output(const std::string& path, const std::string& text);

// Writes `text` to standard output and flushes it; a failure is UserError 74 naming
// "<standard output>".
void write_standard_output(std::string_view text);

// At exit: flushes standard output (everything printed through stdio, fmt::print and std::cout)
// and returns the message for a write that failed at any point of the run, or nullopt.
std::optional<std::string> standard_output_failure();

}  // namespace fp::cli
