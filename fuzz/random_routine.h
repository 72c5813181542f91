#pragma once
// A RapidCheck generator of small random well-formed routines, for properties over the whole IR
// (text round trip now; interpreter, checker and rewrites later).
//
// What a generated routine satisfies (so any test may rely on it):
//  - names: every routine, node, local, loop symbol and attr name is a valid identifier that is
//    not a keyword (fp::is_valid_text_name), and all of them are pairwise distinct;
//  - nodes: 1..max_nodes, rank 1..max_rank, extents 1..max_extent, every precision, every memory
//    mode (unless random_modes is off), random input/output flags; inputs are never written;
//  - statements: nested for/scan/if blocks up to max_block_depth, locals, node and local stores,
//    zero, comment (with quotes, backslashes, control characters, UTF-8 and invalid bytes),
//    noop; the body is a Seq with no nested Seq;
//  - scopes: a local is read or written only where declared; a loop symbol appears in an index
//    only inside its loop; every index is canonical (Index::canonical) and every node access is
//    in bounds for every iteration;
//  - scans: non-empty range; prev/next names distinct; each `next` written exactly once, by a
//    top-level statement of the body, and read only after it; `prev` never written; `init` reads
//    no carried local and does not mention the scan symbol;
//  - expressions: every kind and every op, each op at a random precision, exp/sqrt/fma only at
//    float precisions; constants include -0, ±inf, nan, subnormals, the largest finite values
//    and arbitrary bit patterns (unless special_constants is off); an i32 constant is an integer
//    in the i32 range.
//  - for loops may be dead (to < from) when allow_dead_loops is on.

#include <rapidcheck.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/ir.h"
#include "core/text_parser.h"

namespace fp::fuzz {

struct RandomRoutineOptions {
  int max_nodes = 4;
  int max_rank = 3;
  std::int64_t max_extent = 4;
  int max_block_depth = 3;  // nesting of for / scan / if
  int max_block_stmts = 4;  // statements per block
  int max_expr_depth = 3;   // nesting of operations
  bool special_constants = true;
  bool random_modes = true;
  bool allow_dead_loops = true;
};

namespace detail {

class RoutineBuilder {
 public:
  explicit RoutineBuilder(const RandomRoutineOptions& opts) : o_(opts) {}

  Routine build() {
    r_.name = fresh_name();
    int attrs = pick(0, 2);
    for (int i = 0; i < attrs; ++i) r_.attrs[fresh_name()] = attr_value();
    int nodes = pick(1, o_.max_nodes);
    for (int i = 0; i < nodes; ++i) r_.nodes.push_back(node());
    r_.body = seq(block(0));
    return std::move(r_);
  }

 private:
  struct LoopSym {
    std::string name;
    std::int64_t lo, hi;  // values the symbol takes ([lo, lo] for a dead loop: never runs)
  };
  struct LocalVar {
    std::string name;
    Prec prec;
    bool readable;
    bool writable;
  };

  // ---- random choices
  int pick(int lo, int hi) { return *rc::gen::inRange(lo, hi + 1); }
  bool chance(int percent) { return pick(0, 99) < percent; }
  template <typename T>
  T one_of(const std::vector<T>& xs) {
    return xs[static_cast<std::size_t>(pick(0, static_cast<int>(xs.size()) - 1))];
  }
  Prec prec() { return one_of<Prec>({Prec::F64, Prec::F32, Prec::F16, Prec::BF16, Prec::I32}); }

  // A random identifier, made unique (and not a keyword) with a numeric suffix when needed.
  std::string fresh_name() {
    static const std::string first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    static const std::string rest = first + "0123456789";
    std::string name(1, first[static_cast<std::size_t>(pick(0, static_cast<int>(first.size()) - 1))]);
    int len = pick(0, 5);
    for (int i = 0; i < len; ++i)
      name += rest[static_cast<std::size_t>(pick(0, static_cast<int>(rest.size()) - 1))];
    std::string candidate = name;
    for (int k = 0; !is_valid_text_name(candidate) || used_.count(candidate); ++k)
      candidate = name + "_" + std::to_string(k);
    used_.insert(candidate);
    return candidate;
  }

  std::int64_t attr_value() {
    if (chance(30))
      return one_of<std::int64_t>(
          {0, -1, 128, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()});
    return pick(-1000, 1000);
  }

  Node node() {
    Node n;
    n.name = fresh_name();
    int rank = pick(1, o_.max_rank);
    for (int i = 0; i < rank; ++i) n.dims.push_back(pick(1, static_cast<int>(o_.max_extent)));
    n.prec = prec();
    n.mode =
        o_.random_modes
            ? one_of<MemMode>({MemMode::Virtual, MemMode::Local, MemMode::Materialized, MemMode::Requested})
            : MemMode::Materialized;
    n.is_input = chance(30);
    n.is_output = chance(30);
    return n;
  }

