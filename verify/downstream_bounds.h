#pragma once
// Bounds downstream of a bounded node (docs/bounds.md §4), and the routines that check them.
//
// Given the source routine of a bounded claim, the covered node `l` with its certified relative
// bound REL, and the application's statements, plan_downstream() follows the data flow through
// the top-level statements after the claim's anchor:
//  - a pointwise statement (mul, div, where, neg, abs, casts of perturbed values) carries a
//    relative bound |x_tgt - x_src| <= rho·|x_src| (Relative check);
//  - a reduction T[ti] = T[ti] + a·b with exactly one perturbed factor carries a bound relative to
//    the per-cell magnitude Σ|a·b| (Scaled check): the plan adds, after that statement, a nest
//    that accumulates Σ|a·b| in f64 into a new output node `__fp_absdot_T` of the source;
//  - anything else (another reduction, exp of a perturbed value, a node written twice) gets no
//    bound, and neither does anything computed from it: those nodes are listed as unbounded.
// The checks are what verify's differential and counterexample search run, and what
// `flashproof diff` compares executors' outputs with; both run instrument_source() of the source.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "verify/compare.h"
#include "verify/verdict.h"

namespace fp::verify {

// Runs a routine on the diff's first executor (a plan's completion evaluates its bounds with it).
using RunRoutine = std::function<TensorMap(const Routine&, const TensorMap&)>;
// A check a completed plan cannot certify on the run it saw, and why.
struct Uncertified {
  std::string node, why;
};

struct DownstreamPlan {
  std::vector<NodeCheck> checks;         // `l` first, then every downstream node with a bound
  std::vector<DownstreamBound> bounds;   // the downstream checks, for the report (worst_observed 0)
  std::vector<std::string> unbounded;    // downstream nodes perturbed by an unknown amount
  std::vector<std::string> notes;        // why each of them has no bound
  std::vector<std::string> note_nodes;   // the node each note is about
  std::vector<std::pair<std::size_t, StmtP>> aux;  // Σ|a·b| nests, after a top-level position
  std::vector<Node> absdot_nodes;        // their f64 nodes (outputs)
  // Checks whose per-cell scale is computed after the source run, from its values (a member's
  // plan whose bound depends on the data, not only on the sizes): the nodes that run must also
  // return, and the step that adds the scale nodes to its outputs. It returns the checks this run falls
  // outside of (values outside the bound's hypotheses: a non-finite input), each with why: those
  // outputs have no certified statement on this run.
  std::vector<std::string> watched;
  std::function<std::vector<Uncertified>(TensorMap& source_outputs, const RunRoutine& run)> complete;
};

// How the claims of other applications perturb a node (what a joint plan reads): not at all, within
// a certified check (one claim alone reaching it), or by an unknown amount.
struct Upstream {
  enum class Kind : std::uint8_t { None, Certified, Unknown } kind = Kind::None;
  NodeCheck check;  // Certified: the node's check
};
using UpstreamOf = std::function<Upstream(const std::string& node)>;

// `anchor_pos` is the 0-based top-level position of the claim's anchor statement; statements in
// `matched` (1-based positions of the application) are part of the match and skipped.
// `co_perturbed`: nodes the same application also changes under other claims (another output
// with a bound of its own): anything computed from them is perturbed by more than REL carries, so it
// gets no bound here (listed in the notes, not checked).
DownstreamPlan plan_downstream(const Routine& src, const std::vector<int>& matched, std::size_t anchor_pos,
                               const std::string& l, double rel_l, const std::vector<std::string>& co_perturbed = {});

// The check of one reduction O += a·b at top-level position `pos` of `src` against
// |O_tgt - O_src| <= rel·Σ|a·b| + abs (Scaled, overflow tolerant), with its Σ|a·b| nest; with
// `weight` naming the node of one factor, against rel·Σ(|w| + kappa)·|b| + abs. nullopt with `why`
// when the statement is not such a reduction (or reads no factor `weight`).
std::optional<DownstreamPlan> scaled_reduction_plan(const Routine& src, std::size_t pos, double rel, double abs,
                                                    std::string* why, const std::string& weight = "",
                                                    double kappa = 0);

// `src` with every plan's Σ|a·b| nests inserted and their nodes declared as outputs; the nodes in
// `watched` are outputs too, and the routine's own outputs stay outputs when `keep_outputs`.
// Inserting the nests changes no value of `src`'s own nodes.
Routine instrument_source(const Routine& src, const std::vector<const DownstreamPlan*>& plans,
                          const std::vector<std::string>& watched, bool keep_outputs);

}  // namespace fp::verify
