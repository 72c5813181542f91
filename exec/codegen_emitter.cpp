// The shared statement and expression emitter (exec/codegen_emitter.h). Every operation below is
// the C spelling of one row of docs/semantics.md §4–§6, with core/numerics_c.h doing whatever plain
// C arithmetic does not do exactly.

#include "exec/codegen_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>

#include "core/access_census.h"
#include "core/diagnostic.h"
#include "core/numerics.h"
#include "exec/c_names.h"

namespace fp::codegen {

namespace {

const char* prec_code(Prec p) {
  switch (p) {
    case Prec::F64:
      return "FPC_F64";
    case Prec::F32:
      return "FPC_F32";
    case Prec::F16:
      return "FPC_F16";
    case Prec::BF16:
      return "FPC_BF16";
    case Prec::I32:
      return "FPC_I32";
  }
  return "FPC_F64";
}

// The value as a binary64 expression (exact for every precision).
std::string as_double(const std::string& code, Prec p) {
  if (p == Prec::F32 || p == Prec::I32) return "(double)(" + code + ")";
  return code;
}

std::string round_narrow(Prec p, const std::string& double_code) {
  return fmt::format("{}({})", p == Prec::F16 ? "fpc_round_f16" : "fpc_round_bf16", double_code);
}

}  // namespace

std::string exp_call(Prec p, const std::string& arg) {
  switch (p) {
    case Prec::F64:
      return "fpc_exp64(" + arg + ")";
    case Prec::F32:
      return "fpc_exp32((float)(" + arg + "))";
    case Prec::F16:
      return "fpc_exp_f16(" + arg + ")";
    case Prec::BF16:
      return "fpc_exp_bf16(" + arg + ")";
    case Prec::I32:
      break;
  }
  FP_INTERNAL_CHECK(false, "exp.i32 (the checker rejects it)");
}

std::string Aff::str() const {
  std::string s;
  for (const auto& [var, coef] : terms) {
    if (coef == 0) continue;
    if (!s.empty()) s += " + ";
    if (coef == 1)
      s += var;
    else
      s += fmt::format("({}LL * {})", coef, var);
  }
  if (off != 0 || s.empty()) {
    if (!s.empty()) s += " + ";
    s += fmt::format("{}LL", off);
  }
  return "(" + s + ")";
}

const char* ctype(Prec p, Dialect) {
  switch (p) {
    case Prec::F32:
      return "float";
    case Prec::I32:
      return "fpc_i32";
    default:
      return "double";
  }
}

const char* stype(Prec p) {
  switch (p) {
    case Prec::F64:
      return "double";
    case Prec::F32:
      return "float";
    case Prec::F16:
    case Prec::BF16:
      return "fpc_u16";
    case Prec::I32:
      return "fpc_i32";
  }
  return "double";
}

// ---- text ---------------------------------------------------------------------------------------

void Emitter::line(const std::string& s) {
  out_.append(static_cast<std::size_t>(indent_) * 2, ' ');
  out_ += s;
  out_ += '\n';
}

void Emitter::open(const std::string& s) {
  line(s + " {");
  ++indent_;
}

void Emitter::close(const std::string& s) {
  --indent_;
  line(s);
}

std::string Emitter::fresh(const std::string& base) {
  return fmt::format("{}{}", base, ++counter_);
}

std::string Emitter::fresh_named(char prefix, const std::string& name) {
  return fmt::format("{}_{}", c_identifier(prefix, name), ++counter_);
}

std::string Emitter::buffer(const std::string& name) const {
  return c_identifier('n', name);
}

std::int64_t Emitter::node_bytes(const Node& n) const {
  return n.cell_count() * prec_bytes(n.prec);
}

// ---- indices ------------------------------------------------------------------------------------

Aff Emitter::index_aff(const Index& idx) const {
  Aff a;
  a.off = idx.offset;
  for (const auto& t : idx.terms) {
    auto it = env_.find(t.sym);
    FP_INTERNAL_CHECK(it != env_.end(), "loop symbol '{}' is not bound", t.sym);
    a.off += t.coef * it->second.off;
    for (const auto& [var, c] : it->second.terms) a.terms[var] += t.coef * c;
  }
  return a;
}

namespace {

// flat += stride·a.
void add_scaled(Aff& flat, const Aff& a, std::int64_t stride) {
  flat.off += a.off * stride;
  for (const auto& [var, c] : a.terms) flat.terms[var] += c * stride;
}

// The terms whose coefficients cancelled dropped (a load's offset names only what it depends on).
Aff without_zero_terms(Aff a) {
  for (auto it = a.terms.begin(); it != a.terms.end();) it = it->second == 0 ? a.terms.erase(it) : std::next(it);
  return a;
}

}  // namespace

Aff Emitter::offset(const Node& n, const std::vector<Index>& indices) const {
  FP_INTERNAL_CHECK(indices.size() == n.dims.size(), "node '{}' accessed with {} indices", n.name,
                    indices.size());
  auto priv = private_.find(n.name);
  if (priv != private_.end()) return private_offset(n, indices, priv->second);
  Aff flat;
  std::int64_t stride = 1;
  if (auto st = staged_.find(n.name); st != staged_.end()) {
    for (std::size_t k = n.dims.size(); k-- > 0;) {
      add_scaled(flat, index_aff(indices[k]), stride);
      add_scaled(flat, st->second.base[k], -stride);
      stride *= st->second.extent[k];
    }
    return without_zero_terms(std::move(flat));
  }
  for (std::size_t k = n.dims.size(); k-- > 0;) {
    add_scaled(flat, index_aff(indices[k]), stride);
    stride *= n.dims[k];
  }
  return flat;
}

// The lane's cell in a private slice: the lane axis's index minus the block's origin (the lane,
// stride 1), then the kept axes innermost first, strides ×width. Zero terms dropped, so a slice
// load has stride 1 along the lanes and nothing from the block variable.
Aff Emitter::private_offset(const Node& n, const std::vector<Index>& indices, const PrivateSlice& p) const {
  Aff flat = index_aff(indices[p.lane_axis]);
  add_scaled(flat, p.origin, -1);
  std::int64_t stride = p.width;
  for (std::size_t k = n.dims.size(); k-- > 0;) {
    if (p.row[k]) continue;
    add_scaled(flat, index_aff(indices[k]), stride);
    stride *= n.dims[k];
  }
  return without_zero_terms(std::move(flat));
}

// ---- locals -------------------------------------------------------------------------------------

std::string Emitter::declare_local(const std::string& name, Prec p) {
  std::string c = fresh_named('l', name);
  bind_local(name, c, p);
  return c;
}

void Emitter::bind_local(const std::string& name, const std::string& cname, Prec p) {
  FP_INTERNAL_CHECK(!scopes_.empty(), "no local scope");
  scopes_.back()[name] = LocalVar{cname, p};
}

const Emitter::LocalVar& Emitter::find_local(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  FP_UNREACHABLE("local '{}' is not declared", name);
}

// ---- values -------------------------------------------------------------------------------------

std::string Emitter::literal(double v, Prec p) const {
  const double r = round_to(p, v);
  if (p == Prec::I32) {
    const auto i = static_cast<std::int64_t>(r);
    if (i == std::numeric_limits<std::int32_t>::min()) return "((fpc_i32)(-2147483647 - 1))";
    return fmt::format("((fpc_i32){})", i);
  }
  const bool f32 = p == Prec::F32;
  if (std::isnan(r)) return f32 ? "FPX_NANF" : "FPX_NAN";
  if (std::isinf(r)) return std::string(r < 0 ? "(-" : "(") + (f32 ? "FPX_INFF" : "FPX_INF") + ")";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", r);
  return fmt::format("({}{})", buf, f32 ? "f" : "");
}

std::string Emitter::convert(const std::string& code, Prec from, Prec to) const {
  if (from == to) return code;
  switch (to) {
    case Prec::F64:
      return as_double(code, from);
    case Prec::F32:
      return "(float)(" + code + ")";
    case Prec::F16:
    case Prec::BF16:
      return round_narrow(to, as_double(code, from));
    case Prec::I32:
      return "fpc_to_i32(" + as_double(code, from) + ")";
  }
  return code;
}

std::string Emitter::raw_load(const Node& n, const Aff& off) const {
  auto st = staged_.find(n.name);
  std::string cell = fmt::format("{}[{}]", st != staged_.end() ? st->second.array : buffer(n.name), off.str());
  switch (n.prec) {
    case Prec::F16:
      return "fpc_f16_value(" + cell + ")";
    case Prec::BF16:
      return "fpc_bf16_value(" + cell + ")";
    default:
      return cell;
  }
}

std::string Emitter::load(const Node& n, const Aff& off) {
  const std::string value = raw_load(n, off);
  if (hoist_ && !panels_.empty()) {
    Panel& pn = panels_.back();
    auto coef = [&](const std::string& v) {
      auto it = off.terms.find(v);
      return it == off.terms.end() ? std::int64_t{0} : it->second;
    };
    bool outer_only = true;
    for (const auto& [var, c] : off.terms)
      if (c != 0 && var != hoist_->j && var != pn.t && !pn.outer.count(var)) outer_only = false;
    const std::int64_t sj = coef(hoist_->j);
    if (outer_only && coef(pn.t) == 1 && sj != 0 && sj != 1 && !pn.written.count(n.name)) {
      auto m = pn.memo.find(value);
      std::string name;
      if (m != pn.memo.end()) {
        name = m->second;
      } else {
        name = fmt::format("p{}", ++counter_);
        pn.memo[value] = name;
        pn.decls.push_back(fmt::format("{} {}[{}] __attribute__((aligned(64)));", ctype(n.prec, dialect_),
                                       name, pn.chunk * pn.width));
        const std::string jj = fmt::format("pj{}", ++counter_), tt = fmt::format("pt{}", ++counter_);
        Aff fill;
        fill.off = off.off;
        for (const auto& [var, c] : off.terms) {
          if (var == pn.t) {
            fill.terms[pn.t0] += c;
            fill.terms[tt] += c;
          } else if (var == hoist_->j) {
            fill.terms[jj] += c;
          } else {
            fill.terms[var] += c;
          }
        }
        pn.fills.push_back(
            fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0}) for (fpc_i64 {2} = 0; {2} < {3}; ++{2}) "
                        "{4}[{2} * {5} + {0}] = {6};",
                        jj, pn.lanes, tt, pn.count, name, pn.width, raw_load(n, fill)));
      }
      return fmt::format("{}[({} - {}) * {} + {}]", name, pn.t, pn.t0, pn.width, hoist_->j);
    }
  }
  if (hoist_) {
    auto jt = off.terms.find(hoist_->j);
    const std::int64_t stride = jt == off.terms.end() ? 0 : jt->second;
    bool outer_only = true;
    for (const auto& [var, c] : off.terms)
      if (c != 0 && var != hoist_->j && !hoist_->outer.count(var)) outer_only = false;
    if (stride != 0 && stride != 1 && outer_only) {
      auto m = hoist_->memo.find(value);
      if (m != hoist_->memo.end()) return m->second;
      const std::string arr = fmt::format("g{}", ++counter_);
      hoist_->lines.push_back(fmt::format("{} {}[{}];", ctype(n.prec, dialect_), arr, hoist_->width));
      hoist_->lines.push_back(fmt::format("for (fpc_i64 {0} = 0; {0} < {1}; ++{0}) {2}[{0}] = {3};",
                                          hoist_->j, hoist_->count, arr, value));
      const std::string ref = fmt::format("{}[{}]", arr, hoist_->j);
      hoist_->memo[value] = ref;
      return ref;
    }
  }
  return value;
}

