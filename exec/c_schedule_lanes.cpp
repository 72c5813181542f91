// Lanes (exec/c_generator.h): a statement that is not a reduction nest and whose band of
// independent iterations keeps per-iteration state (locals, a scan) or runs several statements per
// iteration runs statement by statement across a block of kLaneWidth iterations (the lanes): each
// local an array over the lanes, each store or local assignment a loop over the lanes (vectorized),
// loops and scans scalar around them, a guard whose condition differs between lanes split by
// agreement, a store nest accumulating into the lane's own cells as a register reduction, and a
// forward loop strip-mined into chunks whose strided loads come from panels. Every lane computes
// exactly what its iteration computed, in the same order within the lane (lane_band says why).

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "core/ir_visit.h"
#include "exec/c_generator.h"

namespace fp::codegen {

// A statement that is not a reduction nest and whose band's body keeps per-iteration state
// (locals, a scan) or runs several statements per iteration (the steps of a tile loop, say) runs
// in lanes: statement by statement across a block of iterations.
std::optional<CGenerator::LanePlan> CGenerator::lane_plan(const Stmt& s) const {
  if (!opts_.jam) return std::nullopt;
  std::optional<NestShape> shape = nest_shape(s);
  if (shape && !shape->reduced.empty()) return std::nullopt;  // reduction_nest
  LanePlan lp;
  lp.chain = codegen::loop_chain(s);
  const auto [first, count] = parallel_run(lp.chain);
  if (first < 0 || perfect_chain(lp.chain)) return std::nullopt;
  lp.first = static_cast<std::size_t>(first);
  lp.band.assign(lp.chain.begin() + first, lp.chain.begin() + first + count);
  lp.lane = *std::max_element(lp.band.begin(), lp.band.end(),
                              [](const Stmt* a, const Stmt* b) { return a->to - a->from < b->to - b->from; });
  if (lp.lane->to - lp.lane->from + 1 < 4 ||
      !(has_state(lp.band.back()->body) || several_statements(lp.chain.back()->body)))
    return std::nullopt;
  for (const Stmt* l : lp.band)
    if (l != lp.lane) lp.others.push_back(l);
  lp.blocks = (lp.lane->to - lp.lane->from + 1 + kLaneWidth - 1) / kLaneWidth;
  lp.parallel = opts_.parallel && saturating_mul(codegen::trip_count(lp.others), lp.blocks) >= 2;
  return lp;
}

// More than one statement that does something.
bool CGenerator::several_statements(const std::vector<StmtP>& body) {
  int n = 0;
  for (const auto& s : body) n += s && s->kind != StmtKind::Comment && s->kind != StmtKind::Noop;
  return n > 1;
}

// Per-iteration state: a local, or a scan, anywhere below.
bool CGenerator::has_state(const std::vector<StmtP>& body) {
  for (const auto& s : body) {
    if (!s) continue;
    if (s->kind == StmtKind::DeclareLocal || s->kind == StmtKind::SetLocal || s->kind == StmtKind::Scan)
      return true;
    if (has_state(s->body)) return true;
  }
  return false;
}

// A statement that runs whole inside one lane: a loop nest of stores only (its innermost loop is
// the vectorizer's), or a guard (control flow that differs between lanes). Not a nest with a
// store that reads the cell it writes (an accumulation `T[j, row] += q[row, d]·k[j, d]`, an
// update in place): inside one lane that is a dependent chain, so its loops stay scalar around
// the lanes instead (each store a loop over the lanes). The band's iterations touch disjoint
// cells (parallel_safe), so running the lanes innermost keeps every lane's own order: the same
// values.
bool CGenerator::whole_per_lane(const Stmt& s) {
  if (s.kind == StmtKind::If) return true;
  if (s.kind != StmtKind::For) return false;
  bool self_read = false;
  std::function<bool(const Stmt&)> plain = [&](const Stmt& t) {
    if (t.kind == StmtKind::Set) {
      for_each_expr(t.value, [&](const Expr& x) {
        if (x.kind == ExprKind::Get && x.name == t.name) self_read = true;
      });
      return true;
    }
    if (t.kind == StmtKind::Comment || t.kind == StmtKind::Noop) return true;
    if (t.kind != StmtKind::For) return false;
    for (const auto& b : t.body)
      if (b && !plain(*b)) return false;
    return true;
  };
  return plain(s) && !self_read;
}

std::optional<CGenerator::LaneReduction> CGenerator::lane_reduction(const Stmt& s) const {
  const std::optional<Nest> nest = as_nest(s);
  if (!nest || nest->loops.empty()) return std::nullopt;
  LaneReduction lr;
  lr.set = nest->set;
  const Stmt& set = *nest->set;
  for (const Stmt* l : nest->loops) {
    if (l->is_dead_loop()) return std::nullopt;
    bool indexes = false, plain = false;
    for (const Index& i : set.indices) {
      const Index c = i.canonical();
      if (c.mentions(l->sym)) {
        if (indexes) return std::nullopt;  // two axes
        indexes = true;
        plain = c.is_plain_iterator();
      }
    }
    if (!indexes) {
      lr.reduced.push_back(l);
      continue;
    }
    if (!plain || lr.cells) return std::nullopt;
    lr.cells = l;
  }
  if (lr.reduced.empty()) return std::nullopt;
  bool self = false, elsewhere = false;
  for_each_expr(set.value, [&](const Expr& x) {
    if (x.kind != ExprKind::Get) return;
    if (x.name == set.name) {
      self = true;
      if (x.indices.size() != set.indices.size()) elsewhere = true;
      for (std::size_t a = 0; a < x.indices.size() && !elsewhere; ++a)
        if (!(x.indices[a].canonical() == set.indices[a].canonical())) elsewhere = true;
    } else if (plan_.is_virtual(x.name) && plan_.replay_reads(x.name).count(set.name)) {
      elsewhere = true;
    }
  });
  if (!self || elsewhere) return std::nullopt;
  return lr;
}

// The lanes as one simd loop around the reduction (outer-loop vectorization), each lane keeping
// kLaneCells cells of the store's loop in scalars (independent chains: the reduction is latency-
// bound with one), each cell accumulating over the reduced loops in their order: per cell the
// same operations on the same operands in the same order. The band's iterations touch disjoint
// cells (parallel_safe), so the lanes may run side by side.
void CGenerator::lane_register_reduction(const LaneReduction& lr) {
  const Stmt& set = *lr.set;
  const Node& w = plan_.node(set.name);
  const char* ct = codegen::ctype(w.prec, Dialect::C);
  const std::int64_t extent = lr.cells ? lr.cells->to - lr.cells->from + 1 : 1;
  const std::int64_t per = std::min(extent, kLaneCells);
  auto block = [&](const Aff& first, std::int64_t count) {
    em_.line(fmt::format("/* lane reduction: {} cell{} per lane */", count, count == 1 ? "" : "s"));
    open_lanes(true);
    std::vector<std::string> acc;
    std::vector<Aff> offs;
    auto bind_cell = [&](std::int64_t k) {
      if (!lr.cells) return;
      Aff a = first;
      a.off += k;
      em_.bind_sym(lr.cells->sym, a);
    };
    for (std::int64_t k = 0; k < count; ++k) {
      bind_cell(k);
      acc.push_back(em_.fresh("a"));
      offs.push_back(em_.offset(w, set.indices));
      em_.line(fmt::format("{} {} = {};", ct, acc.back(), em_.load(w, offs.back())));
    }
    for (const Stmt* r : lr.reduced) {
      em_.open(em_.loop_header(*r));
      em_.push_scope();
    }
    for (std::int64_t k = 0; k < count; ++k) {
      bind_cell(k);
      em_.substitute(w.name, acc[static_cast<std::size_t>(k)]);
      em_.line(fmt::format("{} = {};", acc[static_cast<std::size_t>(k)],
                           em_.convert(em_.expr(set.value), set.value->prec, w.prec)));
      em_.unsubstitute(w.name);
    }
    for (auto it = lr.reduced.rbegin(); it != lr.reduced.rend(); ++it) {
      em_.pop_scope();
      em_.close();
      em_.unbind_sym((*it)->sym);
    }
    for (std::int64_t k = 0; k < count; ++k)
      em_.line(em_.store(w, offs[static_cast<std::size_t>(k)], acc[static_cast<std::size_t>(k)]));
    if (lr.cells) em_.unbind_sym(lr.cells->sym);
    close_lanes();
  };
  const std::int64_t full = extent / per, rest = extent % per;
  const std::int64_t from = lr.cells ? lr.cells->from : 0;
  if (full > 1) {
    const std::string cb = em_.fresh("cb");
    em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}LL; ++{0})", cb, full));
    block(Aff{{{cb, per}}, from}, per);
    em_.close();
  } else if (full == 1) {
    block(Aff{{}, from}, per);
  }
  if (rest > 0) block(Aff{{}, from + full * per}, rest);
}

