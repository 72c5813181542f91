#include "core/ir.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace fp {

namespace {
constexpr const char* kPrecNames[] = {"f64", "f32", "f16", "bf16", "i32"};
constexpr const char* kModeNames[] = {"virtual", "local", "materialized", "requested"};
constexpr const char* kUnNames[] = {"neg", "exp", "sqrt", "abs", "cast"};
constexpr const char* kBinNames[] = {"add", "sub", "mul", "div", "max", "min", "pow", "eq", "lt"};
constexpr const char* kTernNames[] = {"where", "fma"};

template <typename E, std::size_t N>
std::optional<E> lookup(const char* const (&names)[N], std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<E>(i);
  return std::nullopt;
}
}  // namespace

const char* prec_name(Prec p) { return kPrecNames[static_cast<int>(p)]; }
std::optional<Prec> parse_prec(std::string_view s) { return lookup<Prec>(kPrecNames, s); }
bool is_float(Prec p) { return p != Prec::I32; }
int prec_bytes(Prec p) {
  switch (p) {
    case Prec::F64: return 8;
    case Prec::F32: return 4;
    case Prec::F16: return 2;
    case Prec::BF16: return 2;
    case Prec::I32: return 4;
  }
  return 0;
}
Prec state_prec(Prec p) { return p == Prec::F64 ? Prec::F64 : Prec::F32; }

const char* mem_mode_name(MemMode m) { return kModeNames[static_cast<int>(m)]; }
std::optional<MemMode> parse_mem_mode(std::string_view s) { return lookup<MemMode>(kModeNames, s); }

const char* unop_name(UnOp op) { return kUnNames[static_cast<int>(op)]; }
const char* binop_name(BinOp op) { return kBinNames[static_cast<int>(op)]; }
const char* ternop_name(TernOp op) { return kTernNames[static_cast<int>(op)]; }
std::optional<UnOp> parse_unop(std::string_view s) { return lookup<UnOp>(kUnNames, s); }
std::optional<BinOp> parse_binop(std::string_view s) { return lookup<BinOp>(kBinNames, s); }
std::optional<TernOp> parse_ternop(std::string_view s) { return lookup<TernOp>(kTernNames, s); }

