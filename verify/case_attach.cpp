#include "verify/case_attach.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "core/support/deadline.h"
#include "verify/case_writer.h"
#include "verify/phase_clock.h"
#include "verify/size_reduction.h"

namespace fp::verify {

namespace {

// Whether the case as written — the violated node as the one output, compared as its replay
// compares (claim_checks of the written claim) — fails on `inputs`.
bool case_replays(const Routine& src, const Routine& tgt, const NodeCheck& check, const TensorMap& inputs) {
  const std::vector<std::string> node{check.node};
  std::optional<double> rel;
  if (check.kind != NodeCheck::Kind::Bitwise) rel = check.rel;
  PairRunner replay(with_outputs(src, node, false), with_outputs(tgt, node, false), claim_checks(node, rel));
  return replay.run(inputs).has_value();
}

const NodeCheck& violated_check(const std::vector<NodeCheck>& checks, const Mismatch& m) {
  const NodeCheck* violated = &checks.front();
  for (const auto& c : checks)
    if (c.node == m.node) violated = &c;
  return *violated;
}

// Shrinks the sizes of a refuted check's counterexample (verify/size_reduction.h), minimizes its
// cells and values and writes it. The verdict itself was decided on the original pair; only the
// case is smaller. A reduced case that does not replay as written (a bounded check the replay's
// bounded:REL cannot express) falls back to the original sizes.
// A refuted check's case: the pair it writes, the minimized inputs, the size reduction it keeps.
struct MinimizedCase {
  const Routine* src;
  const Routine* tgt;
  Found found;
  std::vector<ExtentReduction> extents;
  std::int64_t runs = 0;  // interpreter runs of the cell and value minimization
  bool minimized = true;  // false: the wall-clock budget ran out first; written as found
};

// The case at the reduced sizes, when the reduction shrank an extent and that case, minimized,
// fails its replay as written.
std::optional<MinimizedCase> reduced_case(const SizeReduction& red, const std::vector<NodeCheck>& checks) {
  if (!red.reduced()) return std::nullopt;
  PairRunner reduced(red.src, red.tgt, checks);
  Found m = minimize_counterexample(reduced, red.found);
  if (!case_replays(red.companions[0], red.companions[1], violated_check(checks, m.mismatch), m.inputs))
    return std::nullopt;
  return MinimizedCase{&red.companions[0], &red.companions[1], std::move(m), red.extents, reduced.runs()};
}

// Writes the case and records it in the verdict.
void write_minimized_case(Verdict& v, const Task& t, const EngineOptions& o, const std::vector<NodeCheck>& checks,
                          const MinimizedCase& c) {
  const MinimizedCase* small = &c;
  const NodeCheck& violated = violated_check(checks, small->found.mismatch);
  std::string dir = (std::filesystem::path(o.cex_dir) / sanitize_id(t.artifact())).string();
  v.counterexample = write_case(dir, *small->src, *small->tgt, small->found.inputs, violated,
                                small->found.mismatch, t.repro, small->extents);
  v.message = fmt::format("{} ({}: {}{})", v.message, small->minimized ? "minimized" : "as found",
                          small->found.mismatch.text(),
                          small->extents.empty() ? ""
                                                 : "; sizes reduced: " + extents_text(small->extents) +
                                                       " (extents substituted in both routines)");
  if (small->minimized)
    v.steps.push_back(
        fmt::format("counterexample minimized ({} interpreter runs) and written to {}", small->runs, dir));
  else
    v.steps.push_back(fmt::format("counterexample written as found to {}", dir));
}

// Reduces the sizes of `found`, minimizes it and writes it (attach_case).
void minimize_and_write_case(Verdict& v, const Task& t, const EngineOptions& o, const PairRunner& runner,
                             const std::vector<NodeCheck>& checks, Found found) {
  SizeReductionOptions so;
  so.seed = o.limits.seed;
  if (!o.reduce_case_sizes) so.budget = 0;
  // A tier task whose target is what the tier emits keeps only sizes at which it still is.
  if (t.reemit && so.budget > 0) {
    const std::optional<Routine> emitted = t.reemit(t.src);
    if (emitted && equal(*emitted, t.tgt))
      so.faithful = [&t](const std::vector<Routine>& c) {
        const std::optional<Routine> e = t.reemit(c[0]);
        return e && equal(*e, c[1]);
      };
  }
  // A recognized hand pair keeps only sizes at which it is still an instance of the rewrite.
  if (!so.faithful && t.faithful_resize && so.budget > 0)
    so.faithful = [&t](const std::vector<Routine>& c) { return t.faithful_resize(c[0], c[1]); };
  const SizeReduction red = reduce_sizes(runner, found, {t.src, t.tgt}, so);
  const std::string effort = fmt::format(
      "{} candidate{}, {} rejected by the checker, {}{} interpreter runs", red.tried, red.tried == 1 ? "" : "s",
      red.rejected_by_checker,
      so.faithful ? fmt::format("{} not what the tier emits at that size, ", red.rejected_unfaithful) : "", red.runs);
  std::optional<MinimizedCase> small = reduced_case(red, checks);
  if (small)
    v.steps.push_back(fmt::format(
        "counterexample sizes reduced: {} (extents substituted in both routines; the resized pair passes "
        "the checker and still fails; {})",
        red.text(), effort));
  else if (red.reduced())
    v.steps.push_back(fmt::format(
        "counterexample sizes not reduced: the case reduced by {} does not fail its replay as written; the "
        "case keeps the obligation's sizes ({})",
        red.text(), effort));
  else if (red.tried > 0)
    v.steps.push_back(
        fmt::format("counterexample sizes not reduced: no smaller extent keeps the failure ({})", effort));
  if (!small) {
    const std::int64_t before = runner.runs();
    Found m = minimize_counterexample(runner, std::move(found));
    small = MinimizedCase{&t.src, &t.tgt, std::move(m), {}, runner.runs() - before};
  }
  write_minimized_case(v, t, o, checks, *small);
}

}  // namespace

void attach_case(Verdict& v, const Task& t, const EngineOptions& o, const Routine& src_run,
                 const Routine& tgt_run, const std::vector<NodeCheck>& checks, Found found) {
  ScopedPhase phase("counterexample case");
  PairRunner runner(src_run, tgt_run, checks);
  const Found as_found = found;
  try {
    minimize_and_write_case(v, t, o, runner, checks, std::move(found));
  } catch (const DeadlineExceeded& e) {
    // The verdict stands (it was decided before); only the case stays as found.
    v.steps.push_back(fmt::format("counterexample neither reduced nor minimized: {}", e.text()));
    write_minimized_case(v, t, o, checks, MinimizedCase{&t.src, &t.tgt, as_found, {}, 0, false});
  }
}

void from_pair_check(Verdict& v, PairCheck pc, const Task& t, const EngineOptions& o,
                     const std::vector<std::string>& nodes) {
  v.kind = pc.kind;
  v.reason = pc.reason;
  v.message = pc.message;
  for (auto& s : pc.steps) v.steps.push_back(std::move(s));
  v.scope = Scope{false, pc.scope};
  if (pc.kind == VerdictKind::Refuted && pc.counterexample) {
    std::vector<NodeCheck> checks = claim_checks(nodes, t.rel);
    attach_case(v, t, o, with_outputs(t.src, nodes, false), with_outputs(t.tgt, nodes, false), checks,
                std::move(*pc.counterexample));
  }
}

}  // namespace fp::verify
