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

#include "core/text_printer.h"
#include "frontend/attention.h"
#include "fuzz/random_routine.h"
#include "fuzz/target.h"
#include "fuzz/text_mutation.h"
#include "fuzz/text_round_trip.h"

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

Execution run_parse(const std::string& input, const std::string& name) {
  Execution x;
  if (auto f = check_fp_text(input, name, &x.features)) {
    x.finding = Finding{f->kind, f->where, f->message, {}};
    if (!f->printed.empty()) x.finding->files["printed.fp"] = f->printed;
  }
  return x;
}

}  // namespace

Target parse_target() {
  return Target{.name = "parse",
                .description = ".fp text -> check -> print -> parse round-trips; mutated text gets a located diagnostic (65)",
                .input_kind = ".fp text",
                .generate = drawing_from(parse_input()),
                .run = run_parse};
}

}  // namespace fp::fuzz
