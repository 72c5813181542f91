#pragma once
// Planted bugs for the soundness tests (tests/unit/verify_mutants_test.cpp) and the benchmark:
// each mutant is a real rewritten routine (the target of one tier obligation) with one bug a
// rewrite could plausibly make. Every mutant must come out `refuted` — never unknown, never
// proved. A mutant that is semantically equivalent to the correct target is not a bug and is not
// listed (e.g. swapping the operands of max, which is commutative bit for bit).

#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"

namespace fp::verify {

struct Mutant {
  std::string id;
  std::string description;
  Routine tgt;
};

// Mutants of an online-softmax.normalizer-scan target (the routine with the scan). Needs a scan
// over at least 2 keys and f32 or f16/bf16 scores (state f32).
std::vector<Mutant> normalizer_scan_mutants(const Routine& tgt);

// Mutants of an online-softmax.value-pass-hoist target; `app` is the application (its statement
// position locates the hoisted nest).
std::vector<Mutant> value_pass_mutants(const Routine& tgt, const Application& app);

}  // namespace fp::verify
