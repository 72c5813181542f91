// libFuzzer harness for the tensor-expression parser (frontend/te_parser.h) and its lowering, built
// with -DFLASHPROOF_LIBFUZZER=ON (docs/fuzzing.md, "libFuzzer harnesses").
//
// Properties, for every byte string:
//  - parse_program either returns a program or throws fp::UserError(kExitMalformed) located in the
//    file (line and column >= 1);
//  - lowering a parsed program (the forward routine, or the training step when the file asks for
//    one, with and without differentiable max) either gives a routine or throws
//    fp::UserError(kExitMalformed) naming the file (a request that does not fit the program);
//  - a lowered routine is well formed (the checker accepts it) and round-trips through the `.fp`
//    text (fuzz/text_round_trip.h).
// A violation aborts (fuzz/libfuzzer/harness_support.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/checker.h"
#include "core/text_printer.h"
#include "frontend/autodiff.h"
#include "frontend/lower.h"
#include "frontend/te_parser.h"
#include "fuzz/libfuzzer/harness_support.h"
#include "fuzz/text_round_trip.h"

namespace {

const std::string kFile = "fuzz.te";

void check_lowered(const fp::Routine& routine) {
  const auto diagnostics = fp::check_routine(routine);
  if (!diagnostics.empty())
    fp::fuzz::harness_fail("a lowered routine is not well formed",
                           diagnostics.front().message + "\n" + fp::print_routine(routine));
  if (auto f = fp::fuzz::check_round_trip(routine, "lowered.fp"))
    fp::fuzz::harness_fail(f->kind, f->message + "\n" + f->printed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fp::fuzz::InputScope scope;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  fp::fe::ParsedProgram parsed;
  try {
    parsed = fp::fe::parse_program(text, kFile);
  } catch (...) {
    fp::fuzz::expect_malformed_input_error(kFile, true);
    return 0;
  }
  const int variants = parsed.grad ? 2 : 1;
  for (int v = 0; v < variants; ++v) {
    fp::Routine routine;
    try {
      if (!parsed.grad) {
        routine = fp::fe::lower(parsed.program);
      } else {
        fp::fe::GradRequest req = *parsed.grad;
        req.differentiable_max = v == 1;
        routine = fp::fe::lower_training_step(parsed.program, req, kFile);
      }
    } catch (...) {
      fp::fuzz::expect_malformed_input_error(kFile, false);
      continue;
    }
    check_lowered(routine);
  }
  return 0;
}
