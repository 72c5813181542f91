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
