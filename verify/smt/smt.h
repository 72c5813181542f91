#pragma once
// The solver-facing interface of verify/: plain value types in, plain value types out. Only the
// .cpp files of verify/smt/ include z3++.h (Alive2's smt/ folder); CMake links Z3 into this
// folder's library alone.
//
// Every query runs in a fresh Z3 context with a deterministic resource limit (rlimit) and a
// wall-clock timeout as a backstop, so a rerun gives the same answer unless the backstop fired.
// With a dump path set, the query is also written as an SMT-LIB2 file that the `z3` command
// replays (`z3 FILE`).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "verify/symbolic/term.h"

namespace fp::verify::smt {

struct SmtLimits {
  std::uint64_t rlimit = 20'000'000;
  double timeout_s = 60;
  std::string dump_path;  // SMT-LIB2 file to write (empty: none)
  std::string comment;    // first line of the dumped file
};

enum class SmtStatus : std::uint8_t { Unsat, Sat, Unknown };
const char* smt_status_name(SmtStatus s);

struct SmtOutcome {
  SmtStatus status = SmtStatus::Unknown;
  bool timed_out = false;     // the wall-clock backstop fired
  bool resource_out = false;  // the rlimit ran out
  std::string reason;         // Z3's reason_unknown, or a note
  double seconds = 0;
  // Sat: the model's value of every input variable of the query (by TermStore::vars() index);
  // inputs absent from the query are free (callers pick 0).
  std::map<std::uint32_t, double> inputs;
  int witness = -1;        // which pair (or cell) the model separates
  bool used_cuts = false;  // the query abstracted shared subterms: the model may be spurious
};

// "4.8.12.0" (Z3_get_full_version is longer; this is what verdicts print after "z3").
std::string solver_version();
std::string solver_full_version();

// ---- floating-point theory (bitwise equality) -------------------------------------------------

struct FpQueryOptions {
  // Replace every subterm the two sides share by a fresh constant of its sort (sound for
  // proving equality: it generalizes the query; a model may then be spurious, so callers
  // re-ask without cuts before trusting one).
  bool cut_shared = true;
};

// Is there an input on which some pair (src, tgt) differs bitwise (SMT-LIB `=` on FP values:
// one NaN, -0 != +0; `=` on i32 bit-vectors)? Unsat: every pair is equal for every input and
// every implementation of exp and pow.
SmtOutcome find_difference(const TermStore& store, const std::vector<std::pair<TermP, TermP>>& pairs,
                           const FpQueryOptions& options, const SmtLimits& limits);

// The encoding's self-check (Alive2's "compare each with itself"): is there an input on which a
// term differs from an independent second encoding of itself? Must be unsat.
SmtOutcome self_check(const TermStore& store, const std::vector<TermP>& terms, const SmtLimits& limits);

// Z3's own value of the encoding of `t` on concrete inputs (every input variable of t given),
// for the encoding's tests; nullopt when t uses exp or pow (uninterpreted).
std::optional<double> evaluate_encoding(const TermStore& store, TermP t,
                                        const std::map<std::uint32_t, double>& inputs);

// Is there an input on which some pair violates a relative bound: NaN in one and not the
// other, an infinity not matched exactly, or finite values with |tgt - src| > rel·|src|?
SmtOutcome find_bound_violation(const TermStore& store, const std::vector<std::pair<TermP, TermP>>& pairs,
                                double rel, const FpQueryOptions& options, const SmtLimits& limits);

// ---- integer arithmetic over symbolic extents (the all-sizes lift) ----------------------------

// A reduction nest and a permutation of its loops. Every loop `sym in lo..hi` gets symbolic
// integer bounds lo <= hi; indices keep their concrete coefficients (they are the program's
// structure, not its size).
struct OrderQuery {
  std::vector<std::string> src_loops;  // source order, outermost first
  std::vector<std::string> tgt_loops;  // target order, outermost first (a permutation)
  int outer = 0;                       // target loops before the hoisted read
  std::vector<Index> target;           // the accumulated cell's indices
  std::vector<Index> hoisted;          // the hoisted read's indices
};

struct OrderFact {
  std::string name;  // "bijection", "order", "hoisted-read"
  SmtOutcome outcome;
  std::string witness;  // for a failed fact: the extents and iterations Z3 found
  bool shared = false;  // answered by an identical query earlier in this process
};

// Proves: the target loop order is a bijection of iteration vectors onto the source's; any two
// iterations that accumulate into the same target cell are in the same relative order in both;
// the hoisted read's cell depends only on the outer loops. One query each. The queries mention
// no node and no extent, so every layer and head of a model asks the same three: decided answers
// are kept per process, keyed by the query's content (not when dumping queries).
std::vector<OrderFact> prove_order(const OrderQuery& q, const SmtLimits& limits,
                                   const std::string& dump_prefix);

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
  // (verify/bounds/bound_formula's exp_error, already rounded up).
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
// the doubles given (u = 2^-bits; eps and omega as bound_formula computes them).
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
  double eps_storage = 0;  // relative error of exp at the storage precision (bound_formula's exp_error)
  double eps_state = 0;    // ... at the state precision
  // Upper bounds on the underflow terms as 2^a + 2^tail (bound_formula's model_underflow):
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

struct InductionStep {
  std::string name;       // "src.step-upper", "tgt.closing", ...
  std::string statement;  // what unsat proves, in words
  SmtOutcome outcome;
};

// Runs every query of the induction (each under `limits`; a dump path is used as a prefix:
// PREFIX-NAME.smt2). The bound is proved for every n when every outcome is unsat.
std::vector<InductionStep> prove_normalizer_induction(const InductionQuery& q, const SmtLimits& limits);

// The block fold's invariant for every block count and block size (verify/smt/fold_induction.cpp,
// docs/bounds.md §7): the block sum (the composed sum at the state precision, block.*), the
// fold's base and steps (a block that raises the maximum, one that does not), and its closing.
// The composed side, the summed lemma, the final store and REL's closing are the scan's queries.
// Mutants: DropGamma (P_1 without the block sum's γ_{b-1}), MissingRescale (L' = fl(L + R) on a
// raised maximum).
std::vector<InductionStep> prove_fold_induction(const InductionQuery& q, const SmtLimits& limits);

// The block fold's output bound for every block count and block size
// (verify/smt/fold_output_induction.cpp, docs/bounds.md §7 "O"): the per-key lemma, the
// numerator's invariant through a rescale and an addition, its closing through O = U / L, the
// composed probabilities and value pass, and the pair's closing. Mutant: DropRounding (φ not
// grown by an addition's rounding).
std::vector<InductionStep> prove_fold_output_induction(const InductionQuery& q, const SmtLimits& limits);

// The fold's key blocks for every key count sk >= 1 and block size B >= 1 (b = min(B, sk),
// ceil(sk / b) blocks; verify/smt/block_cover.cpp, docs/bounds.md §7 "Tail"): every key is exactly
// one (block, cell) (tail.cover, tail.once), without a tail every cell is a key
// (tail.exact-division) — Z3 over the integers — and a padded -inf cell adds exactly nothing to
// the block's sum at the state precision (tail.zero, floating point). Mutant: floor_blocks
// (floor(sk / b) blocks: the tail's keys uncovered, tail.cover sat).
std::vector<InductionStep> prove_block_cover(Prec state, const SmtLimits& limits, bool floor_blocks = false);

// The fused backward's blocked pair loop (verify/fused_backward_order.h): main iterations (blk, j),
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

// The γ calculus the fused backward's bound is assembled with (verify/smt/gamma_calculus.cpp,
// docs/bounds.md §8), for every unit roundoff 0 < u <= 2^-8 and every size with size·u <= 1/2:
// Higham's product rule (1 + θ_j)(1 + θ_k) = 1 + θ_{j+k}, monotonicity, one more rounding or
// quotient (θ_{j+1}), a sum's term over k roundings, the composed gradient's two coefficient facts
// and the contraction's term. `mutant` weakens the product rule and the composed gradient's
// γ_{n+4} by one index (both then sat).
std::vector<InductionStep> prove_gamma_calculus(const SmtLimits& limits, bool mutant = false);

// The fused backward bound's assembly, step by step (verify/smt/backward_assembly.cpp,
// docs/bounds.md §8): ring identities, product and triangle bounds and closings, each proved for
// every value of its variables given the rounding model, the earlier steps and the γ calculus.
// `mutant` closes the composed gradient with γ_{n+2} instead of γ_{n+4} (that step then sat).
std::vector<InductionStep> prove_backward_assembly(const SmtLimits& limits, bool mutant = false);

}  // namespace fp::verify::smt
