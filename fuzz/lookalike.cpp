// Look-alikes of a lowered attention program (lookalike.h).
#include "fuzz/lookalike.h"

#include <functional>
#include <limits>
#include <memory>
#include <utility>

#include "core/diagnostic.h"
#include "core/random_inputs.h"

namespace fp::fuzz {

namespace {

struct Loop {
  std::string sym;
  std::int64_t from, to;
};

// A top-level nest: perfectly nested for loops around one Set.
struct Nest {
  std::vector<Loop> loops;
  StmtP set;
};

std::optional<Nest> view(const StmtP& s) {
  Nest n;
  const Stmt* cur = s.get();
  StmtP inner = s;
  while (cur->kind == StmtKind::For) {
    if (cur->body.size() != 1) return std::nullopt;
    n.loops.push_back({cur->sym, cur->from, cur->to});
    inner = cur->body[0];
    cur = inner.get();
  }
  if (cur->kind != StmtKind::Set) return std::nullopt;
  n.set = inner;
  return n;
}

StmtP nest(const std::vector<Loop>& loops, StmtP inner) {
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    inner = for_loop(it->sym, it->from, it->to, {inner});
  return inner;
}

// The position in the body of the nth nest writing `node`, or -1.
int find_nest(const Routine& r, const std::string& node, int nth = 0) {
  int seen = 0;
  for (std::size_t i = 0; i < r.body->body.size(); ++i) {
    auto n = view(r.body->body[i]);
    if (n && n->set->name == node && seen++ == nth) return static_cast<int>(i);
  }
  return -1;
}

bool reads(const ExprP& e, const std::string& node) {
  if (e->kind == ExprKind::Get && e->name == node) return true;
  for (const auto& a : e->args)
    if (reads(a, node)) return true;
  return false;
}

// `e` with every read of node `from` replaced by f(read).
ExprP map_reads(const ExprP& e, const std::string& from, const std::function<ExprP(const Expr&)>& f) {
  if (e->kind == ExprKind::Get && e->name == from) return f(*e);
  if (e->args.empty()) return e;
  Expr c = *e;
  for (auto& a : c.args) a = map_reads(a, from, f);
  return std::make_shared<const Expr>(std::move(c));
}

ExprP rename_reads(const ExprP& e, const std::string& from, const std::string& to) {
  return map_reads(e, from, [&](const Expr& g) { return get(to, g.indices, g.prec); });
}

// The first read of `node` in `e` (one must exist).
const Expr& first_read(const ExprP& e, const std::string& node) {
  if (e->kind == ExprKind::Get && e->name == node) return *e;
  for (const auto& a : e->args)
    if (reads(a, node)) return first_read(a, node);
  FP_UNREACHABLE("no read of {}", node);
}

class Editor {
 public:
  Editor(const Routine& r, std::uint64_t seed) : r_(r), rng_(seed ^ 0x3c6ef372fe94f82bULL) {}

  std::optional<Routine> run(Lookalike kind) {
    if (!pick_layer()) return std::nullopt;
    switch (kind) {
      case Lookalike::None:
        return std::nullopt;
      case Lookalike::SumOverOtherAxis:
        return sum_over_other_axis();
      case Lookalike::SecondMax:
        return second_max();
      case Lookalike::ShiftedRead:
        return shifted_read();
      case Lookalike::ExtraReaderOfL:
        return extra_reader_of_l();
      case Lookalike::ExtraReaderOfP:
        return extra_reader_of_p();
      case Lookalike::ExtraReaderOfMax:
        return extra_reader_of_max();
      case Lookalike::DropoutLikeStep:
        return dropout_like_step();
      case Lookalike::SumWithoutExp:
        return sum_without_exp();
    }
    FP_UNREACHABLE("look-alike {}", static_cast<int>(kind));
  }

 private:
  // ---- the chain of one layer

