#include "rewrites/online_softmax/axis_roles.h"

#include <algorithm>
#include <set>

namespace fp::osm {

bool RoleEnv::bind(const Signature& sig, const std::vector<Index>& idx) {
  if (sig.size() != idx.size()) return false;
  for (std::size_t a = 0; a < sig.size(); ++a) {
    const Slot& slot = sig[a];
    const Index i = idx[a].canonical();
    if (slot.is_fixed()) {
      if (!i.is_fixed() || i.offset != slot.fixed) return false;
      continue;
    }
    if (!i.is_plain_iterator()) return false;
    const std::string& sym = i.terms[0].sym;
    auto it = sym_role_.find(sym);
    if (it != sym_role_.end()) {
      if (it->second != slot.role) return false;
      continue;
    }
    for (const auto& [s, r] : sym_role_)
      if (r == slot.role) return false;  // roles are injective over symbols
    sym_role_[sym] = slot.role;
  }
  return true;
}

std::optional<Signature> RoleEnv::sign(const std::vector<Index>& idx) const {
  Signature sig;
  std::set<std::string> seen;
  for (const auto& raw : idx) {
    const Index i = raw.canonical();
    if (i.is_fixed()) {
      sig.push_back(Slot{-1, i.offset});
      continue;
    }
    if (!i.is_plain_iterator()) return std::nullopt;
    const std::string& sym = i.terms[0].sym;
    auto r = role_of(sym);
    if (!r || !seen.insert(sym).second) return std::nullopt;
    sig.push_back(Slot{*r, 0});
  }
  return sig;
}

std::optional<int> RoleEnv::role_of(const std::string& sym) const {
  auto it = sym_role_.find(sym);
  if (it == sym_role_.end()) return std::nullopt;
  return it->second;
}

LoopCheck check_loops(const RoleEnv& env, const Nest& nest, const Vocabulary& vocab) {
  for (const auto& l : nest.loops)
    if (l.dead()) return LoopCheck{LoopFit::Dead, &l};
  for (const auto& l : nest.loops)
    if (!env.role_of(l.sym)) return LoopCheck{LoopFit::Unbound, &l};
  for (const auto& l : nest.loops) {
    std::int64_t extent = vocab.extents[static_cast<std::size_t>(*env.role_of(l.sym))];
    if (l.from != 0 || l.to != extent - 1) return LoopCheck{LoopFit::Partial, &l};
  }
  return LoopCheck{};
}

std::vector<int> roles_of(const Signature& sig) {
  std::vector<int> out;
  for (const auto& s : sig)
    if (!s.is_fixed()) out.push_back(s.role);
  std::sort(out.begin(), out.end());
  return out;
}

bool has_all_roles(const Signature& sig, const std::vector<int>& roles) {
  std::vector<int> want = roles;
  std::sort(want.begin(), want.end());
  return roles_of(sig) == want;
}

bool covers_all_cells(const Signature& sig, const Node& node, const Vocabulary& vocab) {
  if (sig.size() != node.dims.size()) return false;
  for (std::size_t a = 0; a < sig.size(); ++a) {
    if (sig[a].is_fixed()) {
      if (node.dims[a] != 1 || sig[a].fixed != 0) return false;
    } else if (vocab.extents[static_cast<std::size_t>(sig[a].role)] != node.dims[a]) {
      return false;
    }
  }
  return true;
}

std::vector<Index> indices_for(const Signature& sig, const std::vector<std::string>& role_syms) {
  std::vector<Index> out;
  for (const auto& s : sig)
    out.push_back(s.is_fixed() ? Index::fixed(s.fixed)
                               : Index::iter(role_syms[static_cast<std::size_t>(s.role)]));
  return out;
}

}  // namespace fp::osm