// A guard whose condition differs between lanes (a skip of a block that is masked for some rows:
// the condition reads the row): the lanes' conditions are evaluated first; when every lane takes the
// body it runs lane by lane as the band's statements (vectorized), when some do it runs whole
// inside each lane that takes it (as any guard), when none do it is skipped. Each lane computes
// what its own iteration computes either way. Not nested: a split guard's body keeps its own
// guards per lane (the code would double per level).
void CGenerator::agreeing_lanes_guard(const Stmt& s) {
  const std::string all = em_.fresh("all"), any = em_.fresh("any");
  em_.open("");
  em_.line(fmt::format("int {} = 1, {} = 0;", all, any));
  open_lanes(false);
  em_.line(fmt::format("if ({} != 0) {} = 1; else {} = 0;", em_.expr(s.value), any, all));
  close_lanes();
  em_.open(fmt::format("if ({})", all));
  ++split_guards_;
  em_.push_scope();
  lane_list(s.body);
  em_.pop_scope();
  --split_guards_;
  em_.close();
  em_.open(fmt::format("else if ({})", any));
  open_lanes(false);
  em_.stmt(s);
  close_lanes();
  em_.close();
  em_.close();
}

// A guard whose condition is the same in every lane: it mentions no lane-indexed value (no local
// or carried value, no index with the lane symbol). It runs as one scalar `if` around the lanes.
bool CGenerator::uniform_guard(const Stmt& s) const {
  if (s.kind != StmtKind::If || !s.value || !lane_) return false;
  bool uniform = true;
  for_each_expr(s.value, [&](const Expr& x) {
    if (x.kind == ExprKind::GetLocal) uniform = false;
    if (x.kind == ExprKind::Get || x.kind == ExprKind::EmbedIndex)
      for (const auto& i : x.indices) uniform = uniform && !i.canonical().mentions(lane_->lane->sym);
  });
  return uniform;
}