void Emitter::begin_panel(const std::string& t, const std::string& t0, const std::string& count, int chunk,
                          const std::string& lanes, int width, std::set<std::string> outer,
                          std::set<std::string> written) {
  Panel p;
  p.t = t;
  p.t0 = t0;
  p.count = count;
  p.chunk = chunk;
  p.lanes = lanes;
  p.width = width;
  p.outer = std::move(outer);
  p.written = std::move(written);
  panels_.push_back(std::move(p));
}

std::pair<std::vector<std::string>, std::vector<std::string>> Emitter::end_panel() {
  Panel p = std::move(panels_.back());
  panels_.pop_back();
  return {std::move(p.decls), std::move(p.fills)};
}

void Emitter::begin_hoist(const std::string& j, const std::string& count, int width,
                          std::set<std::string> outer) {
  hoist_ = Hoist{j, count, width, std::move(outer), {}, {}};
}

std::vector<std::string> Emitter::end_hoist() {
  std::vector<std::string> lines = std::move(hoist_->lines);
  hoist_.reset();
  return lines;
}

std::set<std::string> Emitter::bound_variables() const {
  std::set<std::string> out;
  for (const auto& [sym, a] : env_)
    for (const auto& [var, c] : a.terms) out.insert(var);
  return out;
}

std::string Emitter::store(const Node& n, const Aff& off, const std::string& value) const {
  FP_INTERNAL_CHECK(!staged_.count(n.name), "store to node '{}' while it is staged", n.name);
  std::string cell = fmt::format("{}[{}]", buffer(n.name), off.str());
  switch (n.prec) {
    case Prec::F16:
      return fmt::format("{} = fpc_encode16({}, 5, 10);", cell, value);
    case Prec::BF16:
      return fmt::format("{} = fpc_encode16({}, 8, 7);", cell, value);
    default:
      return fmt::format("{} = {};", cell, value);
  }
}

