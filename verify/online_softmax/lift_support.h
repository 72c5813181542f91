#pragma once
// What the member's all-sizes lifts share (verify/online_softmax/normalizer_lift.h, fold_lift.h;
// internal to this folder): a failed condition as an exception the lift stops at, the census of
// a top-level statement, and the reading of loop nests as coordinates — each index a plain loop
// symbol running over a whole axis — that lets a lift argue over symbolic extents.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ir.h"
#include "core/ir_visit.h"
#include "verify/loop_nest.h"
#include "verify/program_equality.h"

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

// ---- comparing what a target holds with what a lift expects ------------------------------------

// Structural equality up to the order of an index's terms and of the operands of add and mul (IEEE
// addition and multiplication commute exactly): verify/program_equality.h.
inline bool same(const ExprP& a, const ExprP& b) {
  return same_up_to_commutation(a, b);
}

// `e` with its loop symbols replaced by `by`, and each read `read` answers for (given the read and
// its substituted indices) replaced.
inline ExprP substituted(const ExprP& e, const std::map<std::string, Index>& by,
                         const std::function<ExprP(const Expr&, const std::vector<Index>&)>& read = nullptr) {
  switch (e->kind) {
    case ExprKind::Get: {
      std::vector<Index> idx;
      for (const Index& i : e->indices) idx.push_back(i.substituted(by));
      if (read)
        if (ExprP r = read(*e, idx)) return r;
      return get(e->name, std::move(idx), e->prec);
    }
    case ExprKind::EmbedIndex:
      return embed_index(e->indices[0].substituted(by), e->prec);
    case ExprKind::GetLocal:
    case ExprKind::Const:
      return e;
    case ExprKind::Unary:
      return unary(e->unop(), substituted(e->args[0], by, read), e->prec);
    case ExprKind::Binary:
      return binary(e->binop(), substituted(e->args[0], by, read), substituted(e->args[1], by, read), e->prec);
    case ExprKind::Ternary:
      return ternary(e->ternop(), substituted(e->args[0], by, read), substituted(e->args[1], by, read),
                     substituted(e->args[2], by, read), e->prec);
  }
  return e;
}

// Statements of a target checked against what a lift expects; a failure names `who` ("the fold").
struct Expect {
  std::string who;

  // `local := value`, compared with `same`.
  void set_local(const StmtP& s, const std::string& local, const ExprP& value, const std::string& what) const {
    require(s && s->kind == StmtKind::SetLocal && s->name == local && same(s->value, value),
            fmt::format("{}'s {} is not what {} computes", who, what, who));
  }
  // `node[idx] = value`, compared with `same`.
  void set(const Stmt* s, const std::string& node, const std::vector<Index>& idx, const ExprP& value,
           const std::string& what) const {
    require(s && s->kind == StmtKind::Set && s->name == node && same_indices(s->indices, idx) && same(s->value, value),
            fmt::format("{}'s {} is not what {} computes", who, what, who));
  }
  // `for sym in from..to { one statement }`: the statement, with the loop checked.
  const Stmt* under_loop(const StmtP& s, const std::string& sym, std::int64_t from, std::int64_t to,
                         const std::string& what) const {
    require(s && s->kind == StmtKind::For && s->sym == sym && s->from == from && s->to == to && s->body.size() == 1,
            fmt::format("{}'s {} is not one statement under `for {} in {}..{}`", who, what, sym, from, to));
    return s->body[0].get();
  }
  // The loops of a nest, outermost first, and the statement they hold.
  const Stmt* under_loops(const StmtP& s, const std::vector<Loop>& loops, const std::string& what) const {
    const Stmt* st = s.get();
    for (const Loop& l : loops) {
      require(st->kind == StmtKind::For && st->sym == l.sym && st->from == l.from && st->to == l.to &&
                  st->body.size() == 1,
              fmt::format("{}'s {} is not under the loops it must run over ({})", who, what, l.sym));
      st = st->body[0].get();
    }
    return st;
  }
};

// How an i32 predicate of the indices changes as `sym` grows: -1 it can only turn from true to
// false, +1 only from false to true, 0 it does not depend on `sym`, 2 anything else. Leaves are
// constants and lt of affine indices (a < b can only turn false as `sym` grows when a - b grows
// with it); max and min of two predicates (or, and) keep a direction they share.
inline int predicate_direction(const ExprP& e, const std::string& sym) {
  if (!e || e->prec != Prec::I32) return 2;
  if (e->kind == ExprKind::Const) return 0;
  if (e->kind != ExprKind::Binary) return 2;
  auto coef = [&](const ExprP& a, std::int64_t& c) {
    c = 0;
    if (a->prec != Prec::I32 || (a->kind != ExprKind::Const && a->kind != ExprKind::EmbedIndex)) return false;
    if (a->kind == ExprKind::EmbedIndex)
      for (const auto& t : a->indices[0].canonical().terms)
        if (t.sym == sym) c += t.coef;
    return true;
  };
  switch (e->binop()) {
    case BinOp::Lt: {
      std::int64_t a = 0, b = 0;
      if (!coef(e->args[0], a) || !coef(e->args[1], b)) return 2;
      return a > b ? -1 : a < b ? 1 : 0;
    }
    case BinOp::Max:
    case BinOp::Min: {
      const int x = predicate_direction(e->args[0], sym), y = predicate_direction(e->args[1], sym);
      if (x == 2 || y == 2 || (x != 0 && y != 0 && x != y)) return 2;
      return x != 0 ? x : y;
    }
    default:
      return 2;
  }
}

}  // namespace fp::verify::lift
