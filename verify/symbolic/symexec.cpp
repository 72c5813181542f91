#include "verify/symbolic/symexec.h"

#include <set>
#include <string_view>

#include "core/diagnostic.h"
#include "core/ir_visit.h"

namespace fp::verify {

const std::vector<TermP>& SymMemory::at(const std::string& node) const {
  auto it = cells.find(node);
  FP_INTERNAL_CHECK(it != cells.end(), "symbolic memory has no node {}", node);
  return it->second;
}

std::int64_t flat_cell(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& idx) {
  std::int64_t off = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) off = off * dims[i] + idx[i];
  return off;
}

namespace {

struct Local {
  std::string_view name;
  Prec prec;
  TermP value;
};

class Executor {
 public:
  Executor(const Routine& r, TermStore& store) : r_(r), store_(store) {
    for (const Node& n : r.nodes) {
      std::vector<TermP> cells(static_cast<std::size_t>(n.cell_count()));
      if (n.is_input) {
        for (std::size_t i = 0; i < cells.size(); ++i)
          cells[i] = store.var(n.name, static_cast<std::int64_t>(i), n.prec);
      } else {
        TermP zero = store.constant(0.0, n.prec);
        for (auto& c : cells) c = zero;
      }
      node_index_[n.name] = nodes_.size();
      nodes_.push_back(&n);
      mem_.cells[n.name] = std::move(cells);
    }
    for (const Node* n : nodes_) node_cells_.push_back(&mem_.cells[n->name]);
  }

  SymMemory run(const SymexecOptions& o) {
    std::vector<StmtP> top = top_level_statements(r_);
    scopes_.emplace_back();
    for (std::size_t i = 0; i < top.size(); ++i) {
      if (o.at_top_level) o.at_top_level(static_cast<int>(i), mem_);
      exec(*top[i]);
    }
    if (o.at_top_level) o.at_top_level(static_cast<int>(top.size()), mem_);
    return std::move(mem_);
  }

 private:
  std::int64_t index_value(const Index& idx) const {
    std::int64_t v = idx.offset;
    for (const auto& t : idx.terms) v += t.coef * sym(t.sym);
    return v;
  }

  std::int64_t sym(const std::string& s) const {
    for (auto it = env_.rbegin(); it != env_.rend(); ++it)
      if (it->first == s) return it->second;
    FP_UNREACHABLE("unbound loop symbol {}", s);
    return 0;
  }

  std::size_t node_of(const std::string& name) const {
    auto it = node_index_.find(name);
    FP_INTERNAL_CHECK(it != node_index_.end(), "unknown node {}", name);
    return it->second;
  }

  std::int64_t cell_of(std::size_t node, const std::vector<Index>& idx) const {
    const Node& n = *nodes_[node];
    std::int64_t off = 0;
    for (std::size_t i = 0; i < idx.size(); ++i) off = off * n.dims[i] + index_value(idx[i]);
    return off;
  }

  Local* local(std::string_view name) {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (auto l = s->rbegin(); l != s->rend(); ++l)
        if (l->name == name) return &*l;
    FP_UNREACHABLE("unknown local {}", name);
    return nullptr;
  }

  TermP eval(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Get: {
        std::size_t n = node_of(e.name);
        return store_.convert((*node_cells_[n])[static_cast<std::size_t>(cell_of(n, e.indices))], e.prec);
      }
      case ExprKind::GetLocal:
        return store_.convert(local(e.name)->value, e.prec);
      case ExprKind::Const:
        return store_.constant(e.value, e.prec);
      case ExprKind::EmbedIndex:
        return store_.constant(static_cast<double>(index_value(e.indices[0])), e.prec);
      case ExprKind::Unary:
        return store_.unary(e.unop(), eval(*e.args[0]), e.prec);
      case ExprKind::Binary:
        return store_.binary(e.binop(), eval(*e.args[0]), eval(*e.args[1]), e.prec);
      case ExprKind::Ternary:
        return store_.ternary(e.ternop(), eval(*e.args[0]), eval(*e.args[1]), eval(*e.args[2]), e.prec);
    }
    return nullptr;
  }

  void exec_list(const std::vector<StmtP>& body) {
    scopes_.emplace_back();
    for (const auto& s : body) exec(*s);
    scopes_.pop_back();
  }