// The band's iterations are independent (parallel_safe: disjoint cells, no shared local), so the
// body may run for a block of `width` iterations ("lanes") one statement at a time instead of
// one iteration at a time: each local becomes an array over the lanes, each store or local
// assignment a loop over the lanes (vectorized: exp and friends on 16 values at once), loops and
// scans stay scalar around them (their bounds are constants, the same in every lane), and a guard
// or a plain store nest runs whole inside one lane. Every lane computes exactly what its
// iteration computed, in the same order within the lane.
// Row-private tiles (exec/row_private.h) live in the lane block: one slice of kLaneWidth lanes
// each, zeroed when the block starts, instead of the whole buffer.
void CGenerator::lane_band(const LanePlan& lp) {
  for (std::size_t i = 0; i < lp.first; ++i) {
    em_.open(em_.loop_header(*lp.chain[i]));
    em_.push_scope();
  }
  em_.open("");
  if (lp.parallel) em_.line(pragma(static_cast<int>(lp.others.size()) + 1));
  for (const Stmt* l : lp.others) em_.line(em_.loop_header(*l));
  const auto tiles = private_tiles_.find(plan_.position_of(lp.chain.front()));
  lane_block_loop(lp.lane, kLaneWidth, lp.blocks, [&](const std::string& nl) {
    if (tiles != private_tiles_.end()) open_private_tiles(tiles->second.tiles, lp);
    lane_ = LaneCtx{lp.lane, nl, kLaneWidth};
    band_writes_ = written_nodes(*lp.band.front());
    em_.push_scope();
    lane_list(lp.band.back()->body);
    em_.pop_scope();
    lane_.reset();
    if (tiles != private_tiles_.end())
      for (const PrivateTile& t : tiles->second.tiles) em_.unprivatize(node_at(t.node).name);
  });
  for (const Stmt* l : lp.others) em_.unbind_sym(l->sym);
  em_.close();
  for (std::size_t i = lp.first; i-- > 0;) {
    em_.pop_scope();
    em_.close();
    em_.unbind_sym(lp.chain[i]->sym);
  }
}

