#pragma once
// Verification tasks: one per obligation of the tier's applications on a routine (tier_tasks), or
// one for a hand-written pair (pair_task).
//
// Every obligation is discharged on its own (source, target) pair: the source is the routine at
// the start of the application's tier round, the target the same routine after that round's
// member ran with only the application's shape enabled, with the application isolated (only its
// own statements rewritten). An exact claim proved on such a pair is a statement-level
// equivalence, so it composes with the other shapes' rewrites; a bounded claim is certified on the
// pair it is about.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rewrites/tier.h"
#include "verify/verdict.h"

namespace fp::verify {

struct Task {
  std::string id;      // "<application>.<claim>" ("1.sum"), or "pair"
  std::string member;  // "" for a hand-written pair
  std::string shape;
  Application app;
  Obligation obligation;
  Routine src, tgt;
  std::optional<double> rel;  // hand-written bounded:REL
  bool hand_pair = false;
  std::string file;
  std::string repro;
  // The name of this obligation's files (its counterexample case directory, its dumped queries):
  // its id, unless the caller sets a name unique across a run of several inputs ("attn.1.x").
  std::string artifact_name;
  const std::string& artifact() const { return artifact_name.empty() ? id : artifact_name; }
  // Tier tasks: the isolated target the tier emits for `s` (this task's source with its extents
  // substituted, verify/size_reduction.h), or nullopt when the member does not make this application
  // there. Empty for hand-written pairs. Only meaningful while tgt is what it emits for src (a
  // planted mutant replaces tgt, and the case writer then checks nothing against it).
  std::function<std::optional<Routine>(const Routine& s)> reemit;
  // The same with some of the configuration's keys set (key, value as text): a member's proof may
  // re-emit a small instance under its own keys (a block size that leaves several blocks and a tail).
  using Settings = std::vector<std::pair<std::string, std::string>>;
  std::function<std::optional<Routine>(const Routine& s, const Settings& settings)> reemit_with;
  // Tier tasks: the routine the tier ran on, and this task's source for that routine resized (the
  // tier re-run up to the task's round; nullopt when it does not reach it): a source holding an
  // earlier round's rewrite, which hard-codes its sizes, is shrunk through them
  // (verify/size_reduction.h). Empty for hand-written pairs.
  std::shared_ptr<const Routine> origin;
  std::function<std::optional<Routine>(const Routine& origin)> reach;
  // A kCertifiedClaim pair no member recognized: every member's reason.
  std::string unrecognized;
  // A recognized hand pair (no reemit): which resized pairs are still an instance of the member's
  // rewrite, so that a counterexample's sizes shrink only to such pairs (verify/case_attach.cpp).
  std::function<bool(const Routine& src, const Routine& tgt)> faithful_resize;
};

// The tier's applications on `r`, one task per obligation, in application order. `repro_base`
// is the command that reproduces the run; each task's repro adds `--obligation ID`.
struct TierTasks {
  RewriteResult result;
  std::vector<Task> tasks;
};
TierTasks tier_tasks(const Routine& r, const Config& config, const TierOptions& options,
                     const std::string& file, const std::string& repro_base);

// A hand-written pair: claim "exact" or "bounded:REL" (REL a positive number). Throws
// UserError(64) for a malformed claim.
Task pair_task(Routine src, Routine tgt, const std::string& claim, const std::string& file,
               const std::string& repro);
// The claim "bounded" with no REL: the pair is one of a member's rewrites, within that rewrite's
// certified bounds (verify/checkers.h recognize_pair).
inline constexpr const char* kCertifiedClaim = "bounded";
// The tasks of a hand-written pair: pair_task's one, or under kCertifiedClaim the recognizing
// member's obligations; when no member recognizes the pair, one task whose verdict is unknown
// with every member's reason.
std::vector<Task> pair_tasks(Routine src, Routine tgt, const std::string& claim, const std::string& file,
                             const std::string& repro, const Limits& limits);
// Parses "bounded:REL": nullopt for "exact" and "bounded".
std::optional<double> parse_claim(const std::string& claim);

}  // namespace fp::verify
