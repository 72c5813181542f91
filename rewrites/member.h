#pragma once
// A member of the rewrite tier: a stable kebab-case id, the config key that gates it, and one
// function from routine to routine that also reports what it did and what it declined. A member
// may consist of several shapes, each with its own id ("<member>.<shape>") so that --only and
// --disable can select them one at a time.
//
// Contract every member keeps (the tier's fixpoint relies on it): applying it to its own output
// changes nothing (idempotence), and a decline leaves the routine exactly as it was.

#include <functional>
#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "rewrites/config.h"

namespace fp {

struct ShapeInfo {
  std::string id;           // "online-softmax.normalizer-scan"
  std::string claim;        // "exact" or "bounded": what its applications claim
  std::string description;  // one line
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

struct Member {
  std::string id;           // kebab-case, stable
  std::string gate;         // the config key that turns it on, e.g. "online_softmax"
  std::string description;  // one line
  std::vector<ShapeInfo> shapes;
  // Bumped whenever what the member emits or claims changes: cached verdicts are keyed by it.
  std::string version;
  std::function<bool(const Config&)> gate_on;
  std::function<MemberOutput(const Routine&, const MemberContext&)> apply;
};

// Every member of the tier, in the order the tier applies them.
const std::vector<Member>& tier_members();

}  // namespace fp
