// Row fusion (exec/c_generator.h): a row reduction R (a reduction nest with one reduced loop,
// storing W) followed — with only replayed definitions in between — by a pointwise nest P (NestShape
// without reduced loops and without a self read) that reads W, directly or through pointwise
// replays, only at "its row": every W axis R indexes with a target loop T, P indexes with a plain
// iterator of one P loop L of T's range (the same L for every read), every fixed axis at the same
// constant. Then P's cells for the rows of W that R has finished read only final values (R writes
// nothing else; P writes a node R does not read, directly or through replays), and each P cell is
// still computed once, by the same expression: P may run row by row right after R finishes each row
// (the row's data still in cache) instead of in a pass of its own. R's schedules that finish rows
// one (order_free_rows) or one block (rows_in_panels) at a time call row_epilogue(); any other runs
// P right after R. Memory: nothing is released between R and P (else declined), so allocating P's
// buffers before R keeps every live set within P's, and the measured peak is still the report's.

#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/ir_visit.h"
#include "exec/c_generator.h"

namespace fp::codegen {

// The pointwise statement P that may run row by row inside the row reduction R at position p, as
// above, or none.
std::optional<CGenerator::RowFusion> CGenerator::row_fusion(int p) {
  if (!opts_.jam) return std::nullopt;
  const std::optional<NestShape> r = nest_shape(*plan_.top[static_cast<std::size_t>(p)]);
  if (!r || r->reduced.size() != 1 || !plan_.ending_at(p).empty()) return std::nullopt;
  std::size_t q = static_cast<std::size_t>(p) + 1;
  for (; q < plan_.top.size() && plan_.replayed[q]; ++q)
    if (!plan_.starting_at(static_cast<int>(q)).empty() || !plan_.ending_at(static_cast<int>(q)).empty())
      return std::nullopt;
  if (q >= plan_.top.size()) return std::nullopt;
  for (int i : plan_.starting_at(static_cast<int>(q)))
    if (stack_buffer(i)) return std::nullopt;
  std::optional<NestShape> pw = nest_shape(*plan_.top[q]);
  if (!pw || !pw->reduced.empty() || pw->self_read) return std::nullopt;
  const std::string& wr = r->nest.set->name;
  const std::string& wp = pw->nest.set->name;
  if (wp == wr || plan_.is_virtual(wp)) return std::nullopt;
  bool ok = true;
  for_each_expr(r->nest.set->value, [&](const Expr& x) {
    if (x.kind == ExprKind::Get &&
        (x.name == wp || (plan_.is_virtual(x.name) && plan_.replay_reads(x.name).count(wp))))
      ok = false;
  });
  if (!ok) return std::nullopt;
  RowFusion f;
  f.position = static_cast<int>(q);
  f.p = *pw;
  f.w = wr;
  f.w_indices = r->nest.set->indices;
  std::map<std::string, const Stmt*> r_target, p_loops;
  for (const Stmt* t : r->target) r_target[t->sym] = t;
  for (const Stmt* l : pw->nest.loops) p_loops[l->sym] = l;
  std::map<std::string, std::string> t_to_l;
  int reads = 0;
  // A read of W in P (indices already in P's symbols) must be at P's row.
  auto at_row = [&](const std::vector<Index>& idx) {
    const std::vector<Index>& ri = r->nest.set->indices;
    if (idx.size() != ri.size()) return false;
    for (std::size_t a = 0; a < ri.size(); ++a) {
      const Index want = ri[a].canonical(), got = idx[a].canonical();
      if (want.is_fixed()) {
        if (!(got == want)) return false;
        continue;
      }
      if (!want.is_plain_iterator() || !got.is_plain_iterator()) return false;
      auto t = r_target.find(want.terms[0].sym);
      auto l = p_loops.find(got.terms[0].sym);
      if (t == r_target.end() || l == p_loops.end()) return false;
      if (t->second->from != l->second->from || t->second->to != l->second->to) return false;
      auto [it, fresh] = t_to_l.emplace(t->first, l->first);
      if (!fresh && it->second != l->first) return false;
    }
    return true;
  };
  std::function<bool(const ExprP&, const std::map<std::string, Index>&)> scan =
      [&](const ExprP& e, const std::map<std::string, Index>& sub) -> bool {
    if (!e) return true;
    if (e->kind == ExprKind::GetLocal) return false;
    if (e->kind == ExprKind::Get) {
      std::vector<Index> idx;
      for (const Index& i : e->indices) idx.push_back(i.substituted(sub));
      if (e->name == wr) {
        ++reads;
        if (!at_row(idx)) return false;
      } else if (e->name == wp) {
        return false;
      } else if (plan_.is_virtual(e->name) &&
                 (plan_.replay_reads(e->name).count(wr) || plan_.replay_reads(e->name).count(wp))) {
        const VirtualDef& d = plan_.virtuals.at(e->name);
        if (d.kind != VirtualDef::Kind::Pointwise) return false;
        std::map<std::string, Index> inner;
        for (std::size_t a = 0; a < d.nest.set->indices.size(); ++a) {
          const Index di = d.nest.set->indices[a].canonical();
          if (!di.is_plain_iterator() || inner.count(di.terms[0].sym)) return false;
          inner[di.terms[0].sym] = idx[a];
        }
        if (!scan(d.nest.set->value, inner)) return false;
      }
    }
    for (const auto& a : e->args)
      if (!scan(a, sub)) return false;
    return true;
  };
  std::map<std::string, Index> none;
  for (const Stmt* l : pw->nest.loops) none[l->sym] = Index::iter(l->sym);
  if (!scan(pw->nest.set->value, none) || reads == 0 || t_to_l.size() != r_target.size()) return std::nullopt;
  for (const auto& [t, l] : t_to_l) f.rows.emplace_back(t, l);
  return f;
}

// P for the rows whose R target symbols are bound now: P's row loops bound to them, its other
// loops around its store (omp simd on the innermost).
void CGenerator::row_epilogue() {
  const RowFusion& f = *epilogue_;
  epilogue_used_ = true;
  std::set<std::string> bound;
  for (const auto& [t, l] : f.rows) {
    em_.bind_sym(l, em_.index_aff(Index::iter(t)));
    bound.insert(l);
  }
  std::vector<const Stmt*> free;
  for (const Stmt* l : f.p.nest.loops)
    if (!bound.count(l->sym)) free.push_back(l);
  em_.open("");
  em_.push_scope();
  // The row's result in a scalar (a load inside the loop kept GCC from vectorizing its exp).
  const Node& w = plan_.node(f.w);
  const std::string rv = em_.fresh("rv");
  em_.line(fmt::format("const {} {} = {};", codegen::ctype(w.prec, Dialect::C), rv,
                       em_.load(w, em_.offset(w, f.w_indices))));
  em_.pin_node(w.name, rv);
  for (std::size_t i = 0; i < free.size(); ++i) {
    if (i + 1 == free.size() && opts_.parallel) em_.line("#pragma omp simd");
    em_.open(em_.loop_header(*free[i]));
  }
  em_.stmt(*f.p.nest.set);
  for (std::size_t i = free.size(); i-- > 0;) {
    em_.close();
    em_.unbind_sym(free[i]->sym);
  }
  em_.unpin_node(w.name);
  em_.pop_scope();
  em_.close();
  for (const auto& [t, l] : f.rows) em_.unbind_sym(l);
}

}  // namespace fp::codegen