  bool pick_layer() {
    std::vector<std::string> sfx;
    if (r_.find_node("row_sum")) sfx.push_back("");
    for (int i = 1; r_.find_node("row_sum_" + std::to_string(i)); ++i) sfx.push_back("_" + std::to_string(i));
    if (sfx.empty()) return false;
    sfx_ = sfx[static_cast<std::size_t>(rng_.range(0, static_cast<std::int64_t>(sfx.size()) - 1))];
    // Every nest the edits start from must be there, in the composed form.
    max_init_ = find_nest(r_, n("row_max"), 0);
    max_ = find_nest(r_, n("row_max"), 1);
    shifted_ = find_nest(r_, n("shifted"));
    exps_ = find_nest(r_, n("exps"));
    sum_ = find_nest(r_, n("row_sum"));
    probs_ = find_nest(r_, n("probs"));
    if (max_init_ < 0 || max_ < 0 || shifted_ < 0 || exps_ < 0 || sum_ < 0 || probs_ < 0) return false;
    const ExprP mv = at(max_).set->value;
    if (!reads(at(sum_).set->value, n("exps")) || mv->kind != ExprKind::Binary ||
        mv->args[1]->kind != ExprKind::Get)
      return false;
    x_ = at(max_).set->value->args[1]->name;  // masked or scaled
    p_node_ = r_.find_node(n("dropped")) ? n("dropped") : n("probs");
    p_writer_ = find_nest(r_, p_node_);
    for (std::size_t i = static_cast<std::size_t>(p_writer_) + 1; i < r_.body->body.size(); ++i) {
      auto v = view(r_.body->body[i]);
      if (v && reads(v->set->value, p_node_)) {
        pv_nest_ = static_cast<int>(i);
        break;
      }
    }
    if (p_writer_ < 0 || pv_nest_ < 0) return false;
    prec_ = r_.find_node(n("row_sum"))->prec;
    return true;
  }

  std::string n(const std::string& base) const { return base + sfx_; }
  Nest at(int i) const { return *view(r_.body->body[static_cast<std::size_t>(i)]); }
  std::int64_t extent(const Nest& v, const std::string& sym) const {
    for (const auto& l : v.loops)
      if (l.sym == sym) return l.to - l.from + 1;
    return 0;
  }
  int variant(int count) { return static_cast<int>(rng_.range(0, count - 1)); }

  // A node name not in the routine, from base and the layer's suffix.
  std::string fresh(const std::string& base) const {
    std::string name = n(base);
    while (r_.find_node(name)) name += "_";
    return name;
  }
  std::string fresh_sym(const Nest& v) const {
    std::string sym = "la";
    for (bool clash = true; clash;) {
      clash = false;
      for (const auto& l : v.loops) clash = clash || l.sym == sym;
      if (clash) sym += "_";
    }
    return sym;
  }

  Node add_node(const std::string& name, const std::string& like, bool output) {
    Node node = *r_.find_node(like);
    node.name = name;
    node.is_input = false;
    node.is_output = output;
    node.loc = {};
    out_.nodes.push_back(node);
    return node;
  }

  void replace(int i, StmtP s) { body_[static_cast<std::size_t>(i)] = std::move(s); }
  void insert(int before, StmtP s) { body_.insert(body_.begin() + before, std::move(s)); }
  Routine finish() {
    out_.body = seq(std::move(body_));
    return std::move(out_);
  }
  void begin() {
    out_ = r_;
    body_ = r_.body->body;
  }

  static StmtP with_set(const std::vector<Loop>& loops, std::string target, std::vector<Index> idx,
                        ExprP value) {
    return nest(loops, set(std::move(target), std::move(idx), std::move(value)));
  }

  // ---- the look-alikes

  std::optional<Routine> sum_over_other_axis() {
    begin();
    const Nest s = at(sum_);
    const Expr& e = first_read(s.set->value, n("exps"));  // exps[b, s, h, t]
    const std::int64_t sq = extent(s, "s"), sk = extent(s, "t"), heads = extent(s, "h"),
                       batch = extent(s, "b");
    std::vector<int> options = {3};
    if (sq == sk) options.push_back(0);
    if (heads >= 2) options.push_back(1);
    if (batch >= 2) options.push_back(2);
    const int which = options[static_cast<std::size_t>(variant(static_cast<int>(options.size())))];
    std::vector<Index> idx = e.indices;
    std::vector<Loop> loops = s.loops;
    const std::string extra = fresh_sym(s);
    switch (which) {
      case 0:  // down the column: the sum runs over the queries of key s
        std::swap(idx[1], idx[3]);
        break;
      case 1:  // over every head as well
        idx[2] = Index::iter(extra);
        loops.push_back({extra, 0, heads - 1});
        break;
      case 2:  // over the whole batch as well
        idx[0] = Index::iter(extra);
        loops.push_back({extra, 0, batch - 1});
        break;
      default:  // over the queries as well as the keys
        idx[1] = Index::iter(extra);
        loops.push_back({extra, 0, sq - 1});
        break;
    }
    ExprP value = map_reads(s.set->value, n("exps"), [&](const Expr& g) { return get(g.name, idx, g.prec); });
    replace(sum_, with_set(loops, s.set->name, s.set->indices, value));
    return finish();
  }