std::string Emitter::replay(const Node& n, const std::vector<Index>& read) {
  const VirtualDef& def = plan_.virtuals.at(n.name);
  const Stmt& set = *def.nest.set;
  // Bind the definition's target symbols to the read's indices (in the reader's variables).
  std::map<std::string, Aff> saved = env_;
  std::map<std::string, Aff> inner;
  for (std::size_t a = 0; a < set.indices.size(); ++a) {
    const Index idx = set.indices[a].canonical();
    if (idx.is_plain_iterator()) inner[idx.terms[0].sym] = index_aff(read[a]);
  }
  // A definition reads no scalar local (placement's contract): it sees an empty local scope.
  std::vector<std::map<std::string, LocalVar>> saved_scopes;
  saved_scopes.swap(scopes_);
  scopes_.emplace_back();
  // Nor does it read a node written where it is read (placement's stale-input rule), so no
  // substitution of the reader applies inside it.
  std::map<std::string, std::string> saved_subst;
  saved_subst.swap(subst_);
  std::map<const Expr*, std::string> saved_read_subst;
  saved_read_subst.swap(expr_subst_);
  std::string result;
  env_ = inner;
  if (def.kind == VirtualDef::Kind::Pointwise) {
    result = convert(expr(set.value), set.value->prec, n.prec);
  } else {
    const std::string acc = fresh("r");
    std::string fill = def.fill_value ? convert(literal(def.fill_value->value, def.fill_value->prec),
                                                def.fill_value->prec, n.prec)
                                      : literal(0.0, n.prec);
    line(fmt::format("{} {} = {};", ctype(n.prec, dialect_), acc, fill));
    int opened = 0;
    for (const Stmt* l : def.nest.loops) {
      bool target = false;
      for (const auto& idx : set.indices) {
        const Index c = idx.canonical();
        if (c.is_plain_iterator() && c.terms[0].sym == l->sym) target = true;
      }
      if (target) continue;
      const std::string v = fresh("q");
      env_[l->sym] = Aff{{{v, 1}}, 0};
      open(fmt::format("for (fpc_i64 {} = {}; {} <= {}; ++{})", v, l->from, v, l->to, v));
      ++opened;
    }
    subst_[n.name] = acc;
    line(fmt::format("{} = {};", acc, convert(expr(set.value), set.value->prec, n.prec)));
    subst_.erase(n.name);
    for (int i = 0; i < opened; ++i) close();
    result = acc;
  }
  env_ = std::move(saved);
  scopes_.swap(saved_scopes);
  subst_.swap(saved_subst);
  expr_subst_.swap(saved_read_subst);
  return result;
}

