// The checkers that compare covered cells at the routines' own sizes (verify/pair_check.h):
// `bitwise` for exact claims, `relative` for a hand-written bounded:REL pair.

#include "verify/case_attach.h"
#include "verify/checkers/builtin.h"

namespace fp::verify {

namespace {

void check_cells(Verdict& v, const Task& t, const EngineOptions& o) {
  const std::vector<std::string> nodes = covered_nodes(t);
  from_pair_check(v, check_pair(t.src, t.tgt, nodes, pair_check_options(t, o)), t, o, nodes);
}

}  // namespace

Checker bitwise_checker() {
  Checker c;
  c.id = "bitwise";
  c.description = "every covered cell bitwise equal for every input, at the routines' sizes";
  c.discharge = check_cells;
  return c;
}

Checker relative_checker() {
  Checker c;
  c.id = "relative";
  c.description = "every covered cell within REL·|source| for every input (NaN positions exact)";
  c.discharge = check_cells;
  return c;
}

}  // namespace fp::verify
