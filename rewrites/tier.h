#pragma once
// The rewrite tier's driver. It runs on the raw lowered routine, before placement, so placement
// (and every analysis after it) sees the rewritten code: the code itself carries the decision and
// nothing downstream needs to know the config keys.
//
// Each round applies every enabled member once, in tier order; the tier stops after the first
// round that changes nothing (fp::equal structural equality). A round cap of kMaxTierRounds
// turns a member that is not idempotent, or that does not consume its own pattern, into an error
// naming the member instead of a silent loop.

#include <stdexcept>
#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "rewrites/config.h"
#include "rewrites/member.h"
#include "rewrites/members.h"

namespace fp {

inline constexpr int kMaxTierRounds = 8;

struct TierOptions {
  // Member ids or shape ids ("my-member", "my-member.my-shape"). `only`
  // non-empty: nothing outside it applies. `disable`: nothing in it applies. Config gates still
  // apply on top of both. An unknown id is a usage error (UserError 64) naming it.
  std::vector<std::string> only;
  std::vector<std::string> disable;
  // Recorded for the caller; the tier records applications and declines either way.
  bool explain = false;
};

// The routine after one member's application in one round (for --print-after-all).
struct RoundSnapshot {
  int round = 0;
  std::string member;
  bool changed = false;
  Routine routine;
};

struct RewriteResult {
  Routine routine;
  std::vector<Application> applications;  // in order of application
  // Deduplicated across rounds: a candidate declined in round 1 and again in round 2 is listed
  // once (with round 1).
  std::vector<Decline> declines;
  std::vector<RoundSnapshot> rounds;
  // Lines for --explain about members that did not run ("my-member: gate my_member is off").
  std::vector<std::string> notes;
  int rounds_run = 0;

  // The routine `member` received in `round` (`original` before any change): the routine an
  // application's statement positions refer to.
  const Routine& round_input(const Routine& original, int round, const std::string& member) const;
};

// Thrown when the tier has not converged after kMaxTierRounds rounds: an internal error (a member
// broke its contract), never a user error.
class TierDidNotConverge : public std::logic_error {
 public:
  TierDidNotConverge(std::string member, const std::string& message)
      : std::logic_error(message), member_(std::move(member)) {}
  const std::string& member() const { return member_; }

 private:
  std::string member_;
};

// Runs the tier's registered members (tier_members()).
RewriteResult run_tier(const Routine& r, const Config& config, const TierOptions& options = {});
// Runs the given members (tests use this to exercise the driver with toy members).
RewriteResult run_tier(const Routine& r, const Config& config, const TierOptions& options,
                       const std::vector<Member>& members);

// One sentence per --only id (a member or one of its shapes) whose member's config gate is off
// under `config`: --only selects, it never turns a gate on, so such a selection applies nothing.
// The sentence names the key to set. An unknown id is run_tier's usage error (UserError 64).
std::vector<std::string> gated_off_selections(const Config& config, const TierOptions& options,
                                              const std::vector<Member>& members = tier_members());

// The --explain text: notes, then every application and every decline, one block each.
std::string explain_text(const RewriteResult& result);

// The `flashproof list-rewrites` text.
std::string list_rewrites_text(const std::vector<Member>& members);

}  // namespace fp
