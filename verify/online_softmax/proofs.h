#pragma once
// The online-softmax member's proofs (docs/online_softmax.md; the rewriter is
// rewrites/online_softmax/): the checkers its claims name, registered with one line in
// verify/proofs.cpp. Everything in this folder is the member's own mathematics — its checkers
// (checkers/), identities and lifts, bounds and certificates (bounds/), and Z3 steps (smt/, the
// only sources here that see the solver) — built on the generic engine of verify/.

#include <vector>

#include "verify/checkers.h"

namespace fp::verify {

std::vector<Checker> online_softmax_checkers();

// Recognizes a hand-written block fold of the source's composed attention (pair_recognition.cpp).
PairRecognizer online_softmax_pair_recognizer();

}  // namespace fp::verify
