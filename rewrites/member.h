#pragma once
// A member of the rewrite tier: a stable kebab-case id, the config keys it declares (the gate among
// them), its shapes with their claims and mutants, and one function from routine to routine that
// also reports what it did and what it declined. A member may consist of several shapes, each with
// its own id ("<member>.<shape>") so that --only and --disable can select them one at a time.
//
// Contract every member keeps (the tier's fixpoint relies on it): applying it to its own output
// changes nothing (idempotence), and a decline leaves the routine exactly as it was.

#include <functional>
#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "rewrites/config.h"
#include "rewrites/mutant.h"

namespace fp {

// A claim a shape's applications make, and the verify strategy that discharges it. The checker
// is named, not linked: verify/ registers its strategies by id (verify/checkers.h) — the rewrite
// layer never sees verify/ — and an obligation whose checker is not registered ends unknown
// (unsupported), never proved.
struct ClaimSpec {
  std::string id;  // stable, e.g. "my-claim"; an obligation's `claim`
  ObligationKind kind = ObligationKind::Exact;
  std::string checker;      // e.g. "bitwise", "all-sizes-lift.loop-permutation"
  std::string description;  // one line
};

struct ShapeInfo {
  std::string id;           // "<member>.<shape>", e.g. "my-member.my-shape"
  std::string claim;        // "exact" or "bounded": what its applications claim (list-rewrites)
  std::string description;  // one line
  std::vector<ClaimSpec> claims;
  MutantsOf mutants;  // planted bugs of its targets (rewrites/mutant.h); may be empty
};

// What one application of a member to a routine produced.
struct MemberOutput {
  Routine routine;
  std::vector<Application> applications;
  std::vector<Decline> declines;
};

struct MemberContext {
  const Config* config = nullptr;
  // Whether the shape with this id may apply (after --only / --disable).
  std::function<bool(const std::string& shape_id)> shape_enabled;
  int round = 0;  // 1-based, recorded in applications and declines
};

// A member declares everything about itself in one place (MLIR's pass declarations are the
// model): its id, its config keys (the gate among them), its shapes with their claims, each
// claim's checker and the shape's mutants, and the function that applies it. The tier, the
// configuration, verify's engine, diff and list-rewrites iterate over the registered members
// (rewrites/members.h) and name none of them.
struct Member {
  std::string id;           // kebab-case, stable
  std::string gate;         // the Bool config key that turns it on, e.g. "my_member"
  std::string description;  // one line
  std::vector<ConfigKeySpec> config_keys;  // the gate first
  std::vector<ShapeInfo> shapes;
  // Bumped whenever what the member emits or claims changes: cached verdicts are keyed by it.
  std::string version;
  std::function<MemberOutput(const Routine&, const MemberContext&)> apply;

  bool gate_on(const Config& c) const { return c.flag(gate); }
};

}  // namespace fp