// Every loop symbol's value lies in [-B, B], B the largest |from|, |to| of any loop and any node
// dimension: a symbol is bound either to its loop's value or, in a replay, to the value of an index
// the checker proved in bounds (core/checker.cpp: every access in bounds on every iteration). So an
// index with sum |coef| * B + |offset| below 2^31 never saturates in idx.i32.
bool Emitter::fits_i32(const Index& idx) {
  if (symbol_bound_ < 0) {
    std::int64_t b = 0;
    auto mag = [](std::int64_t v) { return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v; };
    std::function<void(const Stmt&)> walk = [&](const Stmt& st) {
      if (st.kind == StmtKind::For || st.kind == StmtKind::Scan) b = std::max({b, mag(st.from), mag(st.to)});
      for (const auto& c : st.body)
        if (c) walk(*c);
    };
    if (plan_.placed.body) walk(*plan_.placed.body);
    for (const Node& n : plan_.placed.nodes)
      for (std::int64_t d : n.dims) b = std::max(b, mag(d));
    symbol_bound_ = b;
  }
  const std::int64_t limit = 2147483647LL;
  std::int64_t total = idx.offset < 0 ? (idx.offset < -limit ? limit + 1 : -idx.offset) : idx.offset;
  for (const auto& t : idx.terms) {
    const std::int64_t c = t.coef < 0 ? (t.coef < -limit ? limit + 1 : -t.coef) : t.coef;
    if (c > limit || symbol_bound_ > limit) return false;
    total += c * symbol_bound_;  // both at most 2^31: no overflow
    if (total > limit) return false;
  }
  return total <= limit;
}

