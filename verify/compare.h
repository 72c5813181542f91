#pragma once
// The one comparison of two runs' outputs, cell by cell, for everything that compares them:
// verify's counterexample search, differential runs, solver-model confirmation and
// `verify --inputs DIR` replays (PairRunner, on the interpreter with real exp), `flashproof diff`
// (executor against executor, and the original against its rewrite) and the tests.
//
//   NodeCheck         how one output must compare: bitwise, within a bound (relative to the
//                     cell, or to a per-cell magnitude), or within diff's stand-in tolerance
//   cell_ratio()      the one per-cell rule: the cell's error as a fraction of what the check
//                     allows, <= 1 exactly when the cell holds
//   compare_output()  every cell of one output: an OutputComparison (cells, mismatches, the
//                     worst fraction, the first failing cell as a Mismatch)
//
// Bounded decisions are verify/error_bound.h's error_fraction (exact over the rationals, never in
// the claim's favour); bitwise equality is core/tensor.h's same_value, as the semantics define it.

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"

namespace fp::verify {

// How one node must compare; the source is the reference side.
struct NodeCheck {
  std::string node;
  enum class Kind : std::uint8_t {
    Bitwise,   // equal bit for bit (every NaN equal; -0 != +0)
    Relative,  // NaN exactly where the source has NaN; ±inf equal; |t - s| <= rel·|s| + abs
    Scaled,    // NaN positions; |t - s| <= rel·scale + abs (scale: a per-cell magnitude, Σ|w·v|)
    // No bound is certified (diff's outputs a bounded claim reaches without one): NaN positions,
    // infinities equal, |t - s| <= rel·max(|s|, rms(s)) with rms over the source's finite cells,
    // decided rounded against agreement (the error up, the scale down). A violation proves nothing.
    StandIn,
  } kind = Kind::Bitwise;
  double rel = 0;
  double abs = 0;          // absolute slack (underflow terms)
  std::string scale_node;  // Scaled: the node (of the source run) holding the per-cell magnitude
  // Relative/Scaled derived bounds hold in the absence of overflow: with overflow_tolerant, a
  // cell where one side is ±inf and the other finite is within the bound when the finite value
  // plus the allowed error reaches the overflow threshold of `prec` (max + ulp(max)/2). A
  // hand-written bounded:REL claim is strict (an infinity must be matched exactly).
  bool overflow_tolerant = false;
  // With overflow_tolerant: how many times the per-cell magnitude (Scaled's scale, Relative's |s|)
  // an intermediate of the target may grow to before the cell is final (a running sum that is
  // rescaled later, say: the checker that states the bound states the headroom), so that the
  // intermediate may overflow (with either sign) while the final value would not. A one-sided
  // overflow is then
  // within the bound when (magnitude + allowed)·headroom reaches the threshold: outside the bound's
  // no-overflow hypothesis, not a counterexample.
  double overflow_headroom = 1;
  Prec prec = Prec::F64;
};

// What a comparison rests on, as reports name it: "bitwise", "certified" (Relative and Scaled:
// the bounds verify certifies, or a claim's) or "stand-in".
const char* comparison_basis_name(NodeCheck::Kind k);

// One failing cell.
struct Mismatch {
  std::string node;
  std::int64_t cell = 0;            // C-order flat index
  std::vector<std::int64_t> index;  // its index (empty when the two outputs' types differ)
  double src = 0, tgt = 0;
  double ratio = 0;  // observed error / allowed (> 1 for a bound violation; inf for NaN / bitwise)
  std::string why;   // "bits differ", "NaN on one side only", "error 3.1x the certified bound", …
  std::string cell_text() const;  // "[0,2,1,3]"
  std::string text() const;       // "o[0, 2, 1, 3]: source 1, target 2 (3.1x the allowed error)"
};

// One output compared cell by cell.
struct OutputComparison {
  NodeCheck check;
  std::int64_t cells = 0;
  std::int64_t mismatches = 0;
  double worst = 0;               // the largest finite cell_ratio
  std::int64_t unbounded = 0;     // cells whose ratio is infinite (NaN or infinity on one side only,
                                  // bits differ, nothing allowed)
  std::optional<Mismatch> first;  // the first failing cell in C order

