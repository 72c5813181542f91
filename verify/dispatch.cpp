// Discharging one task (verify/engine.h): its checker (verify/checkers.h) under the obligation's
// wall-clock budget.

#include <fmt/format.h>

#include <chrono>

#include "core/checker.h"
#include "core/support/deadline.h"
#include "verify/checkers.h"
#include "verify/compare.h"
#include "verify/engine.h"
#include "verify/phase_clock.h"
#include "verify/smt/smt.h"

namespace fp::verify {

namespace {

double elapsed(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void fill_common(Verdict& v, const Task& t, const EngineOptions& o) {
  v.id = t.id;
  v.member = t.member;
  v.rewrite = t.shape;
  v.claim = t.obligation.claim;
  v.claimed = t.obligation.kind;
  v.description = t.obligation.description;
  v.covers = t.obligation.covers;
  v.file = t.file;
  v.line = t.app.lines.empty() ? 0 : t.app.lines[0];
  v.solver = SolverInfo{"z3", smt::solver_version()};
  v.limits = o.limits;
  v.repro = t.repro;
}

// The first problem of a routine the checker rejects ("source: in 'for s' > set d: expected ..."),
// or "" when both are well formed. Every checker runs them (symbolically, on the interpreter,
// compiled): an ill-formed one — a read past a node's last cell, say — is bad input, not a program.
std::string ill_formed(const Task& t) {
  for (const auto& [side, r] : {std::pair<const char*, const Routine*>{"source", &t.src}, {"target", &t.tgt}}) {
    const std::vector<Diagnostic> d = check_routine(*r);
    if (!d.empty())
      return fmt::format("the {} routine is not well formed ({}{}{}): no verdict", side,
                         d[0].loc.line > 0 ? fmt::format("line {}: ", d[0].loc.line) : "", d[0].message,
                         d.size() > 1 ? fmt::format(", and {} more", d.size() - 1) : "");
  }
  return "";
}

// The obligation's work into `v` (filled in by fill_common), under the deadline discharge installs.
void discharge_into(Verdict& v, const Task& t, const EngineOptions& o) {
  std::string why;
  if (std::string bad = ill_formed(t); !bad.empty()) {
    v.kind = VerdictKind::Error;
    v.message = std::move(bad);
    v.steps.push_back(v.message);
  } else if (const Checker* checker = checker_for(t, &why)) {
    checker->discharge(v, t, o);
  } else {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = why;
  }
  if (!v.proved() && v.scope.text.empty()) v.scope = Scope{false, concrete_scope(t.src)};
}
}  // namespace

Verdict discharge(const Task& t, const EngineOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Verdict v;
  fill_common(v, t, o);
  PhaseRecord phases;
  if (o.progress) phases.entered = [&](const std::string& p) { o.progress->phase(t, p); };
  ScopedPhaseRecord record(phases);
  try {
    ScopedDeadline budget(o.limits.budget_s,
                          fmt::format("the obligation's wall-clock budget ({:g} s, --budget)", o.limits.budget_s));
    ScopedInterpreterMemoryLimit memory(o.interpreter_memory_bytes, o.interpreter_memory_origin);
    discharge_into(v, t, o);
  } catch (const InterpreterMemoryExceeded& e) {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::ResourceLimit;
    v.bound.reset();
    v.counterexample.reset();
    v.message = fmt::format("{}: no verdict (raise --max-memory, or verify a smaller instance)", e.what());
    v.steps.push_back(v.message);
    v.scope = Scope{false, concrete_scope(t.src)};
  } catch (const DeadlineExceeded& e) {
    // The steps so far stay: they say how far the obligation got.
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::ResourceLimit;
    v.decided_by_clock = true;
    v.bound.reset();
    v.counterexample.reset();
    v.message = fmt::format("{}: no verdict", e.text());
    v.steps.push_back(v.message);
    v.scope = Scope{false, concrete_scope(t.src)};
  }
  v.seconds = elapsed(t0);
  v.phase_seconds = phases.seconds;
  return v;
}

}  // namespace fp::verify
