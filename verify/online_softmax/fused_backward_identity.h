#pragma once
// (i) of the fused backward's dQ / dK bound (docs/bounds.md §8): ties, by term identity at the
// routine's sizes, every cell of the covered gradient in the source to the composed form and in the
// target to the fused form the bound is about, and returns per cell the terms the bound is
// evaluated from. Both routines run symbolically into one store (hash-consed: equal values are
// equal pointers), and for every cell of X (dQ or dK):
//   - X is a left-to-right sum from 0 of products gs·x on both sides, the same number of terms, the
//     operand x the same term at each position (the same cells, the same order);
//   - each pair's gs is, on both sides, the same chain of links over the score gradient: `0 + y`
//     (exact), the mask's where with the same condition and a 0 branch, at most one product by a
//     constant c — and the score gradients are
//       source  ng = (a + lg)·e,  a = dP / l (optionally 0 + …),  lg = Σ_t dP_t·(−e_t / (l·l)) from 0,
//       target  ds = p·(dP − D),  D = Σ_e dO_e·O_e from 0,
//     with p = e / l and dP the source's probabilities and dP cells (the same terms), the row lg sums
//     over being the pairs of p's row (each (dP_t, e_t) at one cell of p, same l), and the dO cells
//     of D those the pair's dP reads, each paired with the forward output O at the same cell.
// A pair whose gs is the constant 0 on both sides (a masked score) contributes nothing.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "verify/online_softmax/normalizer_check.h"
#include "verify/symbolic/term.h"
#include "verify/verdict.h"

namespace fp::verify {

// One summed pair of a covered cell.
struct BackwardPairTerms {
  bool zero = false;  // gs is the constant 0 on both sides
  TermP e = nullptr, l = nullptr, dp = nullptr;
  using Pairs = std::vector<std::pair<TermP, TermP>>;
  std::shared_ptr<const Pairs> row;  // (e_t, dP_t) of every key of the pair's row (shared per row)
  std::shared_ptr<const Pairs> dot;  // (dO_e, O_e) of the pair's row (shared per row)
  double scale = 1;                          // the chain's constant c (1 without one)
  TermP operand = nullptr;                   // x
};
struct BackwardCellTerms {
  TermP src = nullptr, tgt = nullptr;  // the cell's value on each side
  std::vector<BackwardPairTerms> pairs;
};

struct BackwardIdentity {
  RecurrenceCheck check;
  std::vector<BackwardCellTerms> cells;  // per cell of the covered node, row-major
};

// Node roles as the application names them: x the covered gradient (dQ or dK), p the
// probabilities, dp the probability gradient, dout the output gradient, o the forward output.
struct BackwardRoles {
  std::string x, p, dp, dout, o;
};

// `store` must outlive the returned terms.
BackwardIdentity fused_backward_identity(const Routine& src, const Routine& tgt, const BackwardRoles& roles,
                                         TermStore& store);

// One covered cell on concrete inputs: both sides' values and the bound of docs/bounds.md §8
// evaluated from the source's values (verify/online_softmax/bounds/backward_bound.h); `bounded` false where a row
// of the cell is outside the bound's hypotheses (then the values must be NaN on both sides or equal).
struct BackwardCellValue {
  double src = 0, tgt = 0, bound = 0;
  bool bounded = true;
};
std::vector<BackwardCellValue> evaluate_backward_cells(const BackwardIdentity& id, const TermStore& store,
                                                       const TensorMap& inputs, Prec p);
// Whether a cell's target value is within its bound (rounding against us), or NaN where the source
// is NaN, or equal where unbounded.
bool backward_cell_ok(const BackwardCellValue& c);

}  // namespace fp::verify
