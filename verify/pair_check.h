#pragma once
// Checking a (source, target) pair cell by cell at the routines' own sizes — the engine behind
// every exact claim and every hand-written `--claim bounded:REL` pair:
//
//   1. the pair is well-typed: the same inputs (names, dims, precisions), covered nodes in both;
//   2. symbolic execution of both into ONE hash-consed store; each side is first compared with
//      itself: its terms, evaluated on concrete inputs, must give the interpreter's values, and
//      Z3 must prove each term equal to an independent second encoding of itself (Alive2's
//      self-check: catches encoding bugs before they can prove anything);
//   3. a covered cell whose two terms are the same pointer is proved;
//   4. for the rest, a concrete counterexample search on the interpreter (cheap, and it yields
//      the real-exp counterexample directly);
//   5. then Z3 (floating-point theory; exp and pow uninterpreted and shared): first with the
//      subterms both sides share cut into fresh constants, then — if that model might be
//      spurious — without cuts. A model is replayed on the interpreter: if it reproduces, the
//      verdict is refuted with that input; if it does not and the terms involve exp or pow, the
//      verdict is unknown (approximation in the way); a model without approximations that does
//      not reproduce is an encoding bug (internal error, abort).

#include <optional>
#include <string>
#include <vector>

#include "verify/search.h"
#include "verify/verdict.h"

namespace fp::verify {

struct PairCheckOptions {
  Limits limits;
  std::string dump_prefix;  // write SMT-LIB2 queries as <prefix>-<what>.smt2 (empty: none)
  // Relative mode (bounded:REL): within rel·|src|, NaN positions exact. Bitwise when nullopt.
  std::optional<double> rel;
};

struct PairCheck {
  VerdictKind kind = VerdictKind::Unknown;
  UnknownReason reason = UnknownReason::None;
  std::string message;
  std::vector<std::string> steps;
  std::string scope;                    // "sizes up to: ..." (the routines' own sizes)
  std::optional<Found> counterexample;  // refuted: failing inputs (not minimized yet)
  std::int64_t cells = 0;               // covered cells
  std::int64_t identical = 0;           // proved by term identity
};

// Checks every cell of `nodes` (all outputs of src when empty).
PairCheck check_pair(const Routine& src, const Routine& tgt, std::vector<std::string> nodes,
                     const PairCheckOptions& options);

// The checks a claim implies on the covered nodes.
std::vector<NodeCheck> claim_checks(const std::vector<std::string>& nodes, std::optional<double> rel);

// Empty when src and tgt have the same inputs and every node exists in both with the same dims
// and precision; else the first problem.
std::string pair_mismatch(const Routine& src, const Routine& tgt, const std::vector<std::string>& nodes);

// "sizes up to: q[1, 3, 1, 2], k[...]" — the sizes a concrete-size proof covers.
std::string concrete_scope(const Routine& r);

}  // namespace fp::verify
