#pragma once
// The bounded claim of online-softmax.normalizer-scan (`normalizer-sum`): l is the composed sum
// of exp(x - m) within the certified rounding bound, NaN exactly where the composed form has NaN.
// docs/bounds.md derives the bound; docs/verify.md describes the steps:
//
//  (i)   recurrence: symbolic execution of both routines at their own sizes; from the source's
//        max reduction (the application's anchor statement) and the scores it reads, build per
//        row the canonical composed sum and the canonical online recurrence (the obligation's
//        metadata: n keys, storage and state precisions) in the same hash-consed store; every
//        covered cell's source term must be the first and its target term the second (pointer
//        equality). Anything else is not the recurrence the bound is about;
//  (ii)  the certificate of the formula at (storage, state): (a) Z3 over the reals, n = 1..real_n,
//        every pattern of new maxima — no assignment exceeds the bound (undecided patterns are
//        reported unknown, never passed); (b) MPFR rows (>= 10^4, adversarial families); (c) the
//        worst observed error as a fraction of the bound (tightness);
//  (iii) the interpreter differential on the routine's own random inputs and adversarial ones: l
//        within the bound, NaN positions exact, and the downstream nodes (probabilities, the value
//        pass) within their propagated bounds.
// A target that is not the recurrence gets the full counterexample search against the bound: a
// violation is `refuted` with the case; none found is `unknown` (approximation in the way).

#include <mutex>
#include <optional>
#include <string>

#include "rewrites/application.h"
#include "verify/bounds/mpfr_reference.h"
#include "verify/pair_check.h"
#include "verify/verdict.h"

namespace fp::verify {

// The formula's certificate at one (storage, state, focus n): parts (a), (b), (c).
struct Certificate {
  std::vector<CertificatePart> parts;
  double tightness = 0;
  bool mpfr_ok = false;
};

// Computes certificates once per key per process (thread-safe); `disk` (may be null) persists
// them across runs (verify/proof_cache.h).
class ProofCache;
Certificate certificate_for(Prec storage, std::int64_t n, const Limits& limits, ProofCache* disk,
                            const std::string& dump_prefix);

struct BoundedCheck {
  VerdictKind kind = VerdictKind::Unknown;
  UnknownReason reason = UnknownReason::None;
  std::string message;
  std::vector<std::string> steps;
  std::string scope;
  BoundInfo bound;
  std::optional<Found> counterexample;
  std::vector<NodeCheck> checks;  // what the counterexample violates (for the written case)
  Routine src_run, tgt_run;       // the routines the checks run on (extra outputs marked)
};

BoundedCheck check_normalizer_sum(const Routine& src, const Routine& tgt, const Application& app,
                                  const Obligation& ob, const Limits& limits, ProofCache* disk,
                                  const std::string& dump_prefix);

}  // namespace fp::verify
