// `flashproof print FILE`: parse, check and print a routine in canonical text form.
#include "tools/command.h"
#include "tools/routine_io.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"

namespace fp::cli {
namespace {

void setup_print(CLI::App& app) {
  auto* sub = app.add_subcommand("print", "Parse, check and print a routine in canonical form");
  auto file = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  sub->add_option("file", *file, "Routine to print ('-' for standard input)")->required();
  add_output_option(*sub, *out, "the routine");
  sub->callback([file, out] { write_text_output(*out, routine_file_text(load_checked_routine(*file))); });
}

}  // namespace
FP_REGISTER_COMMAND("print", setup_print);
}  // namespace fp::cli
