// The well-formedness checker (core/checker.h): one walk over the routine in program order that
// keeps what is in scope — loop symbols with their ranges, guard facts, locals, open scans — and
// reports every rule a construct breaks where the construct is. The range analysis behind the
// bounds rule lives in checker_bounds.cpp.

#include "core/checker.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "core/checker_internal.h"
#include "core/diagnostic.h"
#include "core/text_parser.h"
#include "core/text_printer.h"

namespace fp {

namespace {

using checker_detail::AffineScope;
using checker_detail::Range;
using checker_detail::Reporter;

constexpr std::int64_t kMaxCells = kMaxNodeCells;  // the text format's limit, so every checked routine prints

std::string describe(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Seq:
      return "seq";
    case StmtKind::For:
      return fmt::format("'for {}'", s.sym);
    case StmtKind::Scan:
      return fmt::format("'scan {}'", s.sym);
    case StmtKind::Zero:
      return fmt::format("zero {}", s.name);
    case StmtKind::Set:
      return fmt::format("set {}", s.name);
    case StmtKind::DeclareLocal:
      return fmt::format("local {}", s.name);
    case StmtKind::SetLocal:
      return fmt::format("{} :=", s.name);
    case StmtKind::If:
      return "'if'";
    case StmtKind::Comment:
      return "comment";
    case StmtKind::Noop:
      return "noop";
  }
  return "statement";
}

std::string dims_str(const std::vector<std::int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// One scalar local in scope. Carried locals remember which open scan they belong to, so the scan
// contract can be checked at each read and write.
struct LocalInfo {
  enum class Kind { Plain, Prev, Next };
  Prec prec = Prec::F32;
  Kind kind = Kind::Plain;
  std::size_t frame = 0;  // index into Checker::scans_ (Prev/Next only)
};

// An open scan: which of its `next` locals the walk has seen written (at the top level of the
// body, or misplaced: a misplaced write is reported once, not again as missing).
struct ScanFrame {
  const Stmt* scan = nullptr;
  std::map<std::string, bool> next_written;
  std::set<std::string> misplaced;
};

class Checker {
 public:
  explicit Checker(const Routine& r) : r_(r) {}

  std::vector<Diagnostic> run() {
    check_nodes();
    collect_carried_names();
    if (!r_.body) {
      rep_.report({}, "", "expected a routine body, found none");
    } else if (r_.body->kind != StmtKind::Seq) {
      rep_.report(r_.body->loc, "",
                  fmt::format("expected the routine body to be a seq, found {}", describe(*r_.body)));
    } else {
      check_list(r_.body->body, nullptr);
    }
    return rep_.take();
  }

 private:
  // ---- nodes ----------------------------------------------------------------------------------

  void check_nodes() {
    std::map<std::string, int> seen;
    for (const Node& n : r_.nodes) {
      std::string leaf = fmt::format("node {}", n.name);
      if (!is_valid_text_name(n.name))
        rep_.report(
            n.loc, leaf,
            fmt::format("expected a node name (an identifier that is not a keyword), found '{}'", n.name));
      if (seen[n.name]++ == 1)
        rep_.report(n.loc, leaf,
                    fmt::format("expected a unique node name, found '{}' declared twice", n.name));
      check_dims(n, leaf);
    }
  }

  void check_dims(const Node& n, const std::string& leaf) {
    if (n.dims.empty()) {
      rep_.report(n.loc, leaf,
                  fmt::format("expected node '{}' to have at least one axis, found none", n.name));
      return;
    }
    std::int64_t cells = 1;
    bool too_many = false;
    for (std::size_t a = 0; a < n.dims.size(); ++a) {
      std::int64_t d = n.dims[a];
      if (d < 1) {
        rep_.report(
            n.loc, leaf,
            fmt::format("expected every extent of node '{}' to be >= 1, found {} at axis {}", n.name, d, a));
        return;
      }
      // Multiplying only while below the limit keeps the product far from int64 overflow.
      if (!too_many && d > kMaxCells / cells) too_many = true;
      if (!too_many) cells *= d;
    }
    if (too_many)
      rep_.report(n.loc, leaf,
                  fmt::format("expected node '{}' to have at most 2^40 cells, found dims {}", n.name,
                              dims_str(n.dims)));
  }

  void collect_carried_names() {
    if (!r_.body) return;
    std::function<void(const StmtP&)> visit = [&](const StmtP& s) {
      if (!s) return;
      if (s->kind == StmtKind::Scan)
        for (const auto& c : s->carried) {
          carried_owner_.emplace(c.prev, describe(*s));
          carried_owner_.emplace(c.next, describe(*s));
        }
      for (const auto& b : s->body) visit(b);
    };
    visit(r_.body);
  }

  // ---- statements -----------------------------------------------------------------------------

  // A statement list is a scope: locals declared in it are visible to the rest of it only.
  void check_list(const std::vector<StmtP>& body, const Stmt* owner) {
    owners_.push_back(owner);
    scopes_.emplace_back();
    for (const auto& s : body) check_stmt(s);
    scopes_.pop_back();
    owners_.pop_back();
  }

  void check_stmt(const StmtP& sp) {
    if (!sp) {
      rep_.report({}, "", "expected a statement, found none (null)");
      return;
    }
    const Stmt& s = *sp;
    switch (s.kind) {
      case StmtKind::Seq:
        // A nested seq only groups: the printer writes its statements inline, so it opens no
        // scope and its statements count as statements of the enclosing list.
        for (const auto& b : s.body) check_stmt(b);
        return;
      case StmtKind::For:
        return check_for(s);
      case StmtKind::Scan:
        return check_scan(s);
      case StmtKind::Zero:
        return void(lookup_node(s.name, s.loc, describe(s)));
      case StmtKind::Set:
        return check_set(s);
      case StmtKind::DeclareLocal:
        return check_declare(s);
      case StmtKind::SetLocal:
        return check_set_local(s);
      case StmtKind::If:
        return check_if(s);
      case StmtKind::Comment:
      case StmtKind::Noop:
        return;
    }
    rep_.report(s.loc, "", fmt::format("expected a statement kind, found code {}", static_cast<int>(s.kind)));
  }

  template <typename F>
  void nested(const Stmt& s, F&& f) {
    rep_.enter(describe(s));
    f();
    rep_.leave();
  }

  // A loop symbol names an iteration of this loop only: reusing an enclosing loop's symbol would
  // make an index ambiguous.
  void check_loop_symbol(const Stmt& s) {
    if (!is_valid_text_name(s.sym))
      rep_.report(
          s.loc, describe(s),
          fmt::format("expected a loop symbol (an identifier that is not a keyword), found '{}'", s.sym));
    if (affine_.is_bound(s.sym))
      rep_.report(
          s.loc, describe(s),
          fmt::format("expected a loop symbol not bound by an enclosing loop, found '{}' already bound",
                      s.sym));
  }

  void check_for(const Stmt& s) {
    check_loop_symbol(s);
    affine_.push_loop(s.sym, s.from, s.to);  // a dead loop (to < from) is legal: zero iterations
    nested(s, [&] { check_list(s.body, &s); });
    affine_.pop_loop();
  }

  void check_if(const Stmt& s) {
    check_expr(s.value, s, "condition");
    std::optional<checker_detail::AffineFact> fact;
    if (s.value) fact = affine_.fact_of_condition(*s.value);
    if (fact) affine_.push_fact(*fact);
    nested(s, [&] { check_list(s.body, &s); });
    if (fact) affine_.pop_fact();
  }

  void check_set(const Stmt& s) {
    check_expr(s.value, s, "value");
    const Node* n = lookup_node(s.name, s.loc, describe(s));
    if (!n) return;
    check_access(*n, s.indices, s.loc, describe(s));
  }

  void check_declare(const Stmt& s) {
    if (check_local_name(s.name, s.loc, describe(s), "local"))
      scopes_.back()[s.name] = LocalInfo{s.prec, LocalInfo::Kind::Plain, 0};
  }

  // True when `name` may be declared in the current scope (diagnosed otherwise).
  bool check_local_name(const std::string& name, SrcLoc loc, const std::string& leaf, const char* what) {
    if (!is_valid_text_name(name)) {
      rep_.report(
          loc, leaf,
          fmt::format("expected a {} name (an identifier that is not a keyword), found '{}'", what, name));
      return false;
    }
    if (r_.find_node(name)) {
      rep_.report(loc, leaf,
                  fmt::format("expected a {} name distinct from node names, found '{}', a node", what, name));
      return false;
    }
    if (scopes_.back().count(name)) {
      rep_.report(
          loc, leaf,
          fmt::format("expected a new {} name, found '{}' already declared in this scope", what, name));
      return false;
    }
    const LocalInfo* outer = find_local(name);
    if (outer && outer->kind != LocalInfo::Kind::Plain) {
      rep_.report(
          loc, leaf,
          fmt::format("expected a {} name distinct from the enclosing scan's carried locals, found '{}'",
                      what, name));
      return false;
    }
    return true;
  }

  void check_set_local(const Stmt& s) {
    check_expr(s.value, s, "value");
    const LocalInfo* info = find_local(s.name);
    if (!info) return report_missing_local(s.name, s.loc, describe(s));
    if (info->kind == LocalInfo::Kind::Prev)
      return rep_.report(s.loc, describe(s),
                         fmt::format("expected no write to carried '{}' (it takes the value of its next "
                                     "after each iteration), found a write",
                                     s.name));
    if (info->kind != LocalInfo::Kind::Next) return;
    ScanFrame& frame = scans_[info->frame];
    if (owners_.back() != frame.scan) {
      frame.misplaced.insert(s.name);
      return rep_.report(
          s.loc, describe(s),
          fmt::format("expected carried '{}' written by a top-level statement of the scan body, found a "
                      "write inside {}",
                      s.name, rep_.innermost()));
    }
    bool& written = frame.next_written[s.name];
    if (written)
      return rep_.report(
          s.loc, describe(s),
          fmt::format("expected carried '{}' written exactly once in the scan body, found a second write",
                      s.name));
    written = true;
  }

  // ---- scans ----------------------------------------------------------------------------------

  void check_scan(const Stmt& s) {
    check_loop_symbol(s);
    if (s.to < s.from)
      rep_.report(
          s.loc, describe(s),
          fmt::format(
              "expected a non-empty scan range, found {}..{} (a producer with no iterations emits noop)",
              s.from, s.to));
    check_carried_names(s);
    init_of_ = &s;
    for (const auto& c : s.carried) check_expr(c.init, s, fmt::format("init of '{}'", c.prev));
    init_of_ = nullptr;

    affine_.push_loop(s.sym, s.from, s.to);
    scans_.push_back(ScanFrame{&s, {}, {}});
    std::size_t frame = scans_.size() - 1;
    scopes_.emplace_back();
    for (const auto& c : s.carried) {
      scopes_.back().emplace(c.prev, LocalInfo{c.prec, LocalInfo::Kind::Prev, frame});
      scopes_.back().emplace(c.next, LocalInfo{c.prec, LocalInfo::Kind::Next, frame});
      scans_[frame].next_written.emplace(c.next, false);
    }
    nested(s, [&] { check_list(s.body, &s); });
    scopes_.pop_back();
    for (const auto& c : s.carried)
      if (!scans_[frame].next_written[c.next] && !scans_[frame].misplaced.count(c.next))
        rep_.report(s.loc, describe(s),
                    fmt::format("expected carried '{}' written exactly once in the scan body, found no write",
                                c.next));
    scans_.pop_back();
    affine_.pop_loop();
  }

  void check_carried_names(const Stmt& s) {
    std::map<std::string, int> uses;
    for (const auto& c : s.carried)
      for (const std::string* name : {&c.prev, &c.next}) {
        const std::string& n = *name;
        std::string leaf = describe(s);
        if (!is_valid_text_name(n))
          rep_.report(
              s.loc, leaf,
              fmt::format("expected a carried local name (an identifier that is not a keyword), found '{}'",
                          n));
        if (uses[n]++ == 1)
          rep_.report(s.loc, leaf,
                      fmt::format("expected carried local names pairwise distinct, found '{}' twice", n));
        if (r_.find_node(n))
          rep_.report(
              s.loc, leaf,
              fmt::format("expected carried local '{}' distinct from node names (scan state never lives in a "
                          "node), found node '{}'",
                          n, n));
        if (find_local(n))
          rep_.report(
              s.loc, leaf,
              fmt::format("expected carried local '{}' distinct from the locals visible at the scan, found a "
                          "visible local '{}'",
                          n, n));
      }
  }

  // ---- expressions ----------------------------------------------------------------------------

  void check_expr(const ExprP& ep, const Stmt& holder, const std::string& role) {
    if (!ep) {
      rep_.report(holder.loc, describe(holder),
                  fmt::format("expected an expression as {}, found none", role));
      return;
    }
    const Expr& e = *ep;
    SrcLoc loc = e.loc.line > 0 ? e.loc : holder.loc;
    std::string leaf = describe(holder);
    switch (e.kind) {
      case ExprKind::Get:
        check_get(e, loc, leaf);
        break;
      case ExprKind::GetLocal:
        check_get_local(e, loc, leaf);
        break;
      case ExprKind::Const:
        check_const(e, loc, leaf);
        break;
      case ExprKind::EmbedIndex:
        check_embed(e, loc, leaf);
        break;
      case ExprKind::Unary:
      case ExprKind::Binary:
      case ExprKind::Ternary:
        check_op(e, loc, leaf);
        break;
      default:
        rep_.report(loc, leaf,
                    fmt::format("expected an expression kind, found code {}", static_cast<int>(e.kind)));
        return;
    }
    for (const auto& a : e.args) check_expr(a, holder, role);
  }

  void check_get(const Expr& e, SrcLoc loc, const std::string& leaf) {
    const Node* n = lookup_node(e.name, loc, leaf);
    if (!n) return;
    if (e.prec != n->prec)
      rep_.report(loc, leaf,
                  fmt::format("expected the read of '{}' at {} (the node's precision), found {}", e.name,
                              prec_name(n->prec), prec_name(e.prec)));
    check_access(*n, e.indices, loc, leaf);
  }

  void check_get_local(const Expr& e, SrcLoc loc, const std::string& leaf) {
    if (init_of_) {
      for (const auto& c : init_of_->carried)
        if (e.name == c.prev || e.name == c.next)
          return rep_.report(
              loc, leaf,
              fmt::format("expected the init of a carried local to read no carried local, found '{}'",
                          e.name));
    }
    const LocalInfo* info = find_local(e.name);
    if (!info) return report_missing_local(e.name, loc, leaf);
    if (e.prec != info->prec)
      rep_.report(loc, leaf,
                  fmt::format("expected the read of local '{}' at {} (its declared precision), found {}",
                              e.name, prec_name(info->prec), prec_name(e.prec)));
    if (info->kind == LocalInfo::Kind::Next && !scans_[info->frame].next_written[e.name])
      rep_.report(
          loc, leaf,
          fmt::format(
              "expected carried '{}' read only after its write in the scan body, found a read before it",
              e.name));
  }

  void check_const(const Expr& e, SrcLoc loc, const std::string& leaf) {
    if (e.prec != Prec::I32) return;
    double v = e.value;
    if (!std::isfinite(v) || std::trunc(v) != v || v < -2147483648.0 || v > 2147483647.0)
      rep_.report(loc, leaf,
                  fmt::format("expected an integral i32 constant in [-2147483648, 2147483647], found {}", v));
  }

  void check_embed(const Expr& e, SrcLoc loc, const std::string& leaf) {
    if (e.indices.size() != 1) {
      rep_.report(loc, leaf, fmt::format("expected exactly one index in idx, found {}", e.indices.size()));
      return;
    }
    check_symbols(e.indices[0], loc, leaf);
  }

  void check_op(const Expr& e, SrcLoc loc, const std::string& leaf) {
    struct Shape {
      const char* kind;
      std::size_t arity;
      int ops;
    };
    Shape shape = e.kind == ExprKind::Unary    ? Shape{"unary", 1, 5}
                  : e.kind == ExprKind::Binary ? Shape{"binary", 2, 9}
                                               : Shape{"ternary", 3, 2};
    if (e.op >= shape.ops) {
      rep_.report(loc, leaf, fmt::format("expected a {} operator, found code {}", shape.kind, e.op));
      return;
    }
    const char* name = e.kind == ExprKind::Unary    ? unop_name(e.unop())
                       : e.kind == ExprKind::Binary ? binop_name(e.binop())
                                                    : ternop_name(e.ternop());
    if (e.args.size() != shape.arity)
      rep_.report(loc, leaf,
                  fmt::format("expected {} operand{} for {} '{}', found {}", shape.arity,
                              shape.arity == 1 ? "" : "s", shape.kind, name, e.args.size()));
    bool float_only = (e.kind == ExprKind::Unary && (e.unop() == UnOp::Exp || e.unop() == UnOp::Sqrt)) ||
                      (e.kind == ExprKind::Ternary && e.ternop() == TernOp::Fma);
    if (float_only && !is_float(e.prec))
      rep_.report(loc, leaf,
                  fmt::format("expected a float precision for {}, found {}", name, prec_name(e.prec)));
  }

  // ---- node accesses --------------------------------------------------------------------------

  const Node* lookup_node(const std::string& name, SrcLoc loc, const std::string& leaf) {
    const Node* n = r_.find_node(name);
    if (!n) rep_.report(loc, leaf, fmt::format("expected a declared node, found '{}'", name));
    return n;
  }

  void check_access(const Node& n, const std::vector<Index>& indices, SrcLoc loc, const std::string& leaf) {
    if (indices.size() != n.dims.size()) {
      rep_.report(loc, leaf,
                  fmt::format("expected {} indices for node '{}' (rank {}), found {}", n.dims.size(), n.name,
                              n.dims.size(), indices.size()));
      for (const auto& idx : indices) check_symbols(idx, loc, leaf);
      return;
    }
    for (std::size_t a = 0; a < indices.size(); ++a)
      if (check_symbols(indices[a], loc, leaf)) check_bounds(n, a, indices[a], loc, leaf);
  }

  // Every access is in bounds on every iteration: proved from the loop ranges and guards.
  void check_bounds(const Node& n, std::size_t axis, const Index& idx, SrcLoc loc, const std::string& leaf) {
    if (affine_.unreachable()) return;  // inside a dead loop nothing executes
    Range r = affine_.range_of(idx);
    if (r.empty()) return;  // the guards prove this access never executes
    if (r.lo >= 0 && r.hi <= n.dims[axis] - 1) return;
    rep_.report(loc, leaf,
                fmt::format("expected index {} of '{}' within 0..{} (extent {}) on every iteration, found {} "
                            "ranging over {}",
                            axis, n.name, n.dims[axis] - 1, n.dims[axis], print_index(idx),
                            checker_detail::format_range(r)));
  }

  // True when every symbol of idx is bound by an enclosing loop.
  bool check_symbols(const Index& idx, SrcLoc loc, const std::string& leaf) {
    bool ok = true;
    for (const auto& t : idx.terms) {
      if (t.coef == 0 || affine_.is_bound(t.sym)) continue;
      ok = false;
      if (init_of_ && t.sym == init_of_->sym)
        rep_.report(
            loc, leaf,
            fmt::format("expected the init of a carried local not to mention scan symbol '{}', found it",
                        t.sym));
      else
        rep_.report(
            loc, leaf,
            fmt::format("expected index symbol '{}' bound by an enclosing for or scan, found it unbound",
                        t.sym));
    }
    return ok;
  }

  // ---- locals ---------------------------------------------------------------------------------

  const LocalInfo* find_local(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  void report_missing_local(const std::string& name, SrcLoc loc, const std::string& leaf) {
    auto owner = carried_owner_.find(name);
    if (owner != carried_owner_.end())
      rep_.report(
          loc, leaf,
          fmt::format("expected a local visible here, found '{}', a carried local of {} usable only inside "
                      "its body",
                      name, owner->second));
    else
      rep_.report(
          loc, leaf,
          fmt::format("expected a local declared before use in an enclosing scope, found '{}'", name));
  }

  const Routine& r_;
  Reporter rep_;
  AffineScope affine_;
  std::vector<std::map<std::string, LocalInfo>> scopes_;
  std::vector<ScanFrame> scans_;
  std::vector<const Stmt*> owners_;  // the statement whose body list is being walked
  const Stmt* init_of_ = nullptr;    // the scan whose carried inits are being checked
  std::map<std::string, std::string> carried_owner_;
};

}  // namespace

namespace checker_detail {

const std::string& Reporter::innermost() const {
  static const std::string kNone;
  return crumbs_.empty() ? kNone : crumbs_.back();
}

void Reporter::report(SrcLoc loc, const std::string& leaf, const std::string& message) {
  std::vector<std::string> parts = crumbs_;
  if (!leaf.empty()) parts.push_back(leaf);
  std::string where = parts.empty() ? "the routine body" : fmt::format("{}", fmt::join(parts, " > "));
  std::string text = loc.line > 0 ? message : fmt::format("in {}: {}", where, message);
  out_.push_back(Diagnostic{loc, std::move(text), std::move(where)});
}

std::vector<Diagnostic> Reporter::take() {
  // The walk is in program order except that a scan's "never written" comes after its body; with
  // source positions available, order by them.
  bool located = std::all_of(out_.begin(), out_.end(), [](const Diagnostic& d) { return d.loc.line > 0; });
  if (located)
    std::stable_sort(out_.begin(), out_.end(), [](const Diagnostic& a, const Diagnostic& b) {
      return std::pair(a.loc.line, a.loc.col) < std::pair(b.loc.line, b.loc.col);
    });
  return std::move(out_);
}

}  // namespace checker_detail

std::vector<Diagnostic> check_routine(const Routine& r) {
  return Checker(r).run();
}

void check_routine_or_throw(const Routine& r, const std::string& file) {
  auto diags = check_routine(r);
  if (diags.empty()) return;
  const Diagnostic& d = diags.front();
  throw UserError(kExitMalformed, file, d.loc.line, d.loc.col, d.message);
}

}  // namespace fp