  bool ok() const { return !first; }
  // The largest cell_ratio: infinite when any cell's is.
  double max_ratio() const { return unbounded ? INFINITY : worst; }
};

// One cell's error as a fraction of what `c` allows (<= 1 holds; inf for a NaN-position, infinity
// or bitwise difference). `scale` is the cell's magnitude for a Scaled check, the source's rms
// over its finite cells for a StandIn check, else unused.
double cell_ratio(const NodeCheck& c, double src, double tgt, double scale);

// The most a cell of a certified (Relative or Scaled) check may differ by, rounded up: rel·|src| (or
// rel·scale) + abs. +inf where that is not a bound on |tgt - src|: a non-finite source or bound, a
// cell where the check would excuse an overflow (overflow_tolerant: the source plus the allowed error,
// times the headroom, reaches the threshold, so the target may be ±inf or NaN there), or any other
// kind of check. What a bound carried from this one (verify/accumulation_bound.h, or a member's
// joint plan, Checker::joint_plan) may assume of the cell.
double certified_cell_error(const NodeCheck& c, double src, double scale);

// Every cell of `tgt` against `src`. `scale`: a Scaled check's per-cell magnitudes (from the
// source run). Outputs of different types are one mismatch at cell [] covering every cell.
OutputComparison compare_output(const NodeCheck& check, const Tensor& src, const Tensor& tgt,
                                const Tensor* scale = nullptr);
// The same, with check.node (and a Scaled check's scale node) looked up in the source run's and
// the target run's outputs, which must return them.
OutputComparison compare_output(const NodeCheck& check, const TensorMap& src, const TensorMap& tgt);

// A bitwise check of every output of `r`, in order (two runs of one routine, or of two executors).
std::vector<NodeCheck> bitwise_output_checks(const Routine& r);

// The first failing cell over `checks` in order, or nullopt; `worst` receives, per node, the
// largest max_ratio() seen (0 for bitwise checks that hold).
std::optional<Mismatch> compare_outputs(const std::vector<NodeCheck>& checks, const TensorMap& src,
                                        const TensorMap& tgt, std::map<std::string, double>* worst = nullptr);

// `r` with exactly the given nodes (plus `keep_outputs` ones, when true) flagged as outputs: the
// value of a node never depends on whether it is read back, so this only selects what the
// interpreter returns.
Routine with_outputs(const Routine& r, const std::vector<std::string>& nodes, bool keep_outputs);

// `r`'s top-level statements up to the last one that writes any of `nodes` (at any depth): their
// values at the end are the same, the rest of the program is work a cross-check of those nodes
// need not do (a layer's obligation in a 24-layer model drops the layers after it).
Routine through_last_writer(const Routine& r, const std::vector<std::string>& nodes);

// Runs both routines on the interpreter with `inputs` and compares. Both must already return every
// checked node (and every scale node, from the source).
// The interpreter's memory per run of a pair (every node of both routines as f64 cells,
// exec/run_memory.h's `interp` basis) is checked against the limit installed on this thread (the
// engine installs --max-memory per obligation): a concrete check too big for the machine ends the
// obligation unknown (resource limit) instead of allocating — with the all-sizes lifts, checks at
// the routine's own sizes are only the fallback, so a program far too big to run is still verified.
struct InterpreterMemoryExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};
class ScopedInterpreterMemoryLimit {
 public:
  ScopedInterpreterMemoryLimit(std::optional<std::int64_t> bytes, std::string origin);
  ~ScopedInterpreterMemoryLimit();
  ScopedInterpreterMemoryLimit(const ScopedInterpreterMemoryLimit&) = delete;
  ScopedInterpreterMemoryLimit& operator=(const ScopedInterpreterMemoryLimit&) = delete;

 private:
  std::optional<std::int64_t> previous_;
  std::string previous_origin_;
};
std::int64_t interpreter_bytes(const Routine& r);  // every node as f64 cells (saturating)
// Throws InterpreterMemoryExceeded naming `phase` when running src and tgt side by side exceeds
// the installed limit.
void check_interpreter_memory(const Routine& src, const Routine& tgt, const char* phase);

class PairRunner {
 public:
  PairRunner(Routine src, Routine tgt, std::vector<NodeCheck> checks);
  std::optional<Mismatch> run(const TensorMap& inputs, std::map<std::string, double>* worst = nullptr) const;
  const Routine& src() const { return src_; }
  const Routine& tgt() const { return tgt_; }
  const std::vector<NodeCheck>& checks() const { return checks_; }
  std::int64_t runs() const { return runs_; }

 private:
  Routine src_, tgt_;
  std::vector<NodeCheck> checks_;
  mutable std::int64_t runs_ = 0;
};

}  // namespace fp::verify
