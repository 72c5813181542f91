// RapidCheck properties of the interpreter: (1) permuting the loops of a pointwise nest never
// changes a bit of the output; (2) the bytecode interpreter agrees bit for bit with a deliberately
// naive tree-walking evaluator of the same semantics (names looked up in maps, every operand
// converted through round_to, every op through core/numerics.h's apply_*) on random routines.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/numerics.h"
#include "tensor_expect.h"

namespace fp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- the naive evaluator ----------------------------------------------------------------------------

class NaiveEvaluator {
 public:
  explicit NaiveEvaluator(const Routine& r) : r_(r) {}

  TensorMap run(const TensorMap& inputs) {
    for (const auto& n : r_.nodes) {
      auto& cells = mem_[n.name];
      cells.assign(static_cast<std::size_t>(n.cell_count()), 0.0);
      if (n.is_input) cells = inputs.at(n.name).data;
    }
    exec_list(r_.body->body);
    TensorMap out;
    for (const auto& n : r_.nodes)
      if (n.is_output) out[n.name] = Tensor{n.prec, n.dims, mem_[n.name]};
    return out;
  }

 private:
  struct Local {
    std::string name;
    Prec prec;
    double value;
  };

  std::int64_t index_value(const Index& idx) const {
    std::int64_t v = idx.offset;
    for (const auto& t : idx.terms) {
      auto it = std::find_if(syms_.rbegin(), syms_.rend(), [&](const auto& s) { return s.first == t.sym; });
      if (it == syms_.rend()) throw std::runtime_error("naive evaluator: unknown symbol " + t.sym);
      v += t.coef * it->second;
    }
    return v;
  }

  std::size_t cell(const std::string& node, const std::vector<Index>& idx) const {
    const Node* n = r_.find_node(node);
    std::int64_t flat = 0;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const std::int64_t v = index_value(idx[k]);
      if (v < 0 || v >= n->dims[k]) throw std::runtime_error("naive evaluator: out of bounds");
      flat = flat * n->dims[k] + v;
    }
    return static_cast<std::size_t>(flat);
  }

  Local& local(const std::string& name) {
    for (auto it = locals_.rbegin(); it != locals_.rend(); ++it)
      if (it->name == name) return *it;
    throw std::runtime_error("naive evaluator: unknown local " + name);
  }

  double eval(const Expr& e) {
    auto arg = [&](int k) { return round_to(e.prec, eval(*e.args[static_cast<std::size_t>(k)])); };
    switch (e.kind) {
      case ExprKind::Get:
        return mem_.at(e.name)[cell(e.name, e.indices)];
      case ExprKind::GetLocal:
        return local(e.name).value;
      case ExprKind::Const:
        return round_to(e.prec, e.value);
      case ExprKind::EmbedIndex:
        return round_to(e.prec, static_cast<double>(index_value(e.indices[0])));
      case ExprKind::Unary:
        return apply_unop(e.unop(), e.prec, arg(0));
      case ExprKind::Binary:
        return apply_binop(e.binop(), e.prec, arg(0), arg(1));
      case ExprKind::Ternary:
        if (e.ternop() == TernOp::Where)
          return apply_ternop(TernOp::Where, e.prec, eval(*e.args[0]), arg(1), arg(2));
        return apply_ternop(e.ternop(), e.prec, arg(0), arg(1), arg(2));
    }
    throw std::runtime_error("naive evaluator: bad expression");
  }

  void exec_list(const std::vector<StmtP>& body) {
    const std::size_t nl = locals_.size();
    for (const auto& s : body) exec(*s);
    locals_.resize(nl);
  }

  void exec(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Seq:
        exec_list(s.body);
        return;
      case StmtKind::For:
        for (std::int64_t i = s.from; i <= s.to; ++i) {
          syms_.emplace_back(s.sym, i);
          exec_list(s.body);
          syms_.pop_back();
        }
        return;
      case StmtKind::Scan: {
        if (s.to < s.from) return;
        std::vector<double> state;
        for (const auto& c : s.carried) state.push_back(round_to(c.prec, eval(*c.init)));
        for (std::int64_t k = 0; k <= s.to - s.from; ++k) {
          const std::int64_t t = s.dir == ScanDir::Forward ? s.from + k : s.to - k;
          const std::size_t nl = locals_.size();
          for (std::size_t c = 0; c < s.carried.size(); ++c) {
            locals_.push_back(Local{s.carried[c].prev, s.carried[c].prec, state[c]});
            locals_.push_back(Local{s.carried[c].next, s.carried[c].prec, 0.0});
          }
          syms_.emplace_back(s.sym, t);
          exec_list(s.body);
          syms_.pop_back();
          for (std::size_t c = 0; c < s.carried.size(); ++c) state[c] = local(s.carried[c].next).value;
          locals_.resize(nl);
        }
        return;
      }
      case StmtKind::Zero:
        std::fill(mem_[s.name].begin(), mem_[s.name].end(), 0.0);
        return;
      case StmtKind::Set: {
        const double v = round_to(r_.find_node(s.name)->prec, eval(*s.value));
        mem_[s.name][cell(s.name, s.indices)] = v;
        return;
      }
      case StmtKind::DeclareLocal:
        locals_.push_back(Local{s.name, s.prec, 0.0});
        return;
      case StmtKind::SetLocal: {
        Local& l = local(s.name);
        l.value = round_to(l.prec, eval(*s.value));
        return;
      }
      case StmtKind::If:
        if (eval(*s.value) != 0.0) exec_list(s.body);
        return;
      case StmtKind::Comment:
      case StmtKind::Noop:
        return;
    }
  }

  const Routine& r_;
  std::map<std::string, std::vector<double>> mem_;
  std::vector<Local> locals_;
  std::vector<std::pair<std::string, std::int64_t>> syms_;
};

