#pragma once
// A refuted verdict's counterexample as a case directory: its extents reduced
// (verify/size_reduction.h), its cells and values minimized (verify/search.h), then written
// (verify/case_writer.h) and recorded in the verdict. The verdict itself was decided at the
// obligation's sizes; only the case is smaller. A reduction or minimization the obligation's
// wall-clock budget cuts short leaves the case as found.

#include <string>
#include <vector>

#include "verify/compare.h"
#include "verify/engine.h"
#include "verify/pair_check.h"
#include "verify/search.h"

namespace fp::verify {

// Reduces, minimizes and writes `found`, which fails `checks` on (src_run, tgt_run) — the task's
// routines with the checked nodes as outputs — and records it in `v`.
void attach_case(Verdict& v, const Task& t, const EngineOptions& o, const Routine& src_run,
                 const Routine& tgt_run, const std::vector<NodeCheck>& checks, Found found);

// Copies a pair check's outcome into `v`, attaching the case when it refuted.
void from_pair_check(Verdict& v, PairCheck pc, const Task& t, const EngineOptions& o,
                     const std::vector<std::string>& nodes);

}  // namespace fp::verify
