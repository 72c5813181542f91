#include "verify/checkers/exact_lift.h"

#include <fmt/format.h>

#include "core/diagnostic.h"
#include "core/random_inputs.h"
#include "core/support/deadline.h"
#include "verify/case_attach.h"
#include "verify/phase_clock.h"
#include "verify/search.h"
#include "verify/size_reduction.h"

namespace fp::verify {

namespace {

// Above this (scalar operations of one run of both routines), the small instance is compared on
// random inputs rather than by symbolic execution (whose terms grow with the program: a 24-layer
// training step at extents of 8 took 1.2-1.9 s per obligation).
constexpr double kSymbolicCrossCheckWork = 2e6;

// Bitwise comparison of the covered nodes on as many random input sets as the cross-check's work
// allows (verify/search.h cross_check_runs).
void differential_cross_check(Verdict& v, const Task& t, const std::vector<std::string>& nodes,
                              const EngineOptions& o) {
  ScopedPhase phase("differential");
  PairRunner runner(with_outputs(t.src, nodes, false), with_outputs(t.tgt, nodes, false), claim_checks(nodes, std::nullopt));
  const int runs = cross_check_runs(runner, 4);
  for (int k = 0; k < runs; ++k) {
    TensorMap in = random_inputs(t.src, o.limits.seed + static_cast<std::uint64_t>(k));
    if (auto m = runner.run(in)) {
      v.kind = VerdictKind::Refuted;
      v.message = m->text();
      return;
    }
  }
  v.kind = VerdictKind::Exact;
  v.message = fmt::format("on {} random input set{}", runs, runs == 1 ? "" : "s");
  v.steps.push_back("differential: the covered cells bitwise equal " + v.message);
}

}  // namespace

Checker exact_lift_checker(std::string id, std::string description, LiftFunction lift) {
  Checker c;
  c.id = std::move(id);
  c.description = std::move(description);
  c.discharge = [lift = std::move(lift)](Verdict& v, const Task& t, const EngineOptions& o) {
    discharge_exact_lift(v, t, o, lift(t, o));
  };
  return c;
}

void discharge_exact_lift(Verdict& v, const Task& t, const EngineOptions& o, const ExactLift& lift) {
  const std::vector<std::string> nodes = covered_nodes(t);
  const PairCheckOptions pco = pair_check_options(t, o);
  for (const auto& s : lift.steps) v.steps.push_back(s);
  if (!lift.proved) {
    from_pair_check(v, check_pair(t.src, t.tgt, nodes, pco), t, o, nodes);
    if (v.kind == VerdictKind::Exact)
      v.message += "; all-sizes lift not established (" + lift.why_not + "): proved at the routine's sizes only";
    return;
  }
  // The proof covers every extent; a small instance of the family is the cross-check.
  const ShrunkPair small = lift.instance ? *lift.instance : cross_check_instance(t.src, t.tgt);
  const std::string where =
      small.extents.empty() ? "at the routine's sizes" : fmt::format("at reduced sizes ({})", extents_text(small.extents));
  Task shrunk = t;
  shrunk.src = through_last_writer(small.src, nodes);
  shrunk.tgt = through_last_writer(small.tgt, nodes);
  const bool symbolic = routine_work(shrunk.src) + routine_work(shrunk.tgt) <= kSymbolicCrossCheckWork;
  try {
    if (symbolic) {
      from_pair_check(v, check_pair(shrunk.src, shrunk.tgt, nodes, pco), shrunk, o, nodes);
    } else {
      differential_cross_check(v, shrunk, nodes, o);
    }
  } catch (const DeadlineExceeded& e) {
    v.kind = VerdictKind::Unknown;
    v.message = e.text();
    v.steps.push_back("concrete check stopped: " + e.text());
  }
  FP_INTERNAL_CHECK(v.kind != VerdictKind::Refuted, "the all-sizes lift of {} holds but the concrete check {} refutes it: {}",
                    t.id, where, v.message);
  if (v.kind != VerdictKind::Exact && v.kind != VerdictKind::Unknown) return;
  const std::string concrete = v.kind == VerdictKind::Exact
                                   ? "bitwise equal " + where + (symbolic ? "" : " " + v.message)
                                   : "the concrete check " + where + " was inconclusive (" + v.message + ")";
  v.kind = VerdictKind::Exact;
  v.reason = UnknownReason::None;
  v.scope = Scope{true, "all sizes"};
  v.message = fmt::format("{}; {}", lift.proof, concrete);
}

}  // namespace fp::verify
