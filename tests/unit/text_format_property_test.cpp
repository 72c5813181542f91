// RapidCheck properties of the `.fp` text format over random well-formed routines
// (fuzz/random_routine.h): parsing a printed routine gives it back, and printing is a fixed
// point of parse-then-print.

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <functional>

#include "core/ir_visit.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "fuzz/random_routine.h"

namespace fp {
namespace {

RC_GTEST_PROP(TextFormatProperty, ParseOfPrintEqualsTheRoutine, ()) {
  Routine r = *fuzz::gen_routine();
  std::string text = print_routine(r);
  Routine back = parse_routine(text, "random.fp");
  RC_ASSERT(equal(back, r));
}

RC_GTEST_PROP(TextFormatProperty, PrintIsAFixedPointOfParseThenPrint, ()) {
  Routine r = *fuzz::gen_routine();
  std::string text = print_routine_file(r, {"flashproof fuzz", 7});
  std::string again = print_routine(parse_routine(text, "random.fp"));
  RC_ASSERT(again == print_routine(r));
}

RC_GTEST_PROP(TextFormatProperty, EveryParsedStatementAndExpressionIsLocated, ()) {
  Routine r = parse_routine(print_routine(*fuzz::gen_routine()), "random.fp");
  for (const auto& n : r.nodes) RC_ASSERT(n.loc.line > 0 && n.loc.col > 0);
  for_each_stmt(r.body, [](const Stmt& s) {
    RC_ASSERT(s.loc.line > 0 && s.loc.col > 0);
    for_each_own_expr(s, [](const ExprP& e) {
      for_each_expr(e, [](const Expr& x) { RC_ASSERT(x.loc.line > 0 && x.loc.col > 0); });
    });
  });
}

}  // namespace
}  // namespace fp
