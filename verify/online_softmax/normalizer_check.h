#pragma once
// The bounded claim of online-softmax.normalizer-scan (`normalizer-sum`): l is the composed sum
// of exp(x - m) within the certified rounding bound, NaN exactly where the composed form has NaN.
// docs/bounds.md derives the bound; docs/verify.md describes the steps:
//
//  (i)   recurrence, for every extent: the structural lift of verify/online_softmax/normalizer_lift.h (the
//        target's l is the online recurrence over the same row of scores whose composed sum the
//        source's l is, whatever the extents). Where the lift does not apply, at the routine's own
//        sizes: symbolic execution of both routines; from the source's max reduction (the
//        application's anchor statement) and the scores it reads, build per row the canonical
//        composed sum and the canonical online recurrence (the obligation's metadata: n keys,
//        storage and state precisions) in the same hash-consed store; every covered cell's source
//        term must be the first and its target term the second (pointer equality). Anything else
//        is not the recurrence the bound is about;
//  (ii)  the certificate of the formula at (storage, state): the induction for every n
//        (verify/online_softmax/smt/induction.cpp; its value at n against the stated REL); (a) Z3 over the reals,
//        n = 1..real_n, every pattern of new maxima, when asked for (--real-n) or when the
//        induction is not proved (then n <= 3) — undecided patterns are reported unknown, never
//        passed; (b) MPFR rows (>= 10^4, adversarial families); (c) the worst observed error as a
//        fraction of the bound (tightness);
//  (iii) the interpreter differential on random inputs and adversarial ones — on a small instance
//        of the family (verify/size_reduction.h shrink_pair) when (i) holds for every extent, else
//        at the routine's sizes: l within the bound, NaN positions exact, and the downstream nodes
//        (probabilities, the value pass) within their propagated bounds.
// With (i) for every extent and the induction proved, the scope is all sizes: the routine's size
// only instantiates REL.
// A target that is not the recurrence gets the full counterexample search against the bound: a
// violation is `refuted` with the case; none found is `unknown` (approximation in the way).

#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "rewrites/application.h"
#include "rewrites/online_softmax/claims.h"
#include "verify/online_softmax/bounds/mpfr_reference.h"
#include "verify/pair_check.h"
#include "verify/size_reduction.h"
#include "verify/verdict.h"

namespace fp::verify {

// Adversarial trials after a proof for every extent: a cross-check (a few per input family).
inline constexpr int kProvedSearchTrials = 64;

// The formula's certificate at one (storage, state, focus n): parts (a), (b), (c).
struct Certificate {
  std::vector<CertificatePart> parts;
  double tightness = 0;
  double output_tightness = 0;  // the block fold's O on the MPFR rows (0 otherwise)
  bool mpfr_ok = false;
};

// Computes certificates once per key per process (thread-safe); `disk` (may be null) persists
// them across runs (verify/proof_cache.h).
class ProofCache;
// `block` > 0: the block fold's certificate (docs/bounds.md §7) at blocks of `block` cells.
Certificate certificate_for(Prec storage, std::int64_t n, const Limits& limits, ProofCache* disk,
                            const std::string& dump_prefix, std::int64_t block = 0);

struct BoundedCheck {
  VerdictKind kind = VerdictKind::Unknown;
  UnknownReason reason = UnknownReason::None;
  std::string message;
  std::vector<std::string> steps;
  std::string scope;
  bool all_sizes = false;  // (i) holds for every extent (the structural lift)
  BoundInfo bound;
  std::optional<Found> counterexample;
  std::vector<NodeCheck> checks;  // what the counterexample violates (for the written case)
  Routine src_run, tgt_run;       // the routines the checks run on (extra outputs marked)
  Routine case_src, case_tgt;     // the pair at the sizes the checks ran at (a case writes these)
};

// `small_instance`, when given, makes the pair the all-sizes cross-checks run on (a fold's: the
// tier's target for a shrunk source); else the pair's extents are substituted.
BoundedCheck check_normalizer_sum(const Routine& src, const Routine& tgt, const Application& app,
                                  const Obligation& ob, const Limits& limits, ProofCache* disk,
                                  const std::string& dump_prefix,
                                  const std::function<ShrunkPair()>& small_instance = {});

// A recurrence check (i): term identity of the target's cells with the recurrence a bound is about.
struct RecurrenceCheck {
  bool proved = false;
  bool term_limit = false;  // could not run: a resource limit, not a structural mismatch
  std::string detail;       // the proof's sentence, or why it failed
};

// (i) of the fold's output at the routine's sizes: every cell of `o` is, as a hash-consed term over
// the scores at the max reduction and the values, the composed (exp(x - m) / l)·v in the source and
// the fold's numerator in blocks of bt.block over its norm in the target (docs/bounds.md §7 "O").
RecurrenceCheck fold_output_identity(const Routine& src, const Routine& tgt, const Application& app,
                                     const osm::SumTerms& bt, const std::string& o, const std::string& p,
                                     const Limits& limits);

}  // namespace fp::verify
