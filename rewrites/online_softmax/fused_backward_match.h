#pragma once
// What the fused backward's matcher found (fused_backward.cpp) and its emitter builds from
// (fused_backward_emit.cpp): the matched nests with their symbols bound to roles. Internal to
// shape 3; the contract is fused_backward.h.

#include <string>
#include <vector>

#include "rewrites/online_softmax/axis_roles.h"
#include "rewrites/online_softmax/normalizer_scan.h"
#include "rewrites/online_softmax/routine_view.h"
#include "rewrites/online_softmax/score_chain.h"

namespace fp::osm {

// One accumulation of the gradient chain between ng and dS: node = 0 + f(prev).
struct ChainLink {
  int pos = -1;
  const Nest* nest = nullptr;
  std::string node, prev;
  RoleEnv env;
};

// A matched nest with its symbols bound to roles.
struct BoundNest {
  int pos = -1;
  const Nest* nest = nullptr;
  RoleEnv env;
};

// What the match found, in the routine's own terms (fused_backward.h, MATCHES).
struct BackwardMatch {
  Normalizer nz;
  Vocabulary vocab;
  Signature x_sig, m_sig, o_sig, dk_sig, dv_sig;
  int key_role = -1, chan0 = -1, chan1 = -1;
  std::vector<int> row_roles;  // x's roles but the key, in x's axis order
  std::string p, o, v, dout, dp, eg, lg, ng, ds, dq, dk, dv;
  std::string q_node, k_node;  // the score contraction's factors: dK's and dQ's other operands
  int p_pos = -1, value_pass = -1;
  BoundNest a, c1, d, c2, e, k, l, b;
  std::vector<ChainLink> links;
  ScoreChain scores;
  std::vector<int> zeros;  // zero-outs of the intermediates
  Prec sp = Prec::F32;     // the pair's state precision
};

// Whether a slot of `sig` holds `role`.
inline bool has_role(const Signature& sig, int role) {
  return std::any_of(sig.begin(), sig.end(), [&](const Slot& s) { return s.role == role; });
}

}  // namespace fp::osm