  std::optional<Routine> second_max() {
    begin();
    if (variant(2) == 0) {  // the sum nest turned into a max
      const Nest s = at(sum_);
      Expr c = *s.set->value;
      if (c.kind != ExprKind::Binary || c.binop() != BinOp::Add) return std::nullopt;
      c.op = static_cast<std::uint8_t>(BinOp::Max);
      replace(sum_,
              with_set(s.loops, s.set->name, s.set->indices, std::make_shared<const Expr>(std::move(c))));
      return finish();
    }
    // m2 = max over the keys of the raw scores; the shift subtracts max(m, m2).
    const std::string m2 = fresh("row_max2");
    add_node(m2, n("row_max"), false);
    const Nest init = at(max_init_), mx = at(max_);
    const std::string raw = r_.find_node(n("scores")) ? n("scores") : x_;
    StmtP init2 = with_set(init.loops, m2, init.set->indices, init.set->value);
    ExprP v2 = rename_reads(rename_reads(mx.set->value, n("row_max"), m2), x_, raw);
    StmtP max2 = with_set(mx.loops, m2, mx.set->indices, v2);
    const Nest sh = at(shifted_);
    ExprP shifted = map_reads(sh.set->value, n("row_max"), [&](const Expr& g) {
      return binary(BinOp::Max, get(g.name, g.indices, g.prec), get(m2, g.indices, g.prec), g.prec);
    });
    replace(shifted_, with_set(sh.loops, sh.set->name, sh.set->indices, shifted));
    insert(max_ + 1, max2);
    insert(max_ + 1, init2);
    return finish();
  }

  std::optional<Routine> shifted_read() {
    struct Option {
      int nest;
      std::string node;
      std::size_t axis;  // which index of the read moves one further
    };
    std::vector<Option> options;
    const std::int64_t sq = extent(at(sum_), "s"), sk = extent(at(sum_), "t");
    if (sk >= 2) {
      options.push_back({sum_, n("exps"), 3});
      options.push_back({max_, x_, 3});
      options.push_back({pv_nest_, p_node_, 3});
    }
    if (sq >= 2) options.push_back({sum_, n("exps"), 1});
    if (options.empty()) return std::nullopt;
    const Option o = options[static_cast<std::size_t>(variant(static_cast<int>(options.size())))];
    begin();
    const Nest v = at(o.nest);
    const Expr& e = first_read(v.set->value, o.node);
    const Index& moved = e.indices[o.axis];
    if (!moved.is_plain_iterator()) return std::nullopt;
    const std::string sym = moved.terms[0].sym;
    // Every other read of the loop's symbol must stay in bounds on the shorter loop: it does, the
    // loop only loses its last iteration.
    std::vector<Loop> loops = v.loops;
    for (auto& l : loops)
      if (l.sym == sym) --l.to;
    bool done = false;
    ExprP value = map_reads(v.set->value, o.node, [&](const Expr& g) {
      if (done) return get(g.name, g.indices, g.prec);
      done = true;
      std::vector<Index> idx = g.indices;
      idx[o.axis].offset += 1;
      return get(g.name, idx, g.prec);
    });
    replace(o.nest, with_set(loops, v.set->name, v.set->indices, value));
    return finish();
  }

  // A new output `name` [like's dims] written after everything else from value(indices).
  std::optional<Routine> extra_output(const std::string& base, const std::string& like, int shape_nest,
                                      const std::function<ExprP(const std::vector<Index>&)>& value) {
    begin();
    const std::string name = fresh(base);
    add_node(name, like, true);
    const Nest v = at(shape_nest);
    body_.push_back(with_set(v.loops, name, v.set->indices, value(v.set->indices)));
    return finish();
  }

  std::optional<Routine> extra_reader_of_l() {
    const bool lse = variant(2) == 1;
    return extra_output("l_copy", n("row_sum"), max_init_, [&](const std::vector<Index>& idx) {
      ExprP l = get(n("row_sum"), idx, prec_);
      return lse ? binary(BinOp::Add, get(n("row_max"), idx, prec_), l, prec_) : l;
    });
  }