  void exec(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Seq:
        exec_list(s.body);
        break;
      case StmtKind::For:
        for (std::int64_t i = s.from; i <= s.to; ++i) {
          env_.emplace_back(s.sym, i);
          exec_list(s.body);
          env_.pop_back();
        }
        break;
      case StmtKind::Scan:
        exec_scan(s);
        break;
      case StmtKind::Zero: {
        std::size_t n = node_of(s.name);
        TermP zero = store_.constant(0.0, nodes_[n]->prec);
        for (auto& c : *node_cells_[n]) c = zero;
        break;
      }
      case StmtKind::Set: {
        std::size_t n = node_of(s.name);
        TermP v = store_.convert(eval(*s.value), nodes_[n]->prec);
        (*node_cells_[n])[static_cast<std::size_t>(cell_of(n, s.indices))] = v;
        break;
      }
      case StmtKind::DeclareLocal:
        scopes_.back().push_back(Local{s.name, s.prec, store_.constant(0.0, s.prec)});
        break;
      case StmtKind::SetLocal: {
        Local* l = local(s.name);
        l->value = store_.convert(eval(*s.value), l->prec);
        break;
      }
      case StmtKind::If:
        exec_if(s);
        break;
      case StmtKind::Comment:
      case StmtKind::Noop:
        break;
    }
  }

  void exec_scan(const Stmt& s) {
    std::vector<TermP> state;
    for (const auto& c : s.carried) state.push_back(store_.convert(eval(*c.init), c.prec));
    auto step = [&](std::int64_t i) {
      env_.emplace_back(s.sym, i);
      scopes_.emplace_back();
      for (std::size_t k = 0; k < s.carried.size(); ++k) {
        const Carried& c = s.carried[k];
        scopes_.back().push_back(Local{c.prev, c.prec, state[k]});
        scopes_.back().push_back(Local{c.next, c.prec, store_.constant(0.0, c.prec)});
      }
      exec_list(s.body);
      for (std::size_t k = 0; k < s.carried.size(); ++k) state[k] = scopes_.back()[2 * k + 1].value;
      scopes_.pop_back();
      env_.pop_back();
    };
    if (s.dir == ScanDir::Forward) {
      for (std::int64_t i = s.from; i <= s.to; ++i) step(i);
    } else {
      for (std::int64_t i = s.to; i >= s.from; --i) step(i);
    }
  }

  void exec_if(const Stmt& s) {
    TermP c = eval(*s.value);
    if (c->op == TermOp::Const) {
      if (c->value != 0 || std::isnan(c->value)) exec_list(s.body);
      return;
    }
    // Snapshot what the body may change: the nodes it stores to and every visible local.
    std::set<std::size_t> written;
    for (const auto& b : s.body)
      for_each_stmt(b, [&](const Stmt& st) {
        if (st.kind == StmtKind::Set || st.kind == StmtKind::Zero) written.insert(node_of(st.name));
      });
    std::vector<std::pair<std::size_t, std::vector<TermP>>> before;
    for (std::size_t n : written) before.emplace_back(n, *node_cells_[n]);
    std::vector<std::vector<Local>> locals_before = scopes_;
    exec_list(s.body);
    for (auto& [n, old] : before) {
      auto& now = *node_cells_[n];
      for (std::size_t i = 0; i < now.size(); ++i)
        if (now[i] != old[i]) now[i] = store_.ternary(TernOp::Where, c, now[i], old[i], nodes_[n]->prec);
    }
    for (std::size_t k = 0; k < locals_before.size(); ++k)
      for (std::size_t j = 0; j < locals_before[k].size(); ++j) {
        Local& l = scopes_[k][j];
        if (l.value != locals_before[k][j].value)
          l.value = store_.ternary(TernOp::Where, c, l.value, locals_before[k][j].value, l.prec);
      }
  }

  const Routine& r_;
  TermStore& store_;
  SymMemory mem_;
  std::vector<const Node*> nodes_;
  std::vector<std::vector<TermP>*> node_cells_;
  std::unordered_map<std::string, std::size_t> node_index_;
  std::vector<std::pair<std::string_view, std::int64_t>> env_;
  std::vector<std::vector<Local>> scopes_;
};

}  // namespace

SymMemory symexec(const Routine& r, TermStore& store, const SymexecOptions& options) {
  Executor ex(r, store);
  return ex.run(options);
}

}  // namespace fp::verify