  // ---- indices

  // Σ coef·sym + offset with every value in [0, extent - 1] over the symbols' ranges.
  Index in_bounds_index(std::int64_t extent) {
    Index idx;
    std::int64_t lo = 0, hi = 0;
    int terms = syms_.empty() ? 0 : pick(0, 2);
    for (int k = 0; k < terms; ++k) {
      const LoopSym& s = syms_[static_cast<std::size_t>(pick(0, static_cast<int>(syms_.size()) - 1))];
      if (idx.mentions(s.name)) continue;
      std::int64_t coef = one_of<std::int64_t>({1, 1, 1, -1, 2, -2, 3});
      std::int64_t a = coef * s.lo, b = coef * s.hi;
      std::int64_t cmin = std::min(a, b), cmax = std::max(a, b);
      if ((hi + cmax) - (lo + cmin) > extent - 1) continue;
      idx.terms.push_back(Index::Term{coef, s.name});
      lo += cmin;
      hi += cmax;
    }
    idx.offset = pick(static_cast<int>(-lo), static_cast<int>(extent - 1 - hi));
    return idx;
  }

  std::vector<Index> in_bounds_indices(const Node& n) {
    std::vector<Index> out;
    for (auto d : n.dims) out.push_back(in_bounds_index(d));
    return out;
  }

  // ---- expressions

  double constant_value(Prec p) {
    if (p == Prec::I32) {
      if (chance(30))
        return one_of<double>({0, 1, -1, 7, -128, std::numeric_limits<std::int32_t>::min(),
                               std::numeric_limits<std::int32_t>::max()});
      return pick(-1000, 1000);
    }
    if (!o_.special_constants) return pick(-400, 400) / 8.0;
    switch (pick(0, 3)) {
      case 0: {
        using L = std::numeric_limits<double>;
        return one_of<double>({0.0, -0.0, L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(),
                               -L::denorm_min(), L::min(), 2.2250738585072009e-308, L::max(), -L::max(), 0.1,
                               1.0 / 3.0, 1e300, -1e-300, 65504.0, 5.9604644775390625e-8});
      }
      case 1:
        return std::bit_cast<double>(*rc::gen::arbitrary<std::uint64_t>());
      default:
        return pick(-400, 400) / 8.0;
    }
  }

  ExprP leaf() {
    std::vector<const LocalVar*> readable;
    for (const auto& l : locals_)
      if (l.readable) readable.push_back(&l);
    switch (pick(0, 3)) {
      case 0: {
        const Node& n = r_.nodes[static_cast<std::size_t>(pick(0, static_cast<int>(r_.nodes.size()) - 1))];
        return get(n.name, in_bounds_indices(n), n.prec);
      }
      case 1:
        if (!readable.empty()) {
          const LocalVar* l =
              readable[static_cast<std::size_t>(pick(0, static_cast<int>(readable.size()) - 1))];
          return get_local(l->name, l->prec);
        }
        break;
      case 2:
        return embed_index(in_bounds_index(pick(1, 64)), prec());
      default:
        break;
    }
    Prec p = prec();
    return constant(constant_value(p), p);
  }

  ExprP expr(int depth) {
    if (depth >= o_.max_expr_depth || chance(40)) return leaf();
    Prec p = prec();
    switch (pick(0, 2)) {
      case 0: {
        std::vector<UnOp> ops = {UnOp::Neg, UnOp::Abs, UnOp::Cast};
        if (is_float(p)) ops.insert(ops.end(), {UnOp::Exp, UnOp::Sqrt});
        return unary(one_of(ops), expr(depth + 1), p);
      }
      case 1: {
        BinOp op = one_of<BinOp>({BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Max, BinOp::Min,
                                  BinOp::Pow, BinOp::Eq, BinOp::Lt});
        ExprP a = expr(depth + 1);
        return binary(op, a, expr(depth + 1), p);
      }
      default: {
        TernOp op = is_float(p) && chance(50) ? TernOp::Fma : TernOp::Where;
        ExprP a = expr(depth + 1);
        ExprP b = expr(depth + 1);
        return ternary(op, a, b, expr(depth + 1), p);
      }
    }
  }

  // ---- statements

  std::string comment_text() {
    static const std::vector<std::string> pieces = {
        "a", "Z", " ",     "\"", "\\", "\n", "\t", "é", "€", "\x01", "\x7f", "\xff", std::string(1, '\0'),
        "#", "{", "x := 1"};
    std::string out;
    int n = pick(0, 6);
    for (int i = 0; i < n; ++i) out += one_of(pieces);
    return out;
  }

