// `flashproof print FILE`: parse, check and print a routine in canonical text form.
#include "tools/command.h"
#include "tools/routine_io.h"

namespace fp::cli {
namespace {

void setup_print(CLI::App& app) {
  auto* sub = app.add_subcommand("print", "Parse, check and print a routine in canonical form");
  auto file = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  sub->add_option("file", *file, "Routine to print ('-' for standard input)")->required();
  sub->add_option("-o,--output", *out, "Write here instead of standard output");
  sub->callback([file, out] { write_text_output(*out, routine_file_text(load_checked_routine(*file))); });
}

}  // namespace
FP_REGISTER_COMMAND("print", setup_print);
}  // namespace fp::cli
