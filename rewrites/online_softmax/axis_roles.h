#pragma once
// Axis roles: how the recognizers relate nests without ever comparing loop symbols across nests.
//
// The anchor (the max reduction) fixes a vocabulary of roles: one `row` role per axis of the
// max's target that holds an iterator, and one `reduced` role for the single loop that does not
// index the target. Each role has an extent (the node extent its loop must cover). A node that
// takes part in the match gets a *signature*: per axis, either a role or a fixed index.
//
// Another nest is related to the anchor only through the nodes it shares with the match: a read
// of a signed node *binds* that nest's loop symbols to roles (a role slot wants a plain iterator,
// fresh or already bound to the same role, and no two symbols share a role; a fixed slot wants
// the same fixed index), a store through bound symbols *signs* the stored node, and the nest is
// *consistent* when every one of its loops is bound and covers its role's full extent from 0.
// Renaming a loop symbol, or reordering a nest's loops, therefore never changes a match.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir.h"
#include "rewrites/online_softmax/routine_view.h"

namespace fp::osm {

struct Vocabulary {
  std::vector<std::string> labels;    // per role, for messages: "row 0", "reduced"
  std::vector<std::int64_t> extents;  // per role: the number of cells its loop must cover
  int add(std::string label, std::int64_t extent) {
    labels.push_back(std::move(label));
    extents.push_back(extent);
    return static_cast<int>(extents.size()) - 1;
  }
};

// One axis of a signature: a role (role >= 0) or a fixed index.
struct Slot {
  int role = -1;
  std::int64_t fixed = 0;
  bool is_fixed() const { return role < 0; }
  bool operator==(const Slot&) const = default;
};
using Signature = std::vector<Slot>;

class RoleEnv {
 public:
  // Binds the symbols of `idx` (a read or store of a node with signature `sig`). False, leaving
  // the environment unspecified, when the indices do not fit the signature.
  bool bind(const Signature& sig, const std::vector<Index>& idx);
  // The signature a store at `idx` gives its node: every index a bound plain iterator or a fixed
  // index, no symbol twice.
  std::optional<Signature> sign(const std::vector<Index>& idx) const;
  std::optional<int> role_of(const std::string& sym) const;
  const std::map<std::string, int>& symbols() const { return sym_role_; }

 private:
  std::map<std::string, int> sym_role_;
};

enum class LoopFit { Ok, Dead, Unbound, Partial };
struct LoopCheck {
  LoopFit fit = LoopFit::Ok;
  const NestLoop* loop = nullptr;  // the offending loop
};
// Dead loops first (any loop running zero times), then unbound loops, then loops that do not
// start at 0 or do not cover their role's extent.
LoopCheck check_loops(const RoleEnv& env, const Nest& nest, const Vocabulary& vocab);

// Roles of a signature, sorted (a multiset).
std::vector<int> roles_of(const Signature& sig);
// True when the role slots of `sig` cover every role in `roles` (each exactly once).
bool has_all_roles(const Signature& sig, const std::vector<int>& roles);

// The cells of `node` a store through `sig` reaches are all of its cells: every role slot's
// extent equals the axis extent, and fixed slots sit only on unit axes.
bool covers_all_cells(const Signature& sig, const Node& node, const Vocabulary& vocab);

// The signature re-expressed as indices in the symbols `role_syms` (per role).
std::vector<Index> indices_for(const Signature& sig, const std::vector<std::string>& role_syms);

}  // namespace fp::osm