  std::optional<Routine> extra_reader_of_p() {
    const std::string src = variant(3) == 0 ? n("exps") : p_node_;
    return extra_output("p_copy", src, probs_,
                        [&](const std::vector<Index>& idx) { return get(src, idx, prec_); });
  }

  std::optional<Routine> extra_reader_of_max() {
    return extra_output("m_copy", n("row_max"), max_init_,
                        [&](const std::vector<Index>& idx) { return get(n("row_max"), idx, prec_); });
  }

  std::optional<Routine> dropout_like_step() {
    begin();
    const std::string kept = fresh("kept");
    add_node(kept, p_node_, false);
    const Nest w = at(p_writer_);
    const std::vector<Index>& idx = w.set->indices;
    ExprP p = get(p_node_, idx, prec_);
    ExprP step;
    switch (variant(4)) {
      case 0:
        step = binary(BinOp::Mul, p, constant(0.5, prec_), prec_);
        break;
      case 1:
        step = binary(BinOp::Mul, p, constant(2.0, prec_), prec_);
        break;
      case 2:  // dropout by the probability itself
        step = binary(BinOp::Div,
                      binary(BinOp::Mul, p, binary(BinOp::Lt, constant(0.25, prec_), p, prec_), prec_),
                      constant(0.75, prec_), prec_);
        break;
      default:
        step = binary(BinOp::Mul, p, p, prec_);
        break;
    }
    const Nest vp = at(pv_nest_);
    replace(pv_nest_,
            with_set(vp.loops, vp.set->name, vp.set->indices, rename_reads(vp.set->value, p_node_, kept)));
    insert(p_writer_ + 1, with_set(w.loops, kept, idx, step));
    return finish();
  }

  std::optional<Routine> sum_without_exp() {
    begin();
    const Nest s = at(sum_);
    replace(sum_, with_set(s.loops, s.set->name, s.set->indices,
                           rename_reads(s.set->value, n("exps"), n("shifted"))));
    return finish();
  }

  const Routine& r_;
  SplitMix64 rng_;
  std::string sfx_, x_, p_node_;
  int max_init_ = -1, max_ = -1, shifted_ = -1, exps_ = -1, sum_ = -1, probs_ = -1, p_writer_ = -1,
      pv_nest_ = -1;
  Prec prec_ = Prec::F32;
  Routine out_;
  std::vector<StmtP> body_;
};

}  // namespace

const std::vector<Lookalike>& lookalike_kinds() {
  static const std::vector<Lookalike> kinds = {Lookalike::SumOverOtherAxis, Lookalike::SecondMax,
                                               Lookalike::ShiftedRead,      Lookalike::ExtraReaderOfL,
                                               Lookalike::ExtraReaderOfP,   Lookalike::ExtraReaderOfMax,
                                               Lookalike::DropoutLikeStep,  Lookalike::SumWithoutExp};
  return kinds;
}

const char* lookalike_name(Lookalike k) {
  switch (k) {
    case Lookalike::None:
      return "none";
    case Lookalike::SumOverOtherAxis:
      return "sum-over-other-axis";
    case Lookalike::SecondMax:
      return "second-max";
    case Lookalike::ShiftedRead:
      return "shifted-read";
    case Lookalike::ExtraReaderOfL:
      return "extra-reader-of-l";
    case Lookalike::ExtraReaderOfP:
      return "extra-reader-of-p";
    case Lookalike::ExtraReaderOfMax:
      return "extra-reader-of-max";
    case Lookalike::DropoutLikeStep:
      return "dropout-like-step";
    case Lookalike::SumWithoutExp:
      return "sum-without-exp";
  }
  FP_UNREACHABLE("look-alike {}", static_cast<int>(k));
}

std::optional<Lookalike> parse_lookalike(const std::string& name) {
  if (name == "none") return Lookalike::None;
  for (Lookalike k : lookalike_kinds())
    if (name == lookalike_name(k)) return k;
  return std::nullopt;
}

std::optional<Routine> make_lookalike(const Routine& attention, Lookalike kind, std::uint64_t seed) {
  return Editor(attention, seed).run(kind);
}

}  // namespace fp::fuzz
