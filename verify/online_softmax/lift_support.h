#pragma once
// What the member's all-sizes lifts share (verify/online_softmax/normalizer_lift.h, fold_lift.h;
// internal to this folder): a failed condition as an exception the lift stops at, the census of
// a top-level statement, and the reading of loop nests as coordinates — each index a plain loop
// symbol running over a whole axis — that lets a lift argue over symbolic extents.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ir.h"
#include "core/ir_visit.h"
#include "verify/loop_nest.h"

namespace fp::verify::lift {

// A failed condition: the lift stops at the first.
struct NotLifted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void require(bool ok, const std::string& why) {
  if (!ok) throw NotLifted(why);
}

// What a top-level statement writes and reads, at any depth.
struct Census {
  std::set<std::string> writes, reads;
};

inline Census census_of(const StmtP& s) {
  Census c;
  for_each_stmt(s, [&](const Stmt& st) {
    if (st.kind == StmtKind::Set || st.kind == StmtKind::Zero) c.writes.insert(st.name);
    for_each_own_expr(st, [&](const ExprP& e) {
      for_each_expr(e, [&](const Expr& x) {
        if (x.kind == ExprKind::Get) c.reads.insert(x.name);
      });
    });
  });
  return c;
}

inline const Node& node_of(const Routine& r, const std::string& name) {
  const Node* n = r.find_node(name);
  require(n != nullptr, "no node " + name);
  return *n;
}

// The loops of a nest as coordinates: loop symbol → axis of a reference node.
using AxisOf = std::map<std::string, int>;

// `idx` reads or writes `node` at plain loop symbols, each of `loops` at most once, and each loop
// it names runs over the whole axis (0..extent-1): the symbol → axis map.
inline AxisOf plain_axes(const Routine& r, const std::string& node, const std::vector<Index>& idx,
                  const std::vector<Loop>& loops, const char* what) {
  const Node& n = node_of(r, node);
  require(idx.size() == n.dims.size(), fmt::format("{} indexes {} with {} indices", what, node, idx.size()));
  AxisOf axes;
  for (std::size_t j = 0; j < idx.size(); ++j) {
    require(idx[j].is_plain_iterator(),
            fmt::format("{} indexes {} at a position that is not a plain loop symbol", what, node));
    const std::string& sym = idx[j].terms[0].sym;
    auto loop = std::find_if(loops.begin(), loops.end(), [&](const Loop& l) { return l.sym == sym; });
    require(loop != loops.end(), fmt::format("{} indexes {} with {}, not one of its loops", what, node, sym));
    require(loop->from == 0 && loop->to == n.dims[j] - 1,
            fmt::format("{}: loop {} does not run over the whole axis {} of {}", what, sym, j, node));
    require(axes.emplace(sym, static_cast<int>(j)).second,
            fmt::format("{} indexes {} with {} twice", what, node, sym));
  }
  return axes;
}

// Every loop of the nest bound once, and named by `axes` (a bijection loops ↔ the node's axes).
inline void require_bijection(const std::vector<Loop>& loops, const AxisOf& axes, const char* what) {
  std::set<std::string> syms;
  for (const auto& l : loops) require(syms.insert(l.sym).second, fmt::format("{} binds {} twice", what, l.sym));
  require(axes.size() == loops.size(),
          fmt::format("{}: its loops are not one per axis of the node it is read through", what));
}

// An index list, as the reference axes of the cells it names: idx[j] is the symbol whose
// reference axis is the result's j-th entry.
// -1 for an index that is not a plain loop symbol of `ref` (so it matches no axis).
inline std::vector<int> in_reference(const std::vector<Index>& idx, const std::map<std::string, int>& ref) {
  std::vector<int> out;
  for (const auto& i : idx) {
    auto it = i.is_plain_iterator() ? ref.find(i.terms[0].sym) : ref.end();
    out.push_back(it == ref.end() ? -1 : it->second);
  }
  return out;
}

inline bool is_const(const ExprP& e, double v, Prec p) {
  return e->kind == ExprKind::Const && e->prec == p &&
         (std::isnan(v) ? std::isnan(e->value)
                        : e->value == v && std::signbit(e->value) == std::signbit(v));
}

inline bool self_read(const ExprP& e, const Stmt& store) {
  return e->kind == ExprKind::Get && e->name == store.name && e->indices == store.indices;
}

// The operand of a binary `op` that is not the store's own cell; null when neither or both are.
inline ExprP other_operand(const ExprP& v, BinOp op, const Stmt& store) {
  if (!v || v->kind != ExprKind::Binary || v->binop() != op) return nullptr;
  const bool a = self_read(v->args[0], store), b = self_read(v->args[1], store);
  if (a == b) return nullptr;
  return a ? v->args[1] : v->args[0];
}

}  // namespace fp::verify::lift
