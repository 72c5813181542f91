#pragma once
// The online-softmax member's solver queries (this folder's .cpp files are the only ones of the
// member that include z3++.h; verify/smt/smt.h is the engine's side): the normalizer's bound for
// every n, the block fold's l and O for every (n, b), its key blocks, the fused backward's blocked
// order and its bound's assembly. Plain value types in, plain value types out, as in smt.h.

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir.h"
#include "verify/smt/smt.h"

namespace fp::verify::smt {

// ---- real arithmetic: the rounding-bound certificate ------------------------------------------

// The online-softmax normalizer over n keys whose running maximum rises exactly at the steps
// `pattern` marks (pattern[t-1] == '1': key t is a new maximum), composed (storage unit roundoff
// u_storage) against the scan (state unit roundoff u_state; the final store rounds again when
// the precisions differ), in real arithmetic: every rounding a variable |δ| <= u, every
// exponential a positive real constrained by exp(a - b) = exp(a)/exp(b), 1 + s <= exp(s) and
// e·d·exp(-d) <= 1 (an instance of 1 + s <= exp(s) at s = d - 1), exp's own error |η| <= the
// stated ulp envelope. Asks for an assignment with |l_scan - l_composed| > rel·l_composed.
struct RealBoundQuery {
  int n = 2;
  std::string pattern;    // n - 1 characters of '0'/'1'
  int storage_bits = 24;  // significand bits (u = 2^-bits)
  int state_bits = 24;
  // The relative error of exp at the storage and the state precision, its own rounding included
  // (verify/bounds/rounding_model's exp_error, already rounded up).
  double storage_exp_eps = 0;
  double state_exp_eps = 0;
  double rel = 0;
};
SmtOutcome check_real_bound(const RealBoundQuery& q, const SmtLimits& limits);

// ---- real arithmetic: the normalizer bound for every n, by induction --------------------------

// docs/bounds.md §5 "(a) induction". The bound B_src(n), B_tgt(n), REL(n) is proved for every n
// by fixed-size queries in which the step count k is a real variable: the invariant of each
// recurrence after k steps (base case, inductive step for each kind of step), the per-key
// argument-rounding lemma summed over the keys (itself by induction), and the closing queries
// that turn the invariants at k = n into B_src, B_tgt and REL. Every query asks Z3 (nonlinear
// real arithmetic) for a counterexample; unsat is proved. Constants are the exact rationals of
// the doubles given (u = 2^-bits; eps and omega as rounding_model computes them).
enum class InductionMutant : std::uint8_t {
  None,
  DropAlpha,       // B_src and B_tgt without their (n - 1)·α term (a bound too small by one term)
  DropGamma,       // the composed sum's invariant and B_src with γ_{k-2} for γ_{k-1} (one rounding short)
  DropRounding,    // φ with (1 + u_t)^(n-1) for (1 + u_t)^(2(n-1)) (one rounding per step short)
  MissingRescale,  // the scan without the rescale: l_k = fl(l_{k-1} + exp(x_k - m_k)) on a new maximum
};
const char* induction_mutant_name(InductionMutant m);

struct InductionQuery {
  int storage_bits = 24;   // u_s = 2^-storage_bits
  int state_bits = 24;     // u_t = 2^-state_bits
  double eps_storage = 0;  // relative error of exp at the storage precision (rounding_model's exp_error)
  double eps_state = 0;    // ... at the state precision
  // Upper bounds on the underflow terms as 2^a + 2^tail (rounding_model's model_underflow):
  // ω_storage >= Ω_s (the absolute error of a subnormal exp result at the storage precision,
  // docs/bounds.md §6), ω_state >= Ω_t (at the state precision; it also bounds a subnormal
  // product's ω_t). The queries prove the bound with these values in place of the exact
  // ones (a larger absolute term: a weaker claim) to keep the rationals short: 2^-150 + 2^-1075
  // makes nlsat orders of magnitude slower.
  int omega_storage_log2 = -150;
  int omega_state_log2 = -150;
  int omega_tail_log2 = -148;
  double storage_min_normal = 0;  // smallest normal of the storage precision (the final store)
  bool final_store = false;       // storage != state: the scan's result is rounded once more
  InductionMutant mutant = InductionMutant::None;
};


// Runs every query of the induction (each under `limits`; a dump path is used as a prefix:
// PREFIX-NAME.smt2). The bound is proved for every n when every outcome is unsat.
std::vector<InductionStep> prove_normalizer_induction(const InductionQuery& q, const SmtLimits& limits);

// The block fold's invariant for every block count and block size (verify/online_softmax/smt/fold_induction.cpp,
// docs/bounds.md §7): the block sum (the composed sum at the state precision, block.*), the
// fold's base and steps (a block that raises the maximum, one that does not), and its closing.
// The composed side, the summed lemma, the final store and REL's closing are the scan's queries.
// Mutants: DropGamma (P_1 without the block sum's γ_{b-1}), MissingRescale (L' = fl(L + R) on a
// raised maximum).
std::vector<InductionStep> prove_fold_induction(const InductionQuery& q, const SmtLimits& limits);

// The block fold's output bound for every block count and block size
// (verify/online_softmax/smt/fold_output_induction.cpp, docs/bounds.md §7 "O"): the per-key lemma, the
// numerator's invariant through a rescale and an addition, its closing through O = U / L, the
// composed probabilities and value pass, and the pair's closing. Mutant: DropRounding (φ not
// grown by an addition's rounding).
std::vector<InductionStep> prove_fold_output_induction(const InductionQuery& q, const SmtLimits& limits);

// The fold's key blocks for every key count sk >= 1 and block size B >= 1 (b = min(B, sk),
// ceil(sk / b) blocks; verify/online_softmax/smt/block_cover.cpp, docs/bounds.md §7 "Tail"): every key is exactly
// one (block, cell) (tail.cover, tail.once), without a tail every cell is a key
// (tail.exact-division) — Z3 over the integers — and a padded -inf cell adds exactly nothing to
// the block's sum at the state precision (tail.zero, floating point). Mutant: floor_blocks
// (floor(sk / b) blocks: the tail's keys uncovered, tail.cover sat).
std::vector<InductionStep> prove_block_cover(Prec state, const SmtLimits& limits, bool floor_blocks = false);

// The fused backward's blocked pair loop (verify/online_softmax/fused_backward_order.h): main iterations (blk, j),
// 0 <= blk < NB, 0 <= j < B, read pair a_blk·blk + a_j·j + c0 (the coefficients the program's
// index has); with a tail, iterations 0 <= j < R read pair t_j·j + B·NB. For every NB >= 0 and
// (with a tail) every 1 <= R < B, over n = B·NB + R pairs: main.order, main.range, main.cover,
// tail.order, tail.range, tail.cover — together, every pair 0 <= t < n is read exactly once, in
// ascending order (the main loop's before the tail's). Each fact is one unsat query; a dump
// path is a prefix (PREFIX-NAME.smt2).
struct BlockedOrderQuery {
  std::int64_t block = 1;                          // B: the cell loop's extent
  std::int64_t blk_coef = 0, j_coef = 0, offset = 0;  // the main loop's pair index
  bool tail = false;
  std::int64_t tail_j_coef = 0;                    // the tail's pair index: t_j·j + B·NB
};
std::vector<InductionStep> prove_blocked_order(const BlockedOrderQuery& q, const SmtLimits& limits);

// The fused backward bound's assembly, step by step (verify/online_softmax/smt/backward_assembly.cpp,
// docs/bounds.md §8): ring identities, product and triangle bounds and closings, each proved for
// every value of its variables given the rounding model, the earlier steps and the γ calculus.
// `mutant` closes the composed gradient with γ_{n+2} instead of γ_{n+4} (that step then sat).
std::vector<InductionStep> prove_backward_assembly(const SmtLimits& limits, bool mutant = false);

}  // namespace fp::verify::smt
