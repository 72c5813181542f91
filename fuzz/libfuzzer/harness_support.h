#pragma once
// What the three libFuzzer harnesses share (docs/fuzzing.md, "libFuzzer harnesses").
//
// A violated property aborts (harness_fail), so libFuzzer writes the input as crash-<sha1>. An
// internal error (FP_INTERNAL_CHECK ends the process with _Exit(70)) would stop libFuzzer without
// saving the input: the harnesses link with -Wl,--wrap=_Exit, and while an input runs
// (InputScope) an exit 70 becomes an abort — except from libFuzzer's own timeout, which exits
// through _Exit from its SIGALRM handler (SIGALRM is blocked there).
#include <string>
#include <string_view>

namespace fp::fuzz {

// Marks the input in hand for __wrap__Exit.
class InputScope {
 public:
  InputScope();
  ~InputScope();
  InputScope(const InputScope&) = delete;
  InputScope& operator=(const InputScope&) = delete;
};

// Prints "<harness>: <what>: <detail>" and aborts.
[[noreturn]] void harness_fail(std::string_view what, const std::string& detail);

// A reader's rejection must be UserError 65 naming `file` (and a line and column >= 1 when
// `located`); anything else fails the harness. Call inside a catch block.
void expect_malformed_input_error(const std::string& file, bool located);

}  // namespace fp::fuzz
