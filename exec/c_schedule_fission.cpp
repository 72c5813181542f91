// Loop fission (exec/c_generator.h): per-iteration locals first, then a register-resident
// accumulation. A forward loop over t inside a lane band whose body is
//     local p...; p := f(t, ...)          (phase A: lane locals only)
//     for e...: W[i] = g(W[i], p, t, e)   (phase B: one store nest; i does not mention t)
// runs phase A for a chunk of t into per-chunk buffers, then phase B per lane over the chunk's t
// with the cells of its innermost loop (at most kMaxFissionCells) kept in a small array. Same values in the
// same order: each cell of W sees its t in order, phase A reads nothing phase B writes, and phase B's cells
// are independent (it reads W only at the cell it stores). Decline anything else.

#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "core/ir_visit.h"
#include "exec/c_generator.h"

namespace fp::codegen {

// The two phases of `loop` as above, or none.
std::optional<CGenerator::Fission> CGenerator::fission_of(const Stmt& loop) const {
  if (loop.kind != StmtKind::For || loop.is_dead_loop()) return std::nullopt;
  Fission f;
  std::set<std::string> a_locals;
  for (const auto& st : loop.body) {
    if (!st || st->kind == StmtKind::Comment || st->kind == StmtKind::Noop) continue;
    if (f.b) return std::nullopt;  // the store nest must come last
    if (st->kind == StmtKind::DeclareLocal) {
      a_locals.insert(st->name);
      f.a.push_back(st.get());
    } else if (st->kind == StmtKind::SetLocal) {
      if (!a_locals.count(st->name)) return std::nullopt;  // an outer local changing per t
      f.a.push_back(st.get());
    } else if (st->kind == StmtKind::For) {
      f.b = st.get();
    } else {
      return std::nullopt;
    }
  }
  if (!f.b || a_locals.empty()) return std::nullopt;
  const Stmt* cur = f.b;
  while (cur->kind == StmtKind::For) {
    if (cur->is_dead_loop() || cur->body.size() != 1 || !cur->body[0]) return std::nullopt;
    f.loops.push_back(cur);
    cur = cur->body[0].get();
  }
  if (cur->kind != StmtKind::Set) return std::nullopt;
  if (f.loops.back()->to - f.loops.back()->from + 1 > kMaxFissionCells) return std::nullopt;
  f.set = cur;
  const std::string& w = cur->name;
  for (const Index& i : cur->indices)
    if (i.mentions(loop.sym)) return std::nullopt;
  bool ok = true;
  for_each_expr(cur->value, [&](const Expr& x) {
    if (x.kind == ExprKind::Get && x.name == w && x.indices != cur->indices) ok = false;
  });
  for (const Stmt* a : f.a)
    if (a->value)
      for_each_expr(a->value, [&](const Expr& x) {
        if (x.kind == ExprKind::Get && x.name == w) ok = false;
      });
  return ok ? std::optional<Fission>(f) : std::nullopt;
}

void CGenerator::fissioned_loop(const Stmt& loop, const Fission& f) {
  // One buffer [chunk][lanes] per phase-A local.
  std::map<std::string, std::pair<std::string, Prec>> bufs;
  for (const Stmt* a : f.a)
    if (a->kind == StmtKind::DeclareLocal) {
      const std::string b = em_.fresh_named('c', a->name);
      em_.line(fmt::format("{} {}[{}] __attribute__((aligned(64)));", codegen::ctype(a->prec, Dialect::C), b,
                           kChunk * lane_->width));
      bufs[a->name] = {b, a->prec};
    }
  std::string t_var, t0_var;
  auto phase_a = [&] {
    em_.push_scope();
    const std::size_t mark = lane_locals_.size();
    for (const Stmt* a : f.a) lane_stmt(*a);
    const Aff t_aff = em_.index_aff(Index::iter(loop.sym));
    const std::string row = fmt::format("(({}) - {}) * {}", t_aff.str(), panel_t0_, lane_->width);
    const std::string j = open_lanes(true);
    for (std::size_t k = mark; k < lane_locals_.size(); ++k) {
      auto it = bufs.find(lane_locals_[k].name);
      if (it != bufs.end())
        em_.line(fmt::format("{}[{} + {}] = {}[{}];", it->second.first, row, j, lane_locals_[k].array, j));
    }
    close_lanes();
    lane_locals_.resize(mark);
    em_.pop_scope();
  };
  auto phase_b = [&](const std::string& t0, const std::string& cnt) {
    const Node& w = em_.plan().node(f.set->name);
    const std::string j = em_.fresh("j");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, lane_->nl));
    em_.bind_sym(lane_->lane->sym, Aff{{{lane_block_, lane_->width}, {j, 1}}, lane_->lane->from});
    em_.push_scope();
    for (const LaneLocal& l : lane_locals_) em_.bind_local(l.name, fmt::format("{}[{}]", l.array, j), l.prec);
    for (std::size_t k = 0; k + 1 < f.loops.size(); ++k) {
      em_.open(em_.loop_header(*f.loops[k]));
      em_.push_scope();
    }
    // The innermost loop's cells in a register-sized array over the chunk's t.
    const Stmt& inner = *f.loops.back();
    const std::string acc = em_.fresh("acc");
    em_.line(fmt::format("{} {}[{}];", codegen::ctype(w.prec, Dialect::C), acc, inner.to - inner.from + 1));
    auto inner_loop = [&](const std::function<void(const std::string& cell, const Aff& off)>& body) {
      if (opts_.parallel) em_.line("#pragma omp simd");
      em_.open(em_.loop_header(inner));
      const std::string e = em_.index_aff(Index::iter(inner.sym)).str();
      em_.push_scope();
      body(fmt::format("{}[{} - {}]", acc, e, inner.from), em_.offset(w, f.set->indices));
      em_.pop_scope();
      em_.close();
      em_.unbind_sym(inner.sym);
    };
    inner_loop([&](const std::string& cell, const Aff& off) {
      em_.line(fmt::format("{} = {};", cell, em_.load(w, off)));
    });
    const std::string tv = em_.fresh_named('s', loop.sym);
    em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} < {1} + {2}; ++{0})", tv, t0, cnt));
    em_.bind_sym(loop.sym, Aff{{{tv, 1}}, 0});
    em_.push_scope();
    for (const auto& [name, b] : bufs)
      em_.bind_local(name, fmt::format("{}[({} - {}) * {} + {}]", b.first, tv, t0, lane_->width, j),
                     b.second);
    inner_loop([&](const std::string& cell, const Aff&) {
      for_each_expr(f.set->value, [&](const Expr& x) {
        if (x.kind == ExprKind::Get && x.name == w.name) em_.substitute_expr(&x, cell);
      });
      em_.line(
          fmt::format("{} = {};", cell, em_.convert(em_.expr(f.set->value), f.set->value->prec, w.prec)));
      em_.clear_expr_substitutions();
    });
    em_.pop_scope();
    em_.unbind_sym(loop.sym);
    em_.close();
    inner_loop([&](const std::string& cell, const Aff& off) { em_.line(em_.store(w, off, cell)); });
    for (std::size_t k = f.loops.size() - 1; k-- > 0;) {
      em_.pop_scope();
      em_.close();
      em_.unbind_sym(f.loops[k]->sym);
    }
    em_.pop_scope();
    em_.unbind_sym(lane_->lane->sym);
    em_.close();
  };
  panel_loop(loop, phase_a, phase_b);
}

}  // namespace fp::codegen