std::string Emitter::expr(const ExprP& ep) {
  FP_INTERNAL_CHECK(ep != nullptr, "null expression");
  const Expr& e = *ep;
  if (auto r = expr_subst_.find(&e); r != expr_subst_.end()) return r->second;
  switch (e.kind) {
    case ExprKind::Get: {
      if (auto pin = pinned_.find(e.name); pin != pinned_.end()) return pin->second;
      auto s = subst_.find(e.name);
      if (s != subst_.end()) return s->second;
      const Node& n = plan_.node(e.name);
      if (plan_.is_virtual(e.name)) return replay(n, e.indices);
      return load(n, offset(n, e.indices));
    }
    case ExprKind::GetLocal:
      return find_local(e.name).cname;
    case ExprKind::Const:
      return literal(e.value, e.prec);
    case ExprKind::EmbedIndex: {
      FP_INTERNAL_CHECK(e.indices.size() == 1, "idx with {} indices", e.indices.size());
      const std::string a = "(double)" + index_aff(e.indices[0]).str();
      switch (e.prec) {
        case Prec::F64:
          return a;
        case Prec::F32:
          return "(float)" + a;
        case Prec::F16:
        case Prec::BF16:
          return round_narrow(e.prec, a);
        case Prec::I32: {
          // Saturating the 64-bit index is exactly fpc_to_i32((double)v) for every v (§3: i32
          // saturates; int64 → double is monotonic and ±2^31 are doubles, so a value rounded on
          // the way saturates to the same end), without an int → double → int round trip per
          // element: a causal mask's compare stays in integer lanes.
          const std::string v = index_aff(e.indices[0]).str();
          if (fits_i32(e.indices[0])) return fmt::format("((fpc_i32)({}))", v);
          return fmt::format(
              "((fpc_i32)({0} > 2147483647LL ? 2147483647LL : ({0} < -2147483648LL ? -2147483648LL : {0})))",
              v);
        }
      }
      return a;
    }
    case ExprKind::Unary:
      return unary(e);
    case ExprKind::Binary:
      return binary(e);
    case ExprKind::Ternary:
      return ternary(e);
  }
  FP_UNREACHABLE("unknown expression kind");
}

std::string Emitter::unary(const Expr& e) {
  FP_INTERNAL_CHECK(e.args.size() == 1, "unary op with {} operands", e.args.size());
  const Prec p = e.prec;
  const std::string a = convert(expr(e.args[0]), e.args[0]->prec, p);
  switch (e.unop()) {
    case UnOp::Cast:
      return a;
    case UnOp::Neg:
      return p == Prec::I32 ? "fpc_i32_neg(" + a + ")" : "(-" + a + ")";
    case UnOp::Abs:
      if (p == Prec::I32) return "fpc_i32_abs(" + a + ")";
      return (p == Prec::F32 ? "fabsf(" : "fabs(") + a + ")";
    case UnOp::Exp:
      FP_INTERNAL_CHECK(p != Prec::I32, "exp.i32 (the checker rejects it)");
      return exp_call(p, a);
    case UnOp::Sqrt:
      FP_INTERNAL_CHECK(p != Prec::I32, "sqrt.i32 (the checker rejects it)");
      if (p == Prec::F64) return "sqrt(" + a + ")";
      if (p == Prec::F32) return "sqrtf(" + a + ")";
      return round_narrow(p, "sqrt(" + a + ")");
  }
  FP_UNREACHABLE("unknown unary op");
}

// An i32 operand whose value is exactly a 64-bit index expression: idx.i32 of an index that fits
// in i32 (no saturation: the narrowing is the identity). Compared as 64-bit integers, two such
// operands order exactly as their i32 values do, without narrowing a 64-bit loop index per lane
// (a causal mask's compare: the narrowing permutes were a fifth of the masked row pass).
std::optional<std::string> Emitter::wide_index(const Expr& e) {
  if (e.kind != ExprKind::EmbedIndex || e.prec != Prec::I32 || e.indices.size() != 1) return std::nullopt;
  if (!fits_i32(e.indices[0])) return std::nullopt;
  return "(" + index_aff(e.indices[0]).str() + ")";
}

