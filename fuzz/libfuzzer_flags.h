#pragma once
// `flashproof fuzz` takes libFuzzer's flags as libFuzzer spells them: one dash, an underscore
// name and `=value` (-runs=100, -max_total_time=60). CLI11 reads one-dash words as short flags,
// so main() respells them before parsing: under the `fuzz` subcommand, -NAME=VALUE and -NAME for
// a known libFuzzer flag NAME become --NAME=VALUE and --NAME. Nothing else is touched.
#include <string>
#include <vector>

namespace fp::fuzz {

// The flags fuzz accepts with libFuzzer's spelling.
const std::vector<std::string>& libfuzzer_flag_names();

// argv (program name first) with the fuzz subcommand's libFuzzer flags respelled.
std::vector<std::string> respell_libfuzzer_flags(int argc, char** argv);

}  // namespace fp::fuzz