// ---- random routines -----------------------------------------------------------------------------

Prec any_prec() {
  return *rc::gen::element(Prec::F64, Prec::F32, Prec::F16, Prec::BF16, Prec::I32);
}

// A random permutation (Fisher–Yates driven by RapidCheck, so it shrinks).
std::vector<std::size_t> permutation(std::size_t n) {
  std::vector<std::size_t> p(n);
  for (std::size_t k = 0; k < n; ++k) p[k] = k;
  for (std::size_t k = n; k > 1; --k) std::swap(p[k - 1], p[*rc::gen::inRange<std::size_t>(0, k)]);
  return p;
}

// A value representable at p, special values included.
double random_value(Prec p) {
  if (p == Prec::I32) {
    return *rc::gen::oneOf(rc::gen::just(0.0), rc::gen::just(-2147483648.0), rc::gen::just(2147483647.0),
                           rc::gen::map(rc::gen::inRange(-20, 21), [](int v) { return double(v); }));
  }
  const double v = *rc::gen::oneOf(
      rc::gen::element(0.0, -0.0, 1.0, -1.0, 0.5, kInf, -kInf, kNaN, 65504.0, 70000.0, 1e-7, 1e30, -3e-40,
                       700.0, 1.0 / 3.0, -0.7, 2049.0, 0x1p-20),
      rc::gen::map(rc::gen::inRange(-4000, 4001), [](int k) { return k / 256.0 + k * 1e-5; }));
  return round_to(p, v);
}

struct RandomRoutine {
  std::vector<Node> nodes;
  std::vector<std::pair<std::string, std::int64_t>> loops;  // in scope: symbol, trip count (0..n-1)
  std::vector<std::pair<std::string, Prec>> locals;         // in scope
  int fresh = 0;

  std::string name(const char* stem) { return stem + std::to_string(fresh++); }

  // An index into an axis of extent `extent` that stays in bounds over the loop box.
  Index index_for(std::int64_t extent) {
    std::vector<Index> options = {Index::fixed(*rc::gen::inRange<std::int64_t>(0, extent))};
    for (const auto& [sym, trips] : loops) {
      if (trips > extent) continue;
      options.push_back(Index::iter(sym));
      options.push_back(Index{{{-1, sym}}, extent - 1});  // reversed
      if (2 * (trips - 1) < extent) options.push_back(Index{{{2, sym}}, 0});
    }
    return *rc::gen::elementOf(options);
  }

