#pragma once
// Concrete comparison of a source and a target routine on the interpreter (real exp): what a
// claim means on one input, cell by cell. Used by the counterexample search, the differential
// runs, the confirmation of solver models and `flashproof verify --inputs DIR` replays.

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"

namespace fp::verify {

// How one covered node must compare.
struct NodeCheck {
  std::string node;
  enum class Kind : std::uint8_t {
    Bitwise,   // equal bit for bit (every NaN equal; -0 != +0)
    Relative,  // NaN exactly where the source has NaN; ±inf equal; |t - s| <= rel·|s|
    Scaled,    // NaN positions; |t - s| <= rel·scale (scale: a per-cell magnitude, Σ|w·v|)
  } kind = Kind::Bitwise;
  double rel = 0;
  double abs = 0;          // absolute slack (underflow terms)
  std::string scale_node;  // Scaled: the node (of the source run) holding the per-cell magnitude
  // Relative/Scaled derived bounds hold in the absence of overflow: with overflow_tolerant, a
  // cell where one side is ±inf and the other finite is within the bound when the finite value
  // plus the allowed error reaches the overflow threshold of `prec` (max + ulp(max)/2). A
  // hand-written bounded:REL claim is strict (an infinity must be matched exactly).
  bool overflow_tolerant = false;
  Prec prec = Prec::F64;
};

struct Mismatch {
  std::string node;
  std::int64_t cell = 0;
  std::vector<std::int64_t> index;
  double src = 0, tgt = 0;
  double ratio = 0;  // observed error / allowed (> 1 for a bound violation; inf for NaN / bitwise)
  std::string text() const;
};

// One cell's error as a fraction of what `c` allows (<= 1 holds; inf for a NaN-position, infinity
// or bitwise difference). `scale` is the cell's magnitude for a Scaled check, else unused.
double cell_ratio(const NodeCheck& c, double src, double tgt, double scale);

// The first violating cell, or nullopt; `worst` receives, per node, the largest observed error as
// a fraction of what the check allows (0 for bitwise checks that hold).
std::optional<Mismatch> compare_outputs(const std::vector<NodeCheck>& checks, const TensorMap& src,
                                        const TensorMap& tgt,
                                        const std::map<std::string, std::vector<std::int64_t>>& dims,
                                        std::map<std::string, double>* worst = nullptr);

// `r` with exactly the given nodes (plus `keep_outputs` ones, when true) flagged as outputs: the
// value of a node never depends on whether it is read back, so this only selects what the
// interpreter returns.
Routine with_outputs(const Routine& r, const std::vector<std::string>& nodes, bool keep_outputs);

// Runs both routines on `inputs` and compares. Both must already return every checked node (and
// every scale node, from the source).
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
  std::map<std::string, std::vector<std::int64_t>> dims_;
  mutable std::int64_t runs_ = 0;
};

}  // namespace fp::verify
