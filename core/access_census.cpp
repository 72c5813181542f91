// The access census (core/access_census.h): one walk over the routine recording every node access
// with the loops, guards and scans around it.

#include "core/access_census.h"

#include <algorithm>
#include <limits>
#include <set>

namespace fp {

namespace {

constexpr std::int64_t kMany = std::numeric_limits<std::int64_t>::max();

// Appends the statements of `s` to `out`, splicing nested seqs.
void flatten(const StmtP& s, std::vector<const Stmt*>& out) {
  if (!s) return;
  if (s->kind == StmtKind::Seq) {
    for (const auto& b : s->body) flatten(b, out);
    return;
  }
  out.push_back(s.get());
}

const EnclosingLoop* find_loop(const std::vector<EnclosingLoop>& loops, const std::string& sym) {
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    if (it->sym == sym) return &*it;
  return nullptr;
}

// True when the value of `idx` identifies the iteration of every loop it mentions (mixed radix,
// see per_cell_multiplicity).
bool determines_its_symbols(const Index& idx, const std::vector<EnclosingLoop>& loops) {
  Index c = idx.canonical();
  struct Term {
    __int128 mag;
    __int128 extent;
  };
  std::vector<Term> terms;
  for (const auto& t : c.terms) {
    const EnclosingLoop* l = find_loop(loops, t.sym);
    if (!l) continue;  // unbound: the checker reports it; it spans nothing here
    __int128 mag = t.coef < 0 ? -static_cast<__int128>(t.coef) : t.coef;
    terms.push_back({mag, l->extent()});
  }
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.mag < b.mag; });
  __int128 span = 0;  // largest |difference| the smaller terms can make
  for (const auto& t : terms) {
    if (t.mag <= span) return false;
    span += t.mag * (t.extent > 0 ? t.extent - 1 : 0);
    if (span > (static_cast<__int128>(1) << 120)) return false;  // far past any extent: give up safely
  }
  return true;
}

}  // namespace

std::int64_t EnclosingLoop::extent() const {
  if (to < from) return 0;
  __int128 n = static_cast<__int128>(to) - from + 1;
  return n > kMany ? kMany : static_cast<std::int64_t>(n);
}

std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > kMany / b) return kMany;
  return a * b;
}

std::int64_t per_cell_multiplicity(const std::vector<Index>& indices,
                                   const std::vector<EnclosingLoop>& loops) {
  std::set<std::string> determined;
  for (const auto& idx : indices)
    if (determines_its_symbols(idx, loops))
      for (const auto& t : idx.canonical().terms) determined.insert(t.sym);
  std::int64_t n = 1;
  bool dead = false;
  for (const auto& l : loops) {
    if (l.extent() == 0) dead = true;
    if (!determined.count(l.sym)) n = saturating_mul(n, l.extent());
  }
  return dead ? 0 : n;
}

std::optional<Nest> as_nest(const Stmt& s) {
  Nest n;
  const Stmt* cur = &s;
  while (cur->kind == StmtKind::For) {
    if (cur->body.size() != 1 || !cur->body[0]) return std::nullopt;
    n.loops.push_back(cur);
    cur = cur->body[0].get();
  }
  if (cur->kind != StmtKind::Set) return std::nullopt;
  n.set = cur;
  return n;
}

std::vector<EnclosingLoop> nest_loops(const Nest& n) {
  std::vector<EnclosingLoop> out;
  for (const Stmt* l : n.loops) out.push_back({l, l->sym, l->from, l->to, false});
  return out;
}

// ---- the walk ---------------------------------------------------------------------------------

struct AccessCensus::Context {
  std::size_t top = 0;
  std::vector<EnclosingLoop> loops;
  int guards = 0;
  int scan_bodies = 0;
};

AccessCensus::AccessCensus(const Routine& r) {
  flatten(r.body, top_);
  for (std::size_t p = 0; p < top_.size(); ++p) {
    first_of_top_.push_back(accesses_.size());
    Context ctx;
    ctx.top = p;
    visit(*top_[p], ctx);
  }
  first_of_top_.push_back(accesses_.size());
}

void AccessCensus::add(Access a) {
  std::size_t i = accesses_.size();
  (a.is_write() ? writes_ : reads_)[a.node].push_back(i);
  accesses_.push_back(std::move(a));
}