  ExprP read(const Node& n) {
    std::vector<Index> idx;
    for (auto d : n.dims) idx.push_back(index_for(d));
    return get(n.name, std::move(idx), n.prec);
  }

  ExprP leaf() {
    const int k = *rc::gen::inRange(0, 4);
    if (k == 0 || (k == 2 && loops.empty()) || (k == 3 && locals.empty()))
      return read(*rc::gen::elementOf(nodes));
    if (k == 1) {
      const Prec p = any_prec();
      return constant(random_value(p), p);
    }
    if (k == 2) {
      const auto& [sym, trips] = *rc::gen::elementOf(loops);
      return embed_index(Index{{{*rc::gen::inRange(-2, 3), sym}}, *rc::gen::inRange(-3, 4)}, any_prec());
    }
    const auto& [nm, p] = *rc::gen::elementOf(locals);
    return get_local(nm, p);
  }

  ExprP expr(int depth) {
    if (depth <= 0 || *rc::gen::inRange(0, 4) == 0) return leaf();
    const Prec p = any_prec();
    const int kind = *rc::gen::inRange(0, 3);
    if (kind == 0) {
      const UnOp op = p == Prec::I32
                          ? *rc::gen::element(UnOp::Neg, UnOp::Abs, UnOp::Cast)
                          : *rc::gen::element(UnOp::Neg, UnOp::Exp, UnOp::Sqrt, UnOp::Abs, UnOp::Cast);
      return unary(op, expr(depth - 1), p);
    }
    if (kind == 1) {
      const BinOp op = *rc::gen::element(BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Max,
                                         BinOp::Min, BinOp::Pow, BinOp::Eq, BinOp::Lt);
      return binary(op, expr(depth - 1), expr(depth - 1), p);
    }
    const TernOp op = p == Prec::I32 ? TernOp::Where : *rc::gen::element(TernOp::Where, TernOp::Fma);
    return ternary(op, expr(depth - 1), expr(depth - 1), expr(depth - 1), p);
  }

  // for each axis of `n` (in a random order) { inner(indices) }
  StmtP nest(const Node& n, const std::function<std::vector<StmtP>(const std::vector<Index>&)>& inner) {
    std::vector<std::string> syms;
    for (std::size_t k = 0; k < n.dims.size(); ++k) syms.push_back(name("i"));
    const std::vector<std::size_t> order = permutation(n.dims.size());
    const std::size_t nloops = loops.size();
    for (std::size_t k : order) loops.emplace_back(syms[k], n.dims[k]);
    std::vector<Index> idx;
    for (const auto& s : syms) idx.push_back(Index::iter(s));
    std::vector<StmtP> body = inner(idx);
    for (std::size_t k = order.size(); k-- > 0;) {
      body = {for_loop(syms[order[k]], 0, n.dims[order[k]] - 1, std::move(body))};
    }
    loops.resize(nloops);
    return seq(std::move(body));
  }

  // The innermost body of a pointwise nest: sometimes through a local declared in the body (fresh,
  // +0, on every iteration) that is only assigned under a condition.
  std::vector<StmtP> pointwise_body(const Node& o, const std::vector<Index>& idx) {
    if (*rc::gen::inRange(0, 3) != 0) return {set(o.name, idx, expr(3))};
    const Prec p = any_prec();
    const std::string l = name("l");
    std::vector<StmtP> body = {declare_local(l, p), if_(expr(1), {set_local(l, expr(2))})};
    locals.emplace_back(l, p);
    body.push_back(set(o.name, idx, binary(BinOp::Add, get_local(l, p), expr(1), any_prec())));
    locals.pop_back();
    return body;
  }

