#pragma once
// Shape 2 of online softmax — the hoisted value pass (id online-softmax.value-pass-hoist).
//
// MATCHES a reduction nest `target[ti] = add(target[ti], mul(w[wi], v[vi]))` (either operand
// order of the add, either factor order of the mul) where w is *normalized*: reached from a
// recognized normalizer's l (normalizer_scan.h) through elementwise nests only — a node whose
// only writer is a pointwise nest reading l or another normalized node, any number of steps
// (scale, dropout, copies). If only v is normalized the factors swap roles. The nest must not
// be one of a normalizer's own statements.
//
// EMITS, with `outer` the loops whose symbol indexes w as a plain iterator and `inner` the rest
// (each in the nest's original order):
//   for <outer> { local p : <w's precision>; p := w[wi]; for <inner> { target[ti] =
//     add(target[ti], mul(p, v[vi])) } }
// keeping every operation, precision and operand order of the original store.
//
// CLAIMS: exact `value-pass` — every target cell is bitwise equal to the original's. Why: every
// moved (inner) loop indexes the target as a plain iterator, so a target cell fixes the inner
// loops' values and its contributions arrive in the outer loops' lexicographic order, before and
// after; w depends only on the outer loops, so reading it once per outer iteration into a local
// at its own precision gives the same factor.
//
// DECLINES (the nest is left exactly as it was; code in brackets):
//   [non-plain-index]          w or v is read at an index that is neither a plain iterator of
//                              the nest's loops nor a fixed index
//   [nothing-to-hoist]         w is indexed by every loop: there is no loop to move
//   [dead-moved-loop]          a loop to move runs zero times (the hoisted read would be a
//                              phantom read of w)
//   [moved-loop-not-in-target] a loop to move does not index the target as a plain iterator
//                              (e.g. o[t + j]): two of its contributions could land in one cell
//                              and their summation order would change

#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "rewrites/name_minter.h"
#include "rewrites/online_softmax/normalizer_scan.h"
#include "rewrites/online_softmax/routine_view.h"

namespace fp::osm {

// Nodes reached from the normalizers' l through single-writer pointwise nests.
std::set<std::string> normalized_nodes(const RoutineView& view, const std::vector<Normalizer>& normalizers);

struct Hoist {
  int pos = -1;
  std::string target, w, v;
  bool w_first = true;  // w is the mul's first factor
  std::vector<NestLoop> outer, inner;
};

// The hoist at `pos`: nullopt when the statement is not a candidate at all (not a reduction of a
// product with a normalized factor), a Decline (round 0) when it is one but unsound to hoist.
std::optional<std::variant<Hoist, Decline>> match_hoist(const RoutineView& view, int pos,
                                                        const std::set<std::string>& normalized);

StmtP emit_hoist(const Hoist& h, const RoutineView& view, NameMinter& names);

Application hoist_application(const Hoist& h, const RoutineView& view, const Stmt& emitted);

}  // namespace fp::osm