std::string Emitter::binary(const Expr& e) {
  FP_INTERNAL_CHECK(e.args.size() == 2, "binary op with {} operands", e.args.size());
  const Prec p = e.prec;
  if (p == Prec::I32 && (e.binop() == BinOp::Lt || e.binop() == BinOp::Eq)) {
    const std::optional<std::string> wa = wide_index(*e.args[0]), wb = wide_index(*e.args[1]);
    if (wa && wb) return fmt::format("({} {} {} ? 1 : 0)", *wa, e.binop() == BinOp::Lt ? "<" : "==", *wb);
  }
  const std::string a = convert(expr(e.args[0]), e.args[0]->prec, p);
  const std::string b = convert(expr(e.args[1]), e.args[1]->prec, p);
  auto arith = [&](const char* op, const char* i32fn) -> std::string {
    if (p == Prec::I32) return fmt::format("{}({}, {})", i32fn, a, b);
    const std::string r = fmt::format("({} {} {})", a, op, b);
    if (p == Prec::F64 || p == Prec::F32) return r;
    return round_narrow(p, r);
  };
  const char* one = p == Prec::F32 ? "1.0f" : (p == Prec::I32 ? "1" : "1.0");
  const char* zero = p == Prec::F32 ? "0.0f" : (p == Prec::I32 ? "0" : "0.0");
  switch (e.binop()) {
    case BinOp::Add:
      return arith("+", "fpc_i32_add");
    case BinOp::Sub:
      return arith("-", "fpc_i32_sub");
    case BinOp::Mul:
      return arith("*", "fpc_i32_mul");
    case BinOp::Div:
      return arith("/", "fpc_i32_div");
    case BinOp::Max:
      if (p == Prec::I32) return fmt::format("fpx_i32_max({}, {})", a, b);
      return fmt::format("{}({}, {})", p == Prec::F32 ? "fpc_fmaxf_nan" : "fpc_fmax_nan", a, b);
    case BinOp::Min:
      if (p == Prec::I32) return fmt::format("fpx_i32_min({}, {})", a, b);
      return fmt::format("{}({}, {})", p == Prec::F32 ? "fpc_fminf_nan" : "fpc_fmin_nan", a, b);
    case BinOp::Pow: {
      // The C library's pow on binary64 (implementation-defined: docs/semantics.md §4).
      const std::string r = fmt::format("pow({}, {})", as_double(a, p), as_double(b, p));
      if (p == Prec::F64) return r;
      if (p == Prec::F32) return "(float)" + r;
      if (p == Prec::I32) return "fpc_to_i32(" + r + ")";
      return round_narrow(p, r);
    }
    case BinOp::Eq:
      return fmt::format("({} == {} ? {} : {})", a, b, one, zero);
    case BinOp::Lt:
      return fmt::format("({} < {} ? {} : {})", a, b, one, zero);
  }
  FP_UNREACHABLE("unknown binary op");
}

std::string Emitter::ternary(const Expr& e) {
  FP_INTERNAL_CHECK(e.args.size() == 3, "ternary op with {} operands", e.args.size());
  const Prec p = e.prec;
  if (e.ternop() == TernOp::Where) {
    // The condition at its own precision, never converted; NaN counts as true (NaN != 0).
    const std::string c = expr(e.args[0]);
    const std::string a = convert(expr(e.args[1]), e.args[1]->prec, p);
    const std::string b = convert(expr(e.args[2]), e.args[2]->prec, p);
    return fmt::format("({} != 0 ? {} : {})", c, a, b);
  }
  FP_INTERNAL_CHECK(p != Prec::I32, "fma.i32 (the checker rejects it)");
  const std::string a = convert(expr(e.args[0]), e.args[0]->prec, p);
  const std::string b = convert(expr(e.args[1]), e.args[1]->prec, p);
  const std::string c = convert(expr(e.args[2]), e.args[2]->prec, p);
  if (p == Prec::F64) return fmt::format("fma({}, {}, {})", a, b, c);
  std::string r = fmt::format("fpc_fma_narrow({}, {}, {}, {})", prec_code(p), as_double(a, p),
                              as_double(b, p), as_double(c, p));
  return p == Prec::F32 ? "(float)" + r : r;
}

// ---- statements ---------------------------------------------------------------------------------

std::string Emitter::loop_header(const Stmt& s) {
  const std::string v = fresh_named('s', s.sym);
  bind_sym(s.sym, Aff{{{v, 1}}, 0});
  if (s.kind == StmtKind::Scan && s.dir == ScanDir::Backward)
    return fmt::format("for (fpc_i64 {} = {}; {} >= {}; --{})", v, s.to, v, s.from, v);
  return fmt::format("for (fpc_i64 {} = {}; {} <= {}; ++{})", v, s.from, v, s.to, v);
}

