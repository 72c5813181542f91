#pragma once
// The well-formedness checker: everything core/ir.h's SEMANTICS block promises "the checker
// rejects" is decided here, before any executor, rewrite or proof sees a routine. A routine that
// passes has declared, well-named nodes; every index symbol bound by an enclosing loop; every node
// access in bounds for every iteration (proved from the loop ranges and enclosing guards, never by
// enumerating iterations); every local declared before use at its declared precision; operations
// at precisions that define them; and every scan obeying the scan contract.

#include <string>
#include <vector>

#include "core/ir.h"

namespace fp {

// One problem found in a routine. `message` reads "expected ..., found ...". When the routine was
// built in memory (loc.line == 0) the message starts with where the problem is, as a path of
// enclosing constructs: "in 'for t' > 'scan j' > set s: expected ...". `where` holds that path
// in every case (tools that print their own location may prefer it).
struct Diagnostic {
  SrcLoc loc;
  std::string message;
  std::string where;
};

// Every problem in `r`, in program order (node declarations first, then the body).
std::vector<Diagnostic> check_routine(const Routine& r);

// Throws UserError(kExitMalformed, file, line, col, message) for the first problem, if any.
void check_routine_or_throw(const Routine& r, const std::string& file);

}  // namespace fp
