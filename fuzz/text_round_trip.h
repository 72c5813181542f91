#pragma once
// The `.fp` text property, shared by the `parse` target (fuzz/target_parse.cpp) and the libFuzzer
// harnesses (fuzz/libfuzzer/): core only, no RapidCheck, so the harnesses can compile it alone.
//
//  - any text either parses or is rejected with a located diagnostic: UserError 65 naming the
//    file, line >= 1 — never another exception or exit code;
//  - a parsed routine the checker rejects gets located problems only;
//  - a well-formed routine round-trips: print -> parse gives an equal routine, and printing that
//    again gives the same text (printing is a fixed point of parse-then-print).
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/ir.h"

namespace fp::fuzz {

struct PropertyFailure {
  std::string kind;     // "unlocated-diagnostic", "round-trip-changed", …
  std::string where;    // the stable part of its location (a diagnostic's class, "print")
  std::string message;
  std::string printed;  // the printed routine, when the failure is about it
};

// Checks the property on `text` (labelled `name` in diagnostics); adds to `features`, when given,
// the outcome and the class of the diagnostic or checker problems the text provoked.
std::optional<PropertyFailure> check_fp_text(std::string_view text, const std::string& name,
                                             std::set<std::string>* features = nullptr);

// The round trip alone, for a routine that is well formed (a parsed or a lowered one).
std::optional<PropertyFailure> check_round_trip(const Routine& r, const std::string& name);

// The class of a diagnostic, as a feature: its text up to ", found", quoted names elided (at most
// about 40 bytes).
std::string diagnostic_class(const std::string& message);

}  // namespace fp::fuzz
