// What the libFuzzer harnesses share (harness_support.h).
#include "fuzz/libfuzzer/harness_support.h"

#include <errno.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/diagnostic.h"

namespace fp::fuzz {
bool g_in_input = false;  // read by __wrap__Exit below

InputScope::InputScope() { g_in_input = true; }
InputScope::~InputScope() { g_in_input = false; }

void harness_fail(std::string_view what, const std::string& detail) {
  std::fprintf(stderr, "%s: %.*s: %s\n", program_invocation_short_name, static_cast<int>(what.size()), what.data(),
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

void expect_malformed_input_error(const std::string& file, bool located) {
  try {
    throw;
  } catch (const UserError& e) {
    if (e.code() != kExitMalformed) harness_fail("an error with an exit code other than 65", e.what());
    if (e.file() != file || (located && (e.line() < 1 || e.col() < 1)))
      harness_fail("an error not located in the input", e.what());
  } catch (const std::exception& e) {
    harness_fail("an exception other than fp::UserError", e.what());
  }
}

}  // namespace fp::fuzz

extern "C" [[noreturn]] void __real__Exit(int status);
extern "C" [[noreturn]] void __wrap__Exit(int status) {
  if (fp::fuzz::g_in_input && status == fp::kExitInternal) {
    sigset_t blocked;
    sigemptyset(&blocked);
    if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) == 0 && !sigismember(&blocked, SIGALRM)) std::abort();
  }
  __real__Exit(status);
}
