// libFuzzer harness for the `.fp` parser (core/text_parser.h), built with
// -DFLASHPROOF_LIBFUZZER=ON (docs/fuzzing.md, "libFuzzer harnesses").
//
// Properties, for every byte string:
//  - parse_routine either returns a routine or throws fp::UserError(kExitMalformed) located in the
//    file (line and column >= 1); any other exception, code or an unlocated error is a bug;
//  - a parsed routine the checker rejects gets located diagnostics only;
//  - a parsed routine the checker accepts round-trips: print -> parse gives an equal routine, and
//    printing is a fixed point of parse-then-print (tests/unit/text_format_property_test.cpp).
// A violated property aborts, so libFuzzer writes the input as crash-<sha1>. An internal error
// (FP_INTERNAL_CHECK: exit 70 through _Exit) is turned into an abort too (see __wrap__Exit below;
// the CMakeLists links with -Wl,--wrap=_Exit).

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

namespace {

bool g_in_target = false;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fp_parser_fuzzer: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

// fp::internal_failure ends the process with _Exit(70): libFuzzer would stop without saving the
// input. While the target runs, that exit becomes an abort (a "deadly signal" with an artifact).
// libFuzzer's own timeout also exits through _Exit (with -timeout_exitcode, 70 by default), from
// its SIGALRM handler: with SIGALRM blocked (we are inside that handler) the exit passes through.
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
  const std::string file = "fuzz.fp";
  g_in_target = true;
  fp::Routine routine;
  try {
    routine = fp::parse_routine(text, file);
  } catch (const fp::UserError& e) {
    if (e.code() != fp::kExitMalformed) fail("parse error with an exit code other than 65", e.what());
    if (e.file() != file || e.line() < 1 || e.col() < 1) fail("parse error not located in the file", e.what());
    g_in_target = false;
    return 0;
  } catch (const std::exception& e) {
    fail("parse threw something other than fp::UserError", e.what());
  }

  const auto diagnostics = fp::check_routine(routine);
  for (const auto& d : diagnostics)
    if (d.loc.line < 1 || d.loc.col < 1) fail("checker diagnostic without a location", d.message);

  if (diagnostics.empty()) {
    try {
      const std::string printed = fp::print_routine(routine);
      const fp::Routine back = fp::parse_routine(printed, "printed.fp");
      if (!fp::equal(back, routine)) fail("print -> parse gives a different routine", printed);
      const std::string again = fp::print_routine(back);
      if (again != printed) fail("printing is not a fixed point of parse-then-print", printed + "\n---\n" + again);
      fp::check_routine_or_throw(back, "printed.fp");
    } catch (const std::exception& e) {
      fail("a well-formed parsed routine does not round-trip", e.what());
    }
  }
  g_in_target = false;
  return 0;
}
