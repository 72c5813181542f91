// libFuzzer harness for the tensor-expression parser (frontend/te_parser.h) and its lowering, built
// with -DFLASHPROOF_LIBFUZZER=ON (docs/fuzzing.md, "libFuzzer harnesses").
//
// Properties, for every byte string:
//  - parse_program either returns a program or throws fp::UserError(kExitMalformed) located in the
//    file (line and column >= 1);
//  - lowering a parsed program (the forward routine, or the training step when the file asks for
//    one, with and without differentiable max) either gives a routine or throws
//    fp::UserError(kExitMalformed) naming the file (a request that does not fit the program);
//  - a lowered routine is well-formed (the checker accepts it) and round-trips through the `.fp`
//    text: print -> parse gives an equal routine.
// A violated property aborts, so libFuzzer writes the input as crash-<sha1>. An internal error
// (exit 70 through _Exit) is turned into an abort (-Wl,--wrap=_Exit; see fp_parser_fuzzer.cpp).

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/ir.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/autodiff.h"
#include "frontend/lower.h"
#include "frontend/te_parser.h"

namespace {

bool g_in_target = false;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "te_parser_fuzzer: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

const std::string kFile = "fuzz.te";

// A lowered routine must pass the checker and round-trip through the text format.
void check_lowered(const fp::Routine& routine) {
  const auto diagnostics = fp::check_routine(routine);
  if (!diagnostics.empty())
    fail("a lowered routine is not well-formed", diagnostics.front().message + "\n" + fp::print_routine(routine));
  const std::string printed = fp::print_routine(routine);
  fp::Routine back;
  try {
    back = fp::parse_routine(printed, "lowered.fp");
  } catch (const std::exception& e) {
    fail("a lowered routine's text does not parse", std::string(e.what()) + "\n" + printed);
  }
  if (!fp::equal(back, routine)) fail("print -> parse of a lowered routine gives a different routine", printed);
}

}  // namespace

// See fp_parser_fuzzer.cpp: fp::internal_failure's _Exit(70) becomes an abort while the target
// runs, except from libFuzzer's own timeout (inside its SIGALRM handler).
extern "C" [[noreturn]] void __real__Exit(int status);
extern "C" [[noreturn]] void __wrap__Exit(int status) {
  if (g_in_target && status == fp::kExitInternal) {
    sigset_t blocked;
    sigemptyset(&blocked);
    if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) == 0 && !sigismember(&blocked, SIGALRM)) std::abort();
  }
  __real__Exit(status);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  g_in_target = true;
  fp::fe::ParsedProgram parsed;
  try {
    parsed = fp::fe::parse_program(text, kFile);
  } catch (const fp::UserError& e) {
    if (e.code() != fp::kExitMalformed) fail("parse error with an exit code other than 65", e.what());
    if (e.file() != kFile || e.line() < 1 || e.col() < 1) fail("parse error not located in the file", e.what());
    g_in_target = false;
    return 0;
  } catch (const std::exception& e) {
    fail("parse threw something other than fp::UserError", e.what());
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
    } catch (const fp::UserError& e) {
      if (e.code() != fp::kExitMalformed) fail("lowering error with an exit code other than 65", e.what());
      if (e.file() != kFile) fail("lowering error not naming the file", e.what());
      continue;
    } catch (const std::exception& e) {
      fail("lowering threw something other than fp::UserError", e.what());
    }
    check_lowered(routine);
  }
  g_in_target = false;
  return 0;
}