  StmtP statement(const Node& o, int depth) {
    switch (*rc::gen::inRange(0, 5)) {
      case 0:  // pointwise
        return nest(o, [&](const std::vector<Index>& idx) { return pointwise_body(o, idx); });
      case 1: {  // reduction over an extra axis
        const BinOp op = *rc::gen::element(BinOp::Add, BinOp::Max, BinOp::Min, BinOp::Mul);
        const std::int64_t trips = *rc::gen::inRange(1, 5);
        return seq({zero(o.name), nest(o, [&](const std::vector<Index>& idx) {
                      const std::string k = name("k");
                      loops.emplace_back(k, trips);
                      auto acc = binary(op, get(o.name, idx, o.prec), expr(2), o.prec);
                      loops.pop_back();
                      return std::vector<StmtP>{for_loop(k, 0, trips - 1, {set(o.name, idx, acc)})};
                    })});
      }
      case 2: {  // scan along the last axis of o
        return nest(o, [&](const std::vector<Index>& idx) {
          // The nest's last-axis loop is replaced by a scan over the same symbol's range.
          std::vector<Index> sidx = idx;
          const std::string t = name("t");
          sidx.back() = Index::iter(t);
          std::vector<Carried> carried;
          const int n = *rc::gen::inRange(1, 3);
          for (int c = 0; c < n; ++c) {
            const Prec p = any_prec();
            carried.push_back(Carried{name("p"), name("n"), p, expr(1)});
          }
          loops.emplace_back(t, o.dims.back());
          const std::size_t nl = locals.size();
          for (const auto& c : carried) locals.emplace_back(c.prev, c.prec);
          std::vector<StmtP> body;
          // Each next reads the prevs (also those whose next is already written: rotation must be
          // simultaneous); the stored value combines every next, so each carried value is observed.
          ExprP stored;
          for (const auto& c : carried) {
            const auto& [prev, prev_prec] = *rc::gen::elementOf(locals);
            const BinOp op = *rc::gen::element(BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Max);
            body.push_back(set_local(c.next, binary(op, get_local(prev, prev_prec), expr(2), c.prec)));
            locals.emplace_back(c.next, c.prec);  // readable after its write
            stored = stored ? binary(BinOp::Add, stored, get_local(c.next, c.prec), o.prec)
                            : get_local(c.next, c.prec);
          }
          body.push_back(set(o.name, sidx, *rc::gen::element(stored, expr(2))));
          locals.resize(nl);
          loops.pop_back();
          const ScanDir dir = *rc::gen::element(ScanDir::Forward, ScanDir::Backward);
          return std::vector<StmtP>{scan_loop(t, 0, o.dims.back() - 1, dir, carried, std::move(body))};
        });
      }
      case 3: {  // if with a store at a fixed cell
        std::vector<Index> idx;
        for (auto d : o.dims) idx.push_back(Index::fixed(*rc::gen::inRange<std::int64_t>(0, d)));
        std::vector<StmtP> body = {set(o.name, idx, expr(2))};
        if (depth > 0) body.push_back(statement(o, depth - 1));
        return if_(expr(2), std::move(body));
      }
      default: {  // a local, then a pointwise nest reading it
        const Prec p = any_prec();
        const std::string l = name("l");
        std::vector<StmtP> s = {declare_local(l, p)};
        if (*rc::gen::arbitrary<bool>()) s.push_back(set_local(l, expr(2)));
        locals.emplace_back(l, p);
        s.push_back(nest(o, [&](const std::vector<Index>& idx) { return pointwise_body(o, idx); }));
        locals.pop_back();
        return seq(std::move(s));
      }
    }
  }

