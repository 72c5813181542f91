#pragma once
// What the tier records about each rewrite it performed (an Application, with one verification
// obligation per claim) and about each candidate it left alone (a Decline, with a stable reason
// code). verify/ turns obligations into verdicts; `flashproof rewrite --explain` prints both.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"

namespace fp {

// exact: every covered cell is bitwise equal to the original routine's, for every input.
// bounded: every covered cell is within a rounding bound of the original's (the obligation's
// BoundParameters say what the bound is a function of), NaN exactly where the original has NaN.
enum class ObligationKind : std::uint8_t { Exact, Bounded };
const char* obligation_kind_name(ObligationKind k);  // "exact", "bounded"

// The cells a claim covers: `cells` is the node read with the rewritten nest's symbols and their
// ranges, e.g. "o[i] for i in 0..3".
struct Cover {
  std::string node;
  std::string cells;
};

// What a bounded claim's rounding bound is a function of (term counts, precisions, block sizes),
// as the member that made the claim states it. The member defines the concrete type beside its
// rewriter and its proofs read it back with their own type (dynamic_cast); the engine only prints
// it (--explain) and keys cached verdicts by it, so it names nothing of the member.
struct BoundParameters {
  virtual ~BoundParameters() = default;
  // One line for --explain, e.g. "4 terms, storage f16, state f32".
  virtual std::string text() const = 0;
  // Canonical and complete: two parameters with the same identity bound the same claim the same
  // way (the proof cache's key includes it).
  virtual std::string identity() const = 0;
};

struct Obligation {
  ObligationKind kind = ObligationKind::Exact;
  std::string claim;        // stable id of the claim, declared by the shape (ClaimSpec::id)
  std::string description;  // one sentence
  std::vector<Cover> covers;
  std::shared_ptr<const BoundParameters> bound;  // bounded claims whose bound has parameters
};

// The member's own parameters of `ob`'s bound, or nullptr when it has none of type T.
template <class T>
const T* bound_parameters(const Obligation& ob) {
  return dynamic_cast<const T*>(ob.bound.get());
}

struct Application {
  std::string member;  // the member's id
  std::string shape;   // the shape's id, "<member>.<shape>"
  int round = 0;       // tier round (1-based)
  // Top-level statement positions (1-based, in the round's input routine) the match consumed,
  // the anchor first, and their source lines (0 for routines built in memory).
  std::vector<int> statements;
  std::vector<int> lines;
  // Role -> node, in a fixed order per shape (the member names its roles; its proofs read them
  // back through the member's own typed accessors).
  std::vector<std::pair<std::string, std::string>> matched;
  std::string emitted;  // one sentence summarizing what replaced the matched statements
  // How many new top-level statements replace the anchor, when the member knows (0: the new run
  // ends where the round's input resumes). verify isolates one application of a round by it
  // (verify/task.cpp): two applications whose runs are adjacent cannot be told apart otherwise.
  int anchor_run = 0;
  std::vector<Obligation> obligations;
};

// The node an application matched in `role`, or "" when it records none.
std::string matched_node(const Application& a, const std::string& role);

struct Decline {
  std::string member;
  std::string shape;
  int round = 0;
  int statement = 0;  // the anchor's top-level position (1-based)
  int line = 0;       // its source line, 0 when built in memory
  std::string code;   // stable kebab-case reason code
  std::string sentence;
  // How to write the program so that the shape matches, when the member knows ("" otherwise);
  // reports print it beside the sentence.
  std::string hint;
};

// Multi-line human-readable renderings used by --explain (docs/rewrites.md shows the format).
std::string format_application(const Application& a);
std::string format_decline(const Decline& d);

}  // namespace fp