void AccessCensus::visit_reads(const ExprP& e, const Stmt& holder, const Context& ctx) {
  if (!e) return;
  if (e->kind == ExprKind::Get) {
    Access a;
    a.kind = AccessKind::Read;
    a.node = e->name;
    a.top = ctx.top;
    a.stmt = &holder;
    a.get = e.get();
    a.indices = e->indices;
    a.loops = ctx.loops;
    a.guards = ctx.guards;
    a.scan_bodies = ctx.scan_bodies;
    a.per_cell = per_cell_multiplicity(a.indices, a.loops);
    add(std::move(a));
  }
  for (const auto& arg : e->args) visit_reads(arg, holder, ctx);
}

void AccessCensus::visit(const Stmt& s, Context& ctx) {
  switch (s.kind) {
    case StmtKind::Set:
    case StmtKind::Zero: {
      visit_reads(s.value, s, ctx);  // a set's value is read before its cell is written
      Access a;
      a.kind = s.kind == StmtKind::Set ? AccessKind::Write : AccessKind::ZeroFill;
      a.node = s.name;
      a.top = ctx.top;
      a.stmt = &s;
      a.indices = s.indices;
      a.loops = ctx.loops;
      a.guards = ctx.guards;
      a.scan_bodies = ctx.scan_bodies;
      a.per_cell = per_cell_multiplicity(a.indices, a.loops);
      add(std::move(a));
      return;
    }
    case StmtKind::For:
    case StmtKind::Scan: {
      for (const auto& c : s.carried) visit_reads(c.init, s, ctx);  // once, before the first iteration
      ctx.loops.push_back({&s, s.sym, s.from, s.to, s.kind == StmtKind::Scan});
      if (s.kind == StmtKind::Scan) ++ctx.scan_bodies;
      for (const auto& b : s.body)
        if (b) visit(*b, ctx);
      if (s.kind == StmtKind::Scan) --ctx.scan_bodies;
      ctx.loops.pop_back();
      return;
    }
    case StmtKind::If: {
      visit_reads(s.value, s, ctx);
      ++ctx.guards;
      for (const auto& b : s.body)
        if (b) visit(*b, ctx);
      --ctx.guards;
      return;
    }
    case StmtKind::Seq:
      for (const auto& b : s.body)
        if (b) visit(*b, ctx);
      return;
    case StmtKind::SetLocal:
      visit_reads(s.value, s, ctx);
      return;
    case StmtKind::DeclareLocal:
    case StmtKind::Comment:
    case StmtKind::Noop:
      return;
  }
}

// ---- queries ----------------------------------------------------------------------------------

std::vector<const Access*> AccessCensus::at(std::size_t top) const {
  std::vector<const Access*> out;
  if (top + 1 >= first_of_top_.size()) return out;
  for (std::size_t i = first_of_top_[top]; i < first_of_top_[top + 1]; ++i) out.push_back(&accesses_[i]);
  return out;
}

namespace {
std::vector<const Access*> pick(const std::map<std::string, std::vector<std::size_t>, std::less<>>& index,
                                const std::vector<Access>& all, std::string_view node) {
  std::vector<const Access*> out;
  auto it = index.find(node);
  if (it != index.end())
    for (std::size_t i : it->second) out.push_back(&all[i]);
  return out;
}

std::vector<std::size_t> positions(const std::vector<const Access*>& as) {
  std::vector<std::size_t> out;
  for (const Access* a : as) out.push_back(a->top);
  out.erase(std::unique(out.begin(), out.end()), out.end());  // accesses are in program order
  return out;
}
}  // namespace

std::vector<const Access*> AccessCensus::reads_of(std::string_view node) const {
  return pick(reads_, accesses_, node);
}
std::vector<const Access*> AccessCensus::writes_of(std::string_view node) const {
  return pick(writes_, accesses_, node);
}
std::vector<std::size_t> AccessCensus::writer_positions(std::string_view node) const {
  return positions(writes_of(node));
}
std::vector<std::size_t> AccessCensus::reader_positions(std::string_view node) const {
  return positions(reads_of(node));
}

}  // namespace fp
