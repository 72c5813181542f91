// `flashproof lower`: lowers a tensor-expression file (docs/frontend.md) to the loop IR and writes
// it in the .fp text format — the forward routine, or the training step when the file has `grad`
// and `loss` statements.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "core/diagnostic.h"
#include "core/diagnostic_render.h"
#include "frontend/te_parser.h"
#include "tools/command.h"
#include "tools/routine_io.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"

namespace fp::cli {
namespace {

struct LowerOptions {
  std::string input;
  std::string output;
  bool differentiable_max = false;
};

std::string read_source(const std::string& path) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (std::cin.bad()) throw UserError(kExitMissingInput, "<stdin>", 0, 0, "cannot read standard input");
    // Standard input cannot be read twice: keep it for the source line under a diagnostic.
    remember_source("<stdin>", text);
    return text;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(kExitMissingInput, path, 0, 0, "cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UserError(kExitMissingInput, path, 0, 0, "cannot read the file");
  return ss.str();
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

void setup_lower(CLI::App& app) {
  auto opt = std::make_shared<LowerOptions>();
  CLI::App* sub = app.add_subcommand(
      "lower",
      "Lower a tensor-expression file (.te, see docs/frontend.md) to the loop IR: one nest per assignment, "
      "a zeroing or -inf fill before each reduction; with 'grad'/'loss' lines, the training step");
  sub->add_option("FILE", opt->input, "Tensor-expression source file ('-' reads standard input)")->required();
  add_output_option(*sub, opt->output, "the routine");
  sub->add_flag("--differentiable-max", opt->differentiable_max,
                "Differentiate max reductions (grad_x += grad_m * eq(x, m)); default: a max is a constant");
  sub->callback([opt] {
    const std::string text = read_source(opt->input);
    const std::string name = opt->input == "-" ? "<stdin>" : opt->input;
    Routine r = fe::lower_source(text, name, stem_name(opt->input), opt->differentiable_max);
    write_text_output(opt->output, routine_file_text(r));
  });
}

FP_REGISTER_COMMAND("lower", setup_lower);

}  // namespace
}  // namespace fp::cli
