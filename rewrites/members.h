#pragma once
// The registered members of the rewrite tier, in the order the tier applies them: the product's,
// one line each in rewrites/members.cpp, then any registered at run time (a test registering a toy
// member). Adding a rewrite is its folder and that one line.

#include <string>
#include <vector>

#include "rewrites/member.h"

namespace fp {

// Every member of the tier, in tier order.
const std::vector<Member>& tier_members();

const Member* find_member(const std::string& id);
// The shape with this id ("<member>.<shape>"), in any registered member.
const ShapeInfo* find_shape(const std::string& shape_id);
// The claim `claim_id` of shape `shape_id`, or nullptr.
const ClaimSpec* find_claim(const std::string& shape_id, const std::string& claim_id);

// `c` with every registered member's gate turned on (a benchmark's "rewritten" form).
Config with_every_gate_on(Config c);
// "--set a=true --set b=true": what turns every registered member on, for hints.
std::string every_gate_setting();

// Registers `m` after the product's members for the object's lifetime (tests). Its id, shape ids
// and config key names must be new: a clash is an internal error.
class ScopedMemberRegistration {
 public:
  explicit ScopedMemberRegistration(Member m);
  ~ScopedMemberRegistration();
  ScopedMemberRegistration(const ScopedMemberRegistration&) = delete;
  ScopedMemberRegistration& operator=(const ScopedMemberRegistration&) = delete;

 private:
  std::string id_;
};

}  // namespace fp
