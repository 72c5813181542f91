// The `parse` target: the .fp text format under valid and mutated text.
//
// Property: a text either parses or is rejected with a located diagnostic (UserError 65 with a
// line) — never another exception, a crash or a hang (-timeout). A text that parses is either
// well formed or every problem the checker reports is located; a well-formed routine prints to a
// text that parses back to an equal routine, and printing that again gives the same text.
//
// Inputs: printed random routines (fuzz/random_routine.h), printed attention programs, and both
// through fuzz/text_mutation.h's edits (3 in 4 inputs are mutated).
#include <fmt/format.h>

#include <typeinfo>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/attention.h"
#include "fuzz/random_routine.h"
#include "fuzz/target.h"
#include "fuzz/text_mutation.h"

namespace fp::fuzz {
namespace {

rc::Gen<std::string> valid_text() {
  return rc::gen::oneOf(rc::gen::map(gen_routine(), [](const Routine& r) { return print_routine(r); }),
                        rc::gen::exec([] {
                          AttentionSpec s;
                          s.sq = *rc::gen::inRange(1, 6);
                          s.sk = *rc::gen::inRange(1, 6);
                          s.d = s.e = *rc::gen::inRange(1, 4);
                          s.mask = *rc::gen::element<std::string>("none", "causal", "padding:1");
                          s.train = *rc::gen::element(false, true);
                          return print_routine(build_attention(s));
                        }));
}

rc::Gen<std::string> parse_input() {
  return rc::gen::weightedOneOf<std::string>({{1, valid_text()}, {3, gen_malformed_text(valid_text())}});
}

// The first two words of a diagnostic: its class, as a feature ("expected ']',", "unknown node").
std::string diagnostic_class(const std::string& message) {
  std::size_t end = 0;
  for (int words = 0; words < 2 && end != std::string::npos; ++words) end = message.find(' ', end + (words > 0));
  std::string head = message.substr(0, end);
  if (head.size() > 40) head.resize(40);
  return head;
}

Execution run_parse(const std::string& input, const std::string& name) {
  Execution x;
  auto fail = [&](const char* kind, std::string where, std::string message) {
    x.finding = Finding{kind, std::move(where), std::move(message), {}};
    return x;
  };
  Routine r;
  try {
    r = parse_routine(input, name);
  } catch (const UserError& e) {
    x.features.insert("outcome:rejected");
    x.features.insert("diagnostic:" + diagnostic_class(e.message()));
    if (e.code() != kExitMalformed)
      return fail("wrong-exit-code", std::to_string(e.code()),
                  fmt::format("a malformed text gave exit {} instead of 65: {}", e.code(), e.what()));
    if (e.line() <= 0 || e.file() != name)
      return fail("unlocated-diagnostic", diagnostic_class(e.message()),
                  fmt::format("the parser's diagnostic names no line of the file: {}", e.what()));
    return x;
  } catch (const std::exception& e) {
    return fail("parser-exception", typeid(e).name(), fmt::format("the parser threw {}: {}", typeid(e).name(), e.what()));
  }
  const std::vector<Diagnostic> problems = check_routine(r);
  if (!problems.empty()) {
    x.features.insert("outcome:ill-formed");
    for (const Diagnostic& d : problems) {
      x.features.insert("check:" + diagnostic_class(d.message));
      if (d.loc.line <= 0)
        return fail("unlocated-check", diagnostic_class(d.message),
                    fmt::format("a checker problem has no line: {}", d.message));
    }
    return x;
  }
  x.features.insert("outcome:well-formed");
  const std::string printed = print_routine(r);
  Routine back;
  try {
    back = parse_routine(printed, name + " (printed)");
  } catch (const std::exception& e) {
    x.finding = Finding{"printed-text-rejected", "print", fmt::format("the printed routine does not parse: {}", e.what()),
                        {{"printed.fp", printed}}};
    return x;
  }
  if (!equal(back, r)) {
    x.finding = Finding{"round-trip-changed", "print",
                        "parsing the printed routine gives a different routine (printed.fp holds the text)",
                        {{"printed.fp", printed}}};
    return x;
  }
  if (print_routine(back) != printed)
    return fail("print-not-fixed-point", "print", "printing the reparsed routine gives another text");
  return x;
}

}  // namespace

Target parse_target() {
  Target t;
  t.name = "parse";
  t.description = ".fp text -> check -> print -> parse round-trips; mutated text gets a located diagnostic (65)";
  t.input_kind = ".fp text";
  t.generate = [](std::uint64_t seed) { return draw(parse_input(), seed); };
  t.run = run_parse;
  t.expected_rate = 2000;
  return t;
}

}  // namespace fp::fuzz