  const Node* writable_node() {
    std::vector<const Node*> xs;
    for (const auto& n : r_.nodes)
      if (!n.is_input) xs.push_back(&n);
    if (xs.empty()) return nullptr;
    return xs[static_cast<std::size_t>(pick(0, static_cast<int>(xs.size()) - 1))];
  }

  const LocalVar* writable_local() {
    std::vector<const LocalVar*> xs;
    for (const auto& l : locals_)
      if (l.writable) xs.push_back(&l);
    if (xs.empty()) return nullptr;
    return xs[static_cast<std::size_t>(pick(0, static_cast<int>(xs.size()) - 1))];
  }

  // Statements of one block; locals declared in it go out of scope at its end.
  std::vector<StmtP> block(int depth) {
    std::size_t mark = locals_.size();
    std::vector<StmtP> out;
    int n = pick(0, o_.max_block_stmts);
    for (int i = 0; i < n; ++i) out.push_back(stmt(depth));
    locals_.resize(mark);
    return out;
  }

  StmtP stmt(int depth) {
    bool can_nest = depth < o_.max_block_depth;
    switch (pick(0, 11)) {
      case 0:
      case 1:
        if (const Node* n = writable_node()) return set(n->name, in_bounds_indices(*n), expr(0));
        return noop();
      case 2:
        if (const LocalVar* l = writable_local()) return set_local(l->name, expr(0));
        return comment(comment_text());
      case 3: {
        std::string name = fresh_name();
        Prec p = prec();
        locals_.push_back(LocalVar{name, p, true, true});
        return declare_local(name, p);
      }
      case 4:
        if (const Node* n = writable_node()) return zero(n->name);
        return noop();
      case 5:
      case 6:
        if (can_nest) return for_stmt(depth);
        return noop();
      case 7:
        if (can_nest) return scan_stmt(depth);
        return noop();
      case 8:
        if (can_nest) return if_(expr(0), block(depth + 1));
        return noop();
      case 9:
        return comment(comment_text());
      default:
        return noop();
    }
  }

  StmtP for_stmt(int depth) {
    std::string sym = fresh_name();
    std::int64_t from = pick(-2, 3);
    bool dead = o_.allow_dead_loops && chance(10);
    std::int64_t to = dead ? from - pick(1, 2) : from + pick(0, 3);
    syms_.push_back(LoopSym{sym, from, dead ? from : to});
    auto body = block(depth + 1);
    syms_.pop_back();
    return for_loop(sym, from, to, std::move(body));
  }

  StmtP scan_stmt(int depth) {
    std::string sym = fresh_name();
    std::int64_t from = pick(-2, 3);
    std::int64_t to = from + pick(0, 3);
    ScanDir dir = chance(50) ? ScanDir::Forward : ScanDir::Backward;
    std::vector<Carried> carried;
    int n = pick(0, 2);
    for (int i = 0; i < n; ++i) {
      Carried c;
      c.prev = fresh_name();
      c.next = fresh_name();
      c.prec = prec();
      c.init = expr(0);  // carried locals and the scan symbol are not in scope yet
      carried.push_back(std::move(c));
    }
    syms_.push_back(LoopSym{sym, from, to});
    std::size_t mark = locals_.size();
    for (const auto& c : carried) {
      locals_.push_back(LocalVar{c.prev, c.prec, true, false});
      locals_.push_back(LocalVar{c.next, c.prec, false, false});
    }
    std::vector<StmtP> body;
    int before = pick(0, 2);
    for (int i = 0; i < before; ++i) body.push_back(stmt(depth + 1));
    for (std::size_t i = 0; i < carried.size(); ++i) {
      body.push_back(set_local(carried[i].next, expr(0)));
      locals_[mark + 2 * i + 1].readable = true;
    }
    int after = pick(0, 2);
    for (int i = 0; i < after; ++i) body.push_back(stmt(depth + 1));
    locals_.resize(mark);
    syms_.pop_back();
    return scan_loop(sym, from, to, dir, std::move(carried), std::move(body));
  }

  RandomRoutineOptions o_;
  Routine r_;
  std::set<std::string> used_;
  std::vector<LoopSym> syms_;
  std::vector<LocalVar> locals_;
};

}  // namespace detail

inline rc::Gen<Routine> gen_routine(RandomRoutineOptions opts = {}) {
  return rc::gen::exec([opts] { return detail::RoutineBuilder(opts).build(); });
}

// One routine drawn deterministically from seed, outside any property (e.g. for fuzz corpora).
inline Routine sample_routine(std::uint64_t seed, RandomRoutineOptions opts = {}) {
  return gen_routine(opts)(rc::Random(seed), rc::kNominalSize).value();
}

}  // namespace fp::fuzz
