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

// ---- proofs in steps ----------------------------------------------------------------------------

// One step of a proof made of several solver queries: its name ("src.step-upper",
// "sum.close", ...), what its unsat answer proves, in words, and the answer. A proof holds when
// every step is unsat.
struct InductionStep {
  std::string name;       // "src.step-upper", "tgt.closing", ...
  std::string statement;  // what unsat proves, in words
  SmtOutcome outcome;
};

// The γ calculus rounding bounds are assembled with (verify/smt/gamma_calculus.cpp,
// docs/bounds.md §8), for every unit roundoff 0 < u <= 2^-8 and every size with size·u <= 1/2:
// Higham's product rule (1 + θ_j)(1 + θ_k) = 1 + θ_{j+k}, monotonicity, one more rounding or
// quotient (θ_{j+1}), a sum's term over k roundings, the composed gradient's two coefficient facts
// and the contraction's term. `mutant` weakens the product rule and the composed gradient's
// γ_{n+4} by one index (both then sat), and adds gamma.sizes-range, a statement false only at large
// sizes (sat: the sizes are not pinned to their least value).
std::vector<InductionStep> prove_gamma_calculus(const SmtLimits& limits, bool mutant = false);

// The rules of summing perturbed products (verify/smt/perturbation_calculus.cpp, docs/bounds.md
// §8 and §8.1), over the reals for every value of their variables given the rounding model and
// the γ calculus: one step of a left-to-right sum of perturbed terms (sum.*, the induction behind
// every sum's bound), a scaled pair (scale.link), a contraction's term (contraction.term), and a
// product with one perturbed factor (carried.*, verify/accumulation_bound.h). `mutant` closes the
// carried difference with one underflow term instead of two (carried.close then sat).
std::vector<InductionStep> prove_perturbation_calculus(const SmtLimits& limits, bool mutant = false);

}  // namespace fp::verify::smt
