#include "rewrites/members.h"

#include <algorithm>

#include "core/diagnostic.h"
#include "rewrites/online_softmax/online_softmax.h"

namespace fp {

namespace {

// The product's members, in tier order: one line per member.
std::vector<Member> product_members() {
  return {
      online_softmax_member(),
  };
}

std::vector<Member>& registry() {
  static std::vector<Member> members = product_members();
  return members;
}

std::vector<std::string> names_of(const Member& m) {
  std::vector<std::string> names{m.id};
  for (const auto& s : m.shapes) names.push_back(s.id);
  for (const auto& k : m.config_keys) names.push_back(k.name);
  return names;
}

}  // namespace

const std::vector<Member>& tier_members() {
  return registry();
}

const Member* find_member(const std::string& id) {
  for (const auto& m : registry())
    if (m.id == id) return &m;
  return nullptr;
}

const ShapeInfo* find_shape(const std::string& shape_id) {
  for (const auto& m : registry())
    for (const auto& s : m.shapes)
      if (s.id == shape_id) return &s;
  return nullptr;
}

const ClaimSpec* find_claim(const std::string& shape_id, const std::string& claim_id) {
  const ShapeInfo* s = find_shape(shape_id);
  if (!s) return nullptr;
  for (const auto& c : s->claims)
    if (c.id == claim_id) return &c;
  return nullptr;
}

Config with_every_gate_on(Config c) {
  for (const auto& m : registry()) c.set(m.gate, "true");
  return c;
}

std::string every_gate_setting() {
  std::string out;
  for (const auto& m : registry()) out += (out.empty() ? "--set " : " --set ") + m.gate + "=true";
  return out;
}

ScopedMemberRegistration::ScopedMemberRegistration(Member m) : id_(m.id) {
  std::vector<std::string> taken;
  for (const auto& other : registry())
    for (auto& n : names_of(other)) taken.push_back(std::move(n));
  for (const auto& k : placement_config_keys()) taken.push_back(k.name);
  for (const auto& n : names_of(m))
    FP_INTERNAL_CHECK(std::find(taken.begin(), taken.end(), n) == taken.end(),
                      "member {} declares '{}', which is already taken", m.id, n);
  registry().push_back(std::move(m));
}

ScopedMemberRegistration::~ScopedMemberRegistration() {
  auto& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(), [&](const Member& m) { return m.id == id_; }), r.end());
}

}  // namespace fp