// Opens `for (j < nl)` with the lane symbol bound; returns j.
// The lane locals in scope are bound to "array[j]" inside it (in declaration order, so a later
// declaration shadows an earlier one of the same name).
// A simd lane loop's strided loads are gathered by separate loops first (Emitter::begin_hoist):
// its body is emitted aside and placed after them.
std::string CGenerator::open_lanes(bool simd) {
  const std::string j = em_.fresh("j");
  lane_simd_.push_back(simd);
  if (simd) {
    std::set<std::string> outer = em_.bound_variables();
    outer.insert(lane_block_);
    em_.begin_hoist(j, lane_->nl, lane_->width, std::move(outer));
    held_.emplace_back();
    held_.back().swap(em_.out());
  }
  if (simd && opts_.parallel) em_.line("#pragma omp simd");
  em_.open(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0})", j, lane_->nl));
  em_.bind_sym(lane_->lane->sym, Aff{{{lane_block_, lane_->width}, {j, 1}}, lane_->lane->from});
  em_.push_scope();
  for (const LaneLocal& l : lane_locals_) em_.bind_local(l.name, fmt::format("{}[{}]", l.array, j), l.prec);
  return j;
}

void CGenerator::close_lanes() {
  em_.pop_scope();
  em_.unbind_sym(lane_->lane->sym);
  em_.close();
  const bool simd = lane_simd_.back();
  lane_simd_.pop_back();
  if (simd) {
    std::string body;
    body.swap(em_.out());
    em_.out().swap(held_.back());
    held_.pop_back();
    for (const std::string& l : em_.end_hoist()) em_.line(l);
    em_.out() += body;
  }
}

// A forward scalar loop around lane statements, strip-mined into chunks of kChunk iterations so
// that loads contiguous along it and strided across the lanes come from panels filled once per
// chunk (Emitter::begin_panel). The iterations still run in order: only the loads move.
// `after_chunk(t0, count)`, when given, runs after each chunk's iterations (loop fission).
void CGenerator::panel_loop(const Stmt& loop, const std::function<void()>& body,
                            const std::function<void(const std::string&, const std::string&)>& after_chunk) {
  const std::string t = em_.fresh_named('s', loop.sym);
  const std::string t0 = em_.fresh("t0"), cnt = em_.fresh("tn");
  const std::string outer_t0 = panel_t0_;
  panel_t0_ = t0;
  std::set<std::string> outer = em_.bound_variables();
  outer.insert(lane_block_);
  em_.begin_panel(t, t0, cnt, kChunk, lane_->nl, lane_->width, outer, band_writes_);
  em_.bind_sym(loop.sym, Aff{{{t, 1}}, 0});
  std::string held;
  held.swap(em_.out());
  const std::string marker = fmt::format("/*@@panel-fills-{}@@*/", t);
  em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} <= {2}; {0} += {3})", t0, loop.from, loop.to, kChunk));
  em_.line(fmt::format("const fpc_i64 {0} = {1} - {2} + 1 < {3} ? {1} - {2} + 1 : {3};", cnt, loop.to, t0,
                       kChunk));
  em_.line(marker);
  em_.open(fmt::format("for (fpc_i64 {0} = {1}; {0} < {1} + {2}; ++{0})", t, t0, cnt));
  body();
  em_.close();
  em_.unbind_sym(loop.sym);
  if (after_chunk) after_chunk(t0, cnt);
  em_.close();
  panel_t0_ = outer_t0;
  auto [decls, fills] = em_.end_panel();
  std::string text;
  text.swap(em_.out());
  em_.out().swap(held);
  for (const auto& d : decls) em_.line(d);
  std::string fill_text;
  const std::size_t at = text.find(marker);
  std::string indent;
  for (std::size_t k = text.rfind('\n', at) + 1; k < at && text[k] == ' '; ++k) indent += ' ';
  for (const auto& f : fills) fill_text += (fill_text.empty() ? "" : "\n" + indent) + f;
  text.replace(at, marker.size(), fill_text);
  em_.out() += text;
}

// A statement list is a scope: the lane locals it declares end with it.
void CGenerator::lane_list(const std::vector<StmtP>& body) {
  const std::size_t mark = lane_locals_.size();
  for (const auto& s : body)
    if (s) lane_stmt(*s);
  lane_locals_.resize(mark);
}