std::int64_t Node::cell_count() const {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

bool Node::operator==(const Node& o) const {
  return name == o.name && dims == o.dims && prec == o.prec && mode == o.mode &&
         is_input == o.is_input && is_output == o.is_output;
}

Index Index::canonical() const {
  Index out;
  out.offset = offset;
  for (const auto& t : terms) {
    auto it = std::find_if(out.terms.begin(), out.terms.end(),
                           [&](const Term& u) { return u.sym == t.sym; });
    if (it == out.terms.end())
      out.terms.push_back(t);
    else
      it->coef += t.coef;
  }
  std::erase_if(out.terms, [](const Term& t) { return t.coef == 0; });
  return out;
}

bool Index::mentions(const std::string& sym) const {
  for (const auto& t : terms)
    if (t.sym == sym && t.coef != 0) return true;
  return false;
}

Index Index::substituted(const std::map<std::string, Index>& by) const {
  Index out;
  out.offset = offset;
  for (const auto& t : terms) {
    auto it = by.find(t.sym);
    if (it == by.end()) {
      out.terms.push_back(t);
      continue;
    }
    out.offset += t.coef * it->second.offset;
    for (const auto& u : it->second.terms) out.terms.push_back(Term{t.coef * u.coef, u.sym});
  }
  return out.canonical();
}

// ---- expressions ------------------------------------------------------------------------------

namespace {
bool same_constant(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}
}  // namespace

bool equal(const Expr& a, const Expr& b) {
  if (&a == &b) return true;
  if (a.kind != b.kind || a.prec != b.prec || a.op != b.op || a.name != b.name ||
      a.indices != b.indices || a.args.size() != b.args.size())
    return false;
  if (a.kind == ExprKind::Const && !same_constant(a.value, b.value)) return false;
  for (std::size_t i = 0; i < a.args.size(); ++i)
    if (!equal(a.args[i], b.args[i])) return false;
  return true;
}

bool equal(const ExprP& a, const ExprP& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return equal(*a, *b);
}

namespace {
ExprP make(Expr e) { return std::make_shared<const Expr>(std::move(e)); }
StmtP make(Stmt s) { return std::make_shared<const Stmt>(std::move(s)); }
}  // namespace

ExprP get(std::string node, std::vector<Index> idx, Prec node_prec) {
  Expr e;
  e.kind = ExprKind::Get;
  e.prec = node_prec;
  e.name = std::move(node);
  e.indices = std::move(idx);
  return make(std::move(e));
}
ExprP get_local(std::string name, Prec prec) {
  Expr e;
  e.kind = ExprKind::GetLocal;
  e.prec = prec;
  e.name = std::move(name);
  return make(std::move(e));
}
ExprP constant(double v, Prec prec) {
  Expr e;
  e.kind = ExprKind::Const;
  e.prec = prec;
  e.value = v;
  return make(std::move(e));
}
ExprP embed_index(Index idx, Prec prec) {
  Expr e;
  e.kind = ExprKind::EmbedIndex;
  e.prec = prec;
  e.indices.push_back(std::move(idx));
  return make(std::move(e));
}
ExprP unary(UnOp op, ExprP a, Prec prec) {
  Expr e;
  e.kind = ExprKind::Unary;
  e.prec = prec;
  e.op = static_cast<std::uint8_t>(op);
  e.args = {std::move(a)};
  return make(std::move(e));
}
ExprP binary(BinOp op, ExprP a, ExprP b, Prec prec) {
  Expr e;
  e.kind = ExprKind::Binary;
  e.prec = prec;
  e.op = static_cast<std::uint8_t>(op);
  e.args = {std::move(a), std::move(b)};
  return make(std::move(e));
}
ExprP ternary(TernOp op, ExprP a, ExprP b, ExprP c, Prec prec) {
  Expr e;
  e.kind = ExprKind::Ternary;
  e.prec = prec;
  e.op = static_cast<std::uint8_t>(op);
  e.args = {std::move(a), std::move(b), std::move(c)};
  return make(std::move(e));
}

// ---- statements -------------------------------------------------------------------------------

bool equal(const Stmt& a, const Stmt& b) {
  if (&a == &b) return true;
  if (a.kind != b.kind || a.sym != b.sym || a.from != b.from || a.to != b.to || a.dir != b.dir ||
      a.name != b.name || a.indices != b.indices || a.prec != b.prec ||
      a.body.size() != b.body.size() || a.carried.size() != b.carried.size())
    return false;
  if ((a.value || b.value) && !equal(a.value, b.value)) return false;
  for (std::size_t i = 0; i < a.carried.size(); ++i) {
    const Carried& x = a.carried[i];
    const Carried& y = b.carried[i];
    if (x.prev != y.prev || x.next != y.next || x.prec != y.prec || !equal(x.init, y.init))
      return false;
  }
  for (std::size_t i = 0; i < a.body.size(); ++i)
    if (!equal(a.body[i], b.body[i])) return false;
  return true;
}

bool equal(const StmtP& a, const StmtP& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return equal(*a, *b);
}

StmtP seq(std::vector<StmtP> body) {
  Stmt s;
  s.kind = StmtKind::Seq;
  s.body = std::move(body);
  return make(std::move(s));
}
StmtP for_loop(std::string sym, std::int64_t from, std::int64_t to, std::vector<StmtP> body) {
  Stmt s;
  s.kind = StmtKind::For;
  s.sym = std::move(sym);
  s.from = from;
  s.to = to;
  s.body = std::move(body);
  return make(std::move(s));
}
StmtP scan_loop(std::string sym, std::int64_t from, std::int64_t to, ScanDir dir,
                std::vector<Carried> carried, std::vector<StmtP> body) {
  Stmt s;
  s.kind = StmtKind::Scan;
  s.sym = std::move(sym);
  s.from = from;
  s.to = to;
  s.dir = dir;
  s.carried = std::move(carried);
  s.body = std::move(body);
  return make(std::move(s));
}
StmtP zero(std::string node) {
  Stmt s;
  s.kind = StmtKind::Zero;
  s.name = std::move(node);
  return make(std::move(s));
}
StmtP set(std::string node, std::vector<Index> idx, ExprP value) {
  Stmt s;
  s.kind = StmtKind::Set;
  s.name = std::move(node);
  s.indices = std::move(idx);
  s.value = std::move(value);
  return make(std::move(s));
}
StmtP declare_local(std::string name, Prec prec) {
  Stmt s;
  s.kind = StmtKind::DeclareLocal;
  s.name = std::move(name);
  s.prec = prec;
  return make(std::move(s));
}
StmtP set_local(std::string name, ExprP value) {
  Stmt s;
  s.kind = StmtKind::SetLocal;
  s.name = std::move(name);
  s.value = std::move(value);
  return make(std::move(s));
}
StmtP if_(ExprP cond, std::vector<StmtP> body) {
  Stmt s;
  s.kind = StmtKind::If;
  s.value = std::move(cond);
  s.body = std::move(body);
  return make(std::move(s));
}
StmtP comment(std::string text) {
  Stmt s;
  s.kind = StmtKind::Comment;
  s.name = std::move(text);
  return make(std::move(s));
}
StmtP noop() {
  Stmt s;
  s.kind = StmtKind::Noop;
  return make(std::move(s));
}

Node make_node(std::string name, std::vector<std::int64_t> dims, Prec prec, bool is_input, bool is_output) {
  Node n;
  n.name = std::move(name);
  n.dims = std::move(dims);
  n.prec = prec;
  n.is_input = is_input;
  n.is_output = is_output;
  return n;
}

std::vector<Index> iters(std::initializer_list<const char*> syms) {
  std::vector<Index> idx;
  for (const char* s : syms) idx.push_back(Index::iter(s));
  return idx;
}

ExprP get_iters(std::string node, std::initializer_list<const char*> syms, Prec node_prec) {
  return get(std::move(node), iters(syms), node_prec);
}

// ---- routines ---------------------------------------------------------------------------------

const Node* Routine::find_node(std::string_view n) const {
  for (const auto& node : nodes)
    if (node.name == n) return &node;
  return nullptr;
}
Node* Routine::find_node(std::string_view n) {
  for (auto& node : nodes)
    if (node.name == n) return &node;
  return nullptr;
}
std::vector<const Node*> Routine::inputs() const {
  std::vector<const Node*> out;
  for (const auto& n : nodes)
    if (n.is_input) out.push_back(&n);
  return out;
}
std::vector<const Node*> Routine::outputs() const {
  std::vector<const Node*> out;
  for (const auto& n : nodes)
    if (n.is_output) out.push_back(&n);
  return out;
}

bool equal(const Routine& a, const Routine& b) {
  return a.name == b.name && a.attrs == b.attrs && a.nodes == b.nodes && equal(a.body, b.body);
}

}  // namespace fp