void Emitter::zero_node(const Node& n) {
  if (dialect_ == Dialect::C) {
    line(fmt::format("memset({}, 0, {});", buffer(n.name), node_bytes(n)));
  } else {
    const std::string v = fresh("z");
    line(fmt::format("for (fpc_i64 {} = 0; {} < {}LL; ++{}) {}[{}] = 0;", v, v, n.cell_count(), v,
                     buffer(n.name), v));
  }
}

void Emitter::stmt_list(const std::vector<StmtP>& body) {
  for (const auto& s : body)
    if (s) stmt(*s);
}

void Emitter::stmt(const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Seq:
      open("");
      push_scope();
      stmt_list(s.body);
      pop_scope();
      close();
      return;
    case StmtKind::For:
      if (s.is_dead_loop()) return;
      open(loop_header(s));
      push_scope();
      stmt_list(s.body);
      pop_scope();
      close();
      unbind_sym(s.sym);
      return;
    case StmtKind::Scan: {
      if (s.is_dead_loop()) return;
      open("");
      // Inits: evaluated once, in the enclosing scope, converted to the carried precision.
      std::vector<std::string> prev(s.carried.size()), next(s.carried.size());
      for (std::size_t i = 0; i < s.carried.size(); ++i) {
        const Carried& c = s.carried[i];
        prev[i] = fresh_named('l', c.prev);
        line(fmt::format("{} {} = {};", ctype(c.prec, dialect_), prev[i],
                         convert(expr(c.init), c.init->prec, c.prec)));
      }
      open(loop_header(s));
      push_scope();
      for (std::size_t i = 0; i < s.carried.size(); ++i) {
        const Carried& c = s.carried[i];
        next[i] = fresh_named('l', c.next);
        line(fmt::format("{} {} = {};", ctype(c.prec, dialect_), next[i], literal(0.0, c.prec)));
        bind_local(c.prev, prev[i], c.prec);
        bind_local(c.next, next[i], c.prec);
      }
      if (auto hook = scan_hooks_.find(&s); hook != scan_hooks_.end()) {
        hook->second.prologue();
        open(fmt::format("if ({})", hook->second.guard));
        push_scope();
        stmt_list(s.body);
        pop_scope();
        close();
      } else {
        stmt_list(s.body);
      }
      // Every prev takes its next simultaneously (the nexts are separate variables).
      for (std::size_t i = 0; i < s.carried.size(); ++i) line(fmt::format("{} = {};", prev[i], next[i]));
      pop_scope();
      close();
      unbind_sym(s.sym);
      close();
      return;
    }
    case StmtKind::Zero: {
      const Node& n = plan_.node(s.name);
      FP_INTERNAL_CHECK(!plan_.is_virtual(s.name), "zero of virtual node '{}' where it stands", s.name);
      zero_node(n);
      return;
    }
    case StmtKind::Set: {
      const Node& n = plan_.node(s.name);
      FP_INTERNAL_CHECK(!plan_.is_virtual(s.name), "store to virtual node '{}' where it stands", s.name);
      const std::string v = convert(expr(s.value), s.value->prec, n.prec);
      line(store(n, offset(n, s.indices), v));
      return;
    }
    case StmtKind::DeclareLocal: {
      const std::string c = declare_local(s.name, s.prec);
      line(fmt::format("{} {} = {};", ctype(s.prec, dialect_), c, literal(0.0, s.prec)));
      return;
    }
    case StmtKind::SetLocal: {
      const LocalVar& l = find_local(s.name);
      const std::string c = l.cname;
      const Prec p = l.prec;
      line(fmt::format("{} = {};", c, convert(expr(s.value), s.value->prec, p)));
      return;
    }
    case StmtKind::If: {
      const std::string c = expr(s.value);
      open(fmt::format("if ({} != 0)", c));
      push_scope();
      stmt_list(s.body);
      pop_scope();
      close();
      return;
    }
    case StmtKind::Comment:
    case StmtKind::Noop:
      return;
  }
}

// ---- loop analysis ------------------------------------------------------------------------------

std::vector<const Stmt*> loop_chain(const Stmt& s) {
  std::vector<const Stmt*> out;
  const Stmt* cur = &s;
  while (cur && cur->kind == StmtKind::For && !cur->is_dead_loop()) {
    out.push_back(cur);
    if (cur->body.size() != 1 || !cur->body[0]) break;
    cur = cur->body[0].get();
  }
  return out;
}

std::int64_t trip_count(const std::vector<const Stmt*>& loops) {
  std::int64_t n = 1;
  for (const Stmt* l : loops) n = saturating_mul(n, l->to < l->from ? 0 : l->to - l->from + 1);
  return n;
}

