#pragma once
// What the tier records about each rewrite it performed (an Application, with one verification
// obligation per claim) and about each candidate it left alone (a Decline, with a stable reason
// code). verify/ turns obligations into verdicts; `flashproof rewrite --explain` prints both.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"

namespace fp {

// exact: every covered cell is bitwise equal to the original routine's, for every input.
// bounded: every covered cell is within a rounding bound of the original's (BoundTerms says what
// the bound is about), NaN exactly where the original has NaN.
enum class ObligationKind : std::uint8_t { Exact, Bounded };
const char* obligation_kind_name(ObligationKind k);  // "exact", "bounded"

// The cells a claim covers: `cells` is the node read with the rewritten nest's symbols and their
// ranges, e.g. "l[b, s] for b in 0..1, s in 0..3".
struct Cover {
  std::string node;
  std::string cells;
};

// What a bounded claim's rounding bound is a function of: a sum of `terms` exponentials
// reassociated into a running rescaled sum, stored at `storage`, carried at `state`.
struct BoundTerms {
  std::int64_t terms = 0;
  Prec storage = Prec::F32;
  Prec state = Prec::F32;
  std::int64_t block = 0;  // keys per block of a block fold (min(B, terms)); 0: one key per step
};

struct Obligation {
  ObligationKind kind = ObligationKind::Exact;
  std::string claim;        // stable id of the claim, e.g. "normalizer-sum"
  std::string description;  // one sentence
  std::vector<Cover> covers;
  std::optional<BoundTerms> bound;  // bounded claims only
};

struct Application {
  std::string member;  // "online-softmax"
  std::string shape;   // "online-softmax.normalizer-scan"
  int round = 0;       // tier round (1-based)
  // Top-level statement positions (1-based, in the round's input routine) the match consumed,
  // the anchor first, and their source lines (0 for routines built in memory).
  std::vector<int> statements;
  std::vector<int> lines;
  // Role -> node, in a fixed order per shape, e.g. {"x", "scores"}, {"m", "m"}.
  std::vector<std::pair<std::string, std::string>> matched;
  std::string emitted;  // one sentence summarizing what replaced the matched statements
  // How many new top-level statements replace the anchor, when the member knows (0: the new run
  // ends where the round's input resumes). verify isolates one application of a round by it
  // (verify/task.cpp): two applications whose runs are adjacent cannot be told apart otherwise.
  int anchor_run = 0;
  std::vector<Obligation> obligations;
};

// The node an application matched in `role` ("p", "m", ...), or "" when it records none.
std::string matched_node(const Application& a, const std::string& role);

struct Decline {
  std::string member;
  std::string shape;
  int round = 0;
  int statement = 0;  // the anchor's top-level position (1-based)
  int line = 0;       // its source line, 0 when built in memory
  std::string code;   // stable kebab-case reason code, e.g. "chain-precision-mismatch"
  std::string sentence;
};

// Multi-line human-readable renderings used by --explain (docs/rewrites.md shows the format).
std::string format_application(const Application& a);
std::string format_decline(const Decline& d);

}  // namespace fp
