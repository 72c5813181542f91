// `flashproof attention`: builds the standard attention program (forward or training step) and
// writes it in the text format (frontend/attention.h has the layout, masks and naming).
#include <CLI/CLI.hpp>
#include <memory>

#include "core/diagnostic.h"
#include "frontend/attention.h"
#include "tools/command.h"
#include "tools/option_checks.h"
#include "tools/routine_io.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"

namespace fp::cli {
namespace {

struct AttentionOptions {
  AttentionSpec spec;
  double scale = 0;
  std::string precision = "f32";
  std::string mode = "forward";
  std::string output;
};

void setup_attention(CLI::App& app) {
  auto opt = std::make_shared<AttentionOptions>();
  CLI::App* sub = app.add_subcommand(
      "attention",
      "Build the composed attention program (scores, scale, mask, softmax as max/shift/exp/sum/divide, "
      "dropout, value contraction), forward or as a training step, and write it in the .fp text format");
  AttentionSpec& s = opt->spec;
  const CLI::Validator size = integer_in<std::int64_t>(1, kMaxAttentionSize);
  sub->add_option("--batch", s.batch, "Batch size")->transform(size)->capture_default_str();
  sub->add_option("--heads", s.heads, "Number of heads")->transform(size)->capture_default_str();
  sub->add_option("--sq", s.sq, "Query length")->transform(size)->capture_default_str();
  sub->add_option("--sk", s.sk, "Key length")->transform(size)->capture_default_str();
  sub->add_option("--d", s.d, "Head width (queries and keys)")->transform(size)->capture_default_str();
  sub->add_option("--e", s.e, "Value width")->transform(size)->capture_default_str();
  sub->add_option("--dmodel", s.dmodel, "Model width of the non-leaf projections (default heads * d)")
      ->transform(size);
  sub->add_option("--scale", opt->scale,
                  "Score scale (default 1/sqrt(d)); 0, or a normal number of the precision (f32: magnitude "
                  "1.2e-38 to 3.4e38, f16: 6.1e-5 to 65504)")
      ->transform(finite());
  sub->add_option(
         "--mask", s.mask,
         "Mask: none, causal, prefix:N (first N keys always visible), padding:N (last N keys hidden), "
         "banded:W (a window of the W keys up to the diagonal) or random:SEED (a random per-cell mask, input mask_keep)")
      ->capture_default_str();
  sub->add_option("--mask-fill", s.mask_fill, "Value of a masked score: -inf, inf, nan or a finite number")
      ->capture_default_str();
  sub->add_option("--dropout", s.dropout, "Dropout rate in [0, 1); > 0 adds the input dropout_u")
      ->transform(finite_in(0, 1, false, true))
      ->capture_default_str();
  sub->add_option("--precision", opt->precision, "Precision of every node")
      ->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}))
      ->capture_default_str();
  sub->add_option("--mode", opt->mode,
                  "forward, or train (forward + backward; outputs the leaves' gradients)")
      ->check(CLI::IsMember({"forward", "train"}))
      ->capture_default_str();
  sub->add_flag(
      "--leaf,!--no-leaf", s.leaf,
      "Leaf attention on inputs q, k, v (default), or --no-leaf: self-attention with projections of x");
  sub->add_option("--layers", s.layers, "Number of stacked attention layers")
      ->transform(integer_in(1, kMaxAttentionLayers))
      ->capture_default_str();
  add_output_option(*sub, opt->output, "the routine");
  sub->callback([opt, sub] {
    AttentionSpec spec = opt->spec;
    if (sub->count("--scale") > 0) spec.scale = opt->scale;
    spec.precision = *parse_prec(opt->precision);
    spec.train = opt->mode == "train";
    write_text_output(opt->output, routine_file_text(build_attention(spec)));
  });
}

FP_REGISTER_COMMAND("attention", setup_attention);

}  // namespace
}  // namespace fp::cli