  // One output per statement, so later statements rarely hide what earlier ones computed.
  Routine build() {
    const int nin = *rc::gen::inRange(1, 4), nout = *rc::gen::inRange(1, 4);
    for (int i = 0; i < nin + nout; ++i) {
      Node n;
      n.name = i < nin ? name("in") : name("out");
      n.prec = any_prec();
      const int rank = *rc::gen::inRange(1, 4);
      for (int k = 0; k < rank; ++k) n.dims.push_back(*rc::gen::inRange<std::int64_t>(1, 5));
      n.is_input = i < nin;
      n.is_output = i >= nin;
      nodes.push_back(n);
    }
    std::vector<StmtP> body;
    for (int i = nin; i < nin + nout; ++i) body.push_back(statement(nodes[static_cast<std::size_t>(i)], 1));
    Routine r;
    r.name = "random";
    r.nodes = nodes;
    r.body = seq(std::move(body));
    return r;
  }
};

TensorMap random_inputs_for(const Routine& r) {
  TensorMap in;
  for (const Node* n : r.inputs()) {
    Tensor t = Tensor::zeros(n->prec, n->dims);
    for (auto& v : t.data) v = random_value(n->prec);
    in[n->name] = t;
  }
  return in;
}

// ---- properties --------------------------------------------------------------------------------------

void check_against_naive(const Routine& r, const TensorMap& in) {
  const TensorMap fast = interpret(r, in);
  const TensorMap naive = NaiveEvaluator(r).run(in);
  if (auto same = testing::bitwise_equal(naive, fast); !same)
    RC_FAIL(std::string("naive vs interpreter: ") + same.message());
  for (const auto& [name, t] : fast)
    for (double v : t.data) RC_ASSERT(representable(t.prec, v));
}

RC_GTEST_PROP(InterpreterProperty, AgreesWithNaiveEvaluator, ()) {
  // Several routines per case: each is small (cheap to shrink), together they cover more.
  const int n = *rc::gen::inRange(1, 5);
  for (int k = 0; k < n; ++k) {
    RandomRoutine gen;
    const Routine r = gen.build();
    check_against_naive(r, random_inputs_for(r));
  }
}

RC_GTEST_PROP(InterpreterProperty, PointwiseLoopOrderIsUnobservable, ()) {
  RandomRoutine gen;
  // Inputs and one output; the output is written by a single pointwise nest.
  const int nin = *rc::gen::inRange(1, 4);
  for (int i = 0; i <= nin; ++i) {
    Node n;
    n.name = i < nin ? gen.name("in") : "out";
    n.prec = any_prec();
    const int rank = *rc::gen::inRange(1, 4);
    for (int k = 0; k < rank; ++k) n.dims.push_back(*rc::gen::inRange<std::int64_t>(1, 5));
    n.is_input = i < nin;
    n.is_output = i == nin;
    gen.nodes.push_back(n);
  }
  const Node out = gen.nodes.back();
  gen.nodes.pop_back();  // reads come from inputs only
  std::vector<std::string> syms;
  for (std::size_t k = 0; k < out.dims.size(); ++k) {
    syms.push_back(gen.name("i"));
    gen.loops.emplace_back(syms.back(), out.dims[k]);
  }
  std::vector<Index> idx;
  for (const auto& s : syms) idx.push_back(Index::iter(s));
  const ExprP value = gen.expr(4);
  gen.nodes.push_back(out);

  auto build = [&](const std::vector<std::size_t>& order) {
    std::vector<StmtP> body = {set("out", idx, value)};
    for (std::size_t k = order.size(); k-- > 0;)
      body = {for_loop(syms[order[k]], 0, out.dims[order[k]] - 1, body)};
    Routine r;
    r.name = "pointwise";
    r.nodes = gen.nodes;
    r.body = seq(std::move(body));
    return r;
  };
  std::vector<std::size_t> order(out.dims.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  const std::vector<std::size_t> permuted = permutation(order.size());
  const Routine a = build(order), b = build(permuted);
  const TensorMap in = random_inputs_for(a);
  const Tensor ta = interpret(a, in).at("out"), tb = interpret(b, in).at("out");
  RC_ASSERT(ta.data.size() == tb.data.size());
  RC_ASSERT(std::memcmp(ta.data.data(), tb.data.data(), ta.data.size() * sizeof(double)) == 0);
}

}  // namespace
}  // namespace fp