void CGenerator::lane_stmt(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Seq:
      em_.open("");
      em_.push_scope();
      lane_list(s.body);
      em_.pop_scope();
      em_.close();
      return;
    case StmtKind::Comment:
    case StmtKind::Noop:
      return;
    case StmtKind::DeclareLocal: {
      const std::string c = em_.fresh_named('l', s.name);
      em_.line(fmt::format("{} {}[{}];", codegen::ctype(s.prec, Dialect::C), c, lane_->width));
      const std::string j = open_lanes(true);
      em_.line(fmt::format("{}[{}] = {};", c, j, em_.literal(0.0, s.prec)));
      close_lanes();
      lane_locals_.push_back({s.name, c, s.prec});
      return;
    }
    case StmtKind::For:
      if (s.is_dead_loop()) return;
      if (const std::optional<LaneReduction> lr = lane_reduction(s)) {
        lane_register_reduction(*lr);
        return;
      }
      if (!whole_per_lane(s)) {
        if (auto f = fission_of(s)) {
          fissioned_loop(s, *f);
          return;
        }
        panel_loop(s, [&] {
          em_.push_scope();
          lane_list(s.body);
          em_.pop_scope();
        });
        return;
      }
      [[fallthrough]];
    case StmtKind::If: {
      if (uniform_guard(s)) {
        em_.open(fmt::format("if ({} != 0)", em_.expr(s.value)));
        em_.push_scope();
        lane_list(s.body);
        em_.pop_scope();
        em_.close();
        return;
      }
      if (s.kind == StmtKind::If && split_guards_ == 0) {
        agreeing_lanes_guard(s);
        return;
      }
      open_lanes(false);
      em_.stmt(s);
      close_lanes();
      return;
    }
    case StmtKind::Set:
    case StmtKind::SetLocal:
    case StmtKind::Zero: {
      const std::vector<std::string> paired = paired_exps(s);
      const std::string j = open_lanes(true);
      if (!paired.empty()) {
        const auto exps = exps_of(s);
        for (std::size_t i = 0; i < exps.size(); ++i)
          em_.substitute_expr(exps[i], fmt::format("{}[{}]", paired[i], j));
      }
      em_.stmt(s);
      em_.clear_expr_substitutions();
      close_lanes();
      return;
    }
    case StmtKind::Scan:
      lane_scan(s);
      return;
  }
}

// A scan in lanes: its carried values arrays over the lanes, initialized lane by lane, the steps
// scalar around the lane statements of the body (a forward scan strip-mined by panel_loop), the
// carried values rotated lane by lane after each step.
void CGenerator::lane_scan(const Stmt& s) {
  if (s.is_dead_loop()) return;
  em_.open("");
  std::vector<std::string> prev, next;
  for (const Carried& c : s.carried) {
    prev.push_back(em_.fresh_named('l', c.prev));
    em_.line(fmt::format("{} {}[{}];", codegen::ctype(c.prec, Dialect::C), prev.back(), lane_->width));
  }
  {
    const std::string j = open_lanes(true);
    for (std::size_t i = 0; i < s.carried.size(); ++i) {
      const Carried& c = s.carried[i];
      em_.line(fmt::format("{}[{}] = {};", prev[i], j, em_.convert(em_.expr(c.init), c.init->prec, c.prec)));
    }
    close_lanes();
  }
  auto step = [&] {
    em_.push_scope();
    const std::size_t mark = lane_locals_.size();
    for (std::size_t i = 0; i < s.carried.size(); ++i) {
      const Carried& c = s.carried[i];
      next.push_back(em_.fresh_named('l', c.next));
      em_.line(fmt::format("{} {}[{}];", codegen::ctype(c.prec, Dialect::C), next.back(), lane_->width));
      lane_locals_.push_back({c.prev, prev[i], c.prec});
      lane_locals_.push_back({c.next, next[i], c.prec});
    }
    std::vector<std::string> outer_carried = carried_prev_;
    for (const Carried& c : s.carried) carried_prev_.push_back(c.prev);
    lane_list(s.body);
    carried_prev_ = std::move(outer_carried);
    {
      const std::string j = open_lanes(true);
      for (std::size_t i = 0; i < s.carried.size(); ++i)
        em_.line(fmt::format("{0}[{1}] = {2}[{1}];", prev[i], j, next[i]));
      close_lanes();
    }
    lane_locals_.resize(mark);
    em_.pop_scope();
  };
  if (s.dir == ScanDir::Forward) {
    panel_loop(s, step);
  } else {
    em_.open(em_.loop_header(s));
    step();
    em_.close();
    em_.unbind_sym(s.sym);
  }
  em_.close();
}

}  // namespace fp::codegen