namespace {

struct NodeAccess {
  std::string node;
  std::vector<Index> indices;
  bool zero = false;
  bool write = false;
};

struct SafetyWalk {
  const ProgramPlan& plan;
  std::vector<NodeAccess> accesses;
  std::set<std::string> virtual_reads;
  std::vector<std::set<std::string>> scopes{{}};
  bool writes_outer_local = false;

  void expr(const ExprP& e) {
    if (!e) return;
    if (e->kind == ExprKind::Get) {
      if (plan.is_virtual(e->name))
        virtual_reads.insert(e->name);
      else
        accesses.push_back({e->name, e->indices, false, false});
    }
    for (const auto& a : e->args) expr(a);
  }
  bool declared_inside(const std::string& name) const {
    for (const auto& s : scopes)
      if (s.count(name)) return true;
    return false;
  }
  void list(const std::vector<StmtP>& body) {
    scopes.emplace_back();
    for (const auto& b : body)
      if (b) stmt(*b);
    scopes.pop_back();
  }
  void stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Seq:
      case StmtKind::For:
        list(s.body);
        return;
      case StmtKind::Scan:
        for (const auto& c : s.carried) expr(c.init);
        scopes.emplace_back();
        for (const auto& c : s.carried) {
          scopes.back().insert(c.prev);
          scopes.back().insert(c.next);
        }
        list(s.body);
        scopes.pop_back();
        return;
      case StmtKind::If:
        expr(s.value);
        list(s.body);
        return;
      case StmtKind::Set:
        expr(s.value);
        accesses.push_back({s.name, s.indices, false, true});
        return;
      case StmtKind::Zero:
        accesses.push_back({s.name, {}, true, true});
        return;
      case StmtKind::DeclareLocal:
        scopes.back().insert(s.name);
        return;
      case StmtKind::SetLocal:
        expr(s.value);
        if (!declared_inside(s.name)) writes_outer_local = true;
        return;
      case StmtKind::Comment:
      case StmtKind::Noop:
        return;
    }
  }
};

}  // namespace

bool parallel_safe(const ProgramPlan& plan, const Stmt& loop) {
  if (loop.kind != StmtKind::For || loop.is_dead_loop()) return false;
  SafetyWalk w{plan, {}, {}, {{}}, false};
  w.list(loop.body);
  if (w.writes_outer_local) return false;
  std::set<std::string> written;
  for (const auto& a : w.accesses)
    if (a.write) written.insert(a.node);
  for (const auto& v : w.virtual_reads)
    for (const auto& n : plan.replay_reads(v))
      if (written.count(n)) return false;
  for (const auto& node : written) {
    std::set<std::size_t> axes;
    bool first = true;
    for (const auto& a : w.accesses) {
      if (a.node != node) continue;
      if (a.zero) return false;
      std::set<std::size_t> mine;
      for (std::size_t k = 0; k < a.indices.size(); ++k) {
        const Index c = a.indices[k].canonical();
        if (c.is_plain_iterator() && c.terms[0].sym == loop.sym) mine.insert(k);
      }
      if (first) {
        axes = mine;
        first = false;
      } else {
        std::set<std::size_t> both;
        for (auto k : axes)
          if (mine.count(k)) both.insert(k);
        axes = both;
      }
      if (axes.empty()) return false;
    }
  }
  return true;
}

void Emitter::reduce_cell_in_scalar(const NestShape& shape) {
  const Stmt& set = *shape.nest.set;
  const Node& w = plan_.node(set.name);
  const std::string a = fresh("a");
  const Aff off = offset(w, set.indices);
  line(fmt::format("{} {} = {};", ctype(w.prec, dialect_), a, load(w, off)));
  for (const Stmt* r : shape.reduced) {
    open(loop_header(*r));
    push_scope();
  }
  substitute(w.name, a);
  line(fmt::format("{} = {};", a, convert(expr(set.value), set.value->prec, w.prec)));
  unsubstitute(w.name);
  for (auto it = shape.reduced.rbegin(); it != shape.reduced.rend(); ++it) {
    pop_scope();
    close();
    unbind_sym((*it)->sym);
  }
  line(store(w, off, a));
}

void Emitter::walk_blocks(const Stmt& seq, const std::function<void(const Stmt&)>& each) {
  for (const auto& s : seq.body) {
    if (!s) continue;
    if (s->kind != StmtKind::Seq) {
      each(*s);
      continue;
    }
    open("");
    push_scope();
    walk_blocks(*s, each);
    pop_scope();
    close();
  }
}

}  // namespace fp::codegen
