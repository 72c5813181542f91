#pragma once
// The online-softmax shapes' mutants (rewrites/mutant.h): planted bugs of their targets, declared
// by the member (online_softmax.cpp) for verify's soundness tests and the fuzzing campaigns.

#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "rewrites/mutant.h"

namespace fp::osm {

// Mutants of an online-softmax.normalizer-scan target (the routine with the scan). Needs a scan
// over at least 2 keys and f32 or f16/bf16 scores (state f32).
std::vector<Mutant> normalizer_scan_mutants(const Routine& tgt);

// Mutants of an online-softmax.value-pass-hoist target; `app` is the application (its statement
// position locates the hoisted nest).
std::vector<Mutant> value_pass_mutants(const Routine& tgt, const Application& app);

// Mutants of an online-softmax.block-fold target that change the running maximum (refuted through
// the fold's exact `fold-max` claim where m is read after the fold: a training step), the sum
// (refuted by `fold-sum`'s certified check: not the fold's recurrence, then a counterexample to
// REL(n, b)) or the output alone (refuted by `fold-output`'s certified check, docs/bounds.md §7).
std::vector<Mutant> block_fold_mutants(const Routine& tgt, const Application& app);

// Mutants of an online-softmax.fused-backward target (blocked form): changes of D, of the
// recomputed p, of dp and ds, and of the gradients' contractions — each refuted through the exact
// `backward-dv` or through `backward-dq` / `backward-dk` (another function: the f64 shadows differ).
// Needs sq = sk (mutants swap operands of the two lengths).
std::vector<Mutant> fused_backward_mutants(const Routine& tgt, const Application& app);

}  // namespace fp::osm
