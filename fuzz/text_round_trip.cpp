// The `.fp` text property (text_round_trip.h).
#include "fuzz/text_round_trip.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <typeinfo>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "core/text_printer.h"

namespace fp::fuzz {

std::string diagnostic_class(const std::string& message) {
  const std::string head = message.substr(0, message.find(", found"));
  // A quoted name ('row_max', 'z3') is the input's, not the diagnostic's: one class for all of them.
  std::string out;
  for (std::size_t i = 0; i < head.size() && out.size() < 40; ++i) {
    const std::size_t close = head[i] == '\'' ? head.find('\'', i + 1) : std::string::npos;
    const bool name = close != std::string::npos &&
                      std::any_of(head.begin() + i + 1, head.begin() + close, [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
    if (close == std::string::npos) {
      out += head[i];
      continue;
    }
    out += name ? std::string("'…'") : head.substr(i, close - i + 1);  // a quoted token stays
    i = close;
  }
  return out;
}

std::optional<PropertyFailure> check_round_trip(const Routine& r, const std::string& name) {
  const std::string printed = print_routine(r);
  Routine back;
  try {
    back = parse_routine(printed, name + " (printed)");
  } catch (const std::exception& e) {
    return PropertyFailure{"printed-text-rejected", "print", fmt::format("the printed routine does not parse: {}", e.what()),
                           printed};
  }
  if (!equal(back, r))
    return PropertyFailure{"round-trip-changed", "print", "parsing the printed routine gives a different routine",
                           printed};
  if (print_routine(back) != printed)
    return PropertyFailure{"print-not-fixed-point", "print", "printing the reparsed routine gives another text",
                           printed};
  return std::nullopt;
}

std::optional<PropertyFailure> check_fp_text(std::string_view text, const std::string& name,
                                             std::set<std::string>* features) {
  auto feature = [&](std::string f) {
    if (features) features->insert(std::move(f));
  };
  Routine r;
  try {
    r = parse_routine(text, name);
  } catch (const UserError& e) {
    feature("outcome:rejected");
    feature("diagnostic:" + diagnostic_class(e.message()));
    if (e.code() != kExitMalformed)
      return PropertyFailure{"wrong-exit-code", std::to_string(e.code()),
                             fmt::format("a malformed text gave exit {} instead of 65: {}", e.code(), e.what()), ""};
    if (e.line() <= 0 || e.col() <= 0 || e.file() != name)
      return PropertyFailure{"unlocated-diagnostic", diagnostic_class(e.message()),
                             fmt::format("the parser's diagnostic names no line of the file: {}", e.what()), ""};
    return std::nullopt;
  } catch (const std::exception& e) {
    return PropertyFailure{"parser-exception", typeid(e).name(),
                           fmt::format("the parser threw {}: {}", typeid(e).name(), e.what()), ""};
  }
  const std::vector<Diagnostic> problems = check_routine(r);
  if (!problems.empty()) {
    feature("outcome:ill-formed");
    for (const Diagnostic& d : problems) {
      feature("check:" + diagnostic_class(d.message));
      if (d.loc.line <= 0)
        return PropertyFailure{"unlocated-check", diagnostic_class(d.message),
                               fmt::format("a checker problem has no line: {}", d.message), ""};
    }
    return std::nullopt;
  }
  feature("outcome:well-formed");
  return check_round_trip(r, name);
}

}  // namespace fp::fuzz
