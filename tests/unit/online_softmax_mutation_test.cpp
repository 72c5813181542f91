// Online softmax, soundness under mutation: the golden softmax routine (tests/lit/online_softmax/
// apply-basic.fp) with random mutations — statements swapped or deleted, loop bounds shifted or
// killed, fills changed, probes that read or write a chain node inside a guard or a local scope
// inserted anywhere. Whatever the mutant, either every shape declines and the routine comes back
// structurally identical, or the rewritten routine agrees with the mutant on the interpreter
// (1e-5, NaN exactly where the mutant has NaN) and rewriting it again changes nothing. A failing
// case prints its seed and the mutant as text.

#include <gtest/gtest.h>

#include "attention_reference.h"
#include "core/interpreter.h"
#include "core/random_inputs.h"
#include "online_softmax_fixtures.h"

namespace fp {
namespace {

using namespace ostest;

// Index list for node `n` at row symbol `i` (1-D nodes [i], 2-D nodes [i, 0]).
std::vector<Index> row_idx(const Node& n, const std::string& i) {
  std::vector<Index> idx = {Index::iter(i)};
  if (n.dims.size() == 2) idx.push_back(Index::fixed(0));
  return idx;
}

// The cell [row] or [row, 0] of `n`.
std::vector<Index> cell(const Node& n, std::int64_t row) {
  std::vector<Index> idx = {Index::fixed(row)};
  if (n.dims.size() == 2) idx.push_back(Index::fixed(0));
  return idx;
}

StmtP probe(const Routine& r, const std::string& node, int kind, int serial) {
  const Node& n = *r.find_node(node);
  const Prec p = n.prec;
  const std::string q = "q" + std::to_string(serial);
  switch (kind) {
    case 0:  // scoped read
      return for_loop("i", 0, 1,
                      {declare_local(q, p), set_local(q, get(node, row_idx(n, "i"), p)),
                       set("y", {Index::iter("i")}, get_local(q, p))});
    case 1:  // guarded read (in the condition)
      return if_(binary(BinOp::Lt, get(node, cell(n, 0), p), constant(0.25, p), p),
                 {set("y", {Index::fixed(1)}, constant(1.0, Prec::F32))});
    case 2:  // guarded write
      return if_(binary(BinOp::Lt, get("v", {Index::fixed(0), Index::fixed(0)}, Prec::F32),
                        constant(2.0, Prec::F32), Prec::F32),
                 {set(node, cell(n, 1), constant(0.5, p))});
    default:  // scoped write
      return for_loop(
          "i", 0, 1,
          {declare_local(q, p), set_local(q, get("v", {Index::iter("i"), Index::fixed(1)}, Prec::F32)),
           set(node, row_idx(n, "i"), get_local(q, p))});
  }
}

// The nest with loop `level` given new bounds.
StmtP rebound(const StmtP& s, int level, std::int64_t from, std::int64_t to) {
  Stmt c = *s;
  if (level == 0) {
    c.from = from;
    c.to = to;
  } else {
    c.body = {rebound(s->body[0], level - 1, from, to)};
  }
  return std::make_shared<const Stmt>(std::move(c));
}

int depth(const StmtP& s) {
  return s->kind == StmtKind::For ? 1 + depth(s->body[0]) : 0;
}

StmtP with_value(const StmtP& s, ExprP v) {
  if (s->kind == StmtKind::For) {
    Stmt c = *s;
    c.body = {with_value(s->body[0], std::move(v))};
    return std::make_shared<const Stmt>(std::move(c));
  }
  Stmt c = *s;
  c.value = std::move(v);
  return std::make_shared<const Stmt>(std::move(c));
}

Routine mutate(const Routine& base, SplitMix64& rng) {
  Routine r = base;
  std::vector<StmtP> body = r.body->body;
  const std::vector<std::string> chain = {"x", "m", "n", "e", "l", "p"};
  const int mutations = static_cast<int>(rng.range(1, 3));
  for (int k = 0; k < mutations; ++k) {
    const auto pos = static_cast<std::size_t>(rng.range(0, static_cast<std::int64_t>(body.size()) - 1));
    switch (rng.range(0, 6)) {
      case 0:  // swap with the next statement
        if (pos + 1 < body.size()) std::swap(body[pos], body[pos + 1]);
        break;
      case 1:  // delete
        body.erase(body.begin() + static_cast<std::ptrdiff_t>(pos));
        break;
      case 2: {  // shift or kill one loop
        const int d = depth(body[pos]);
        if (d == 0) break;
        const int level = static_cast<int>(rng.range(0, d - 1));
        const Stmt* l = body[pos].get();
        for (int i = 0; i < level; ++i) l = l->body[0].get();
        switch (rng.range(0, 2)) {
          case 0:
            body[pos] = rebound(body[pos], level, std::min(l->from + 1, l->to), l->to);
            break;
          case 1:
            body[pos] = rebound(body[pos], level, l->from, std::max(l->from, l->to - 1));
            break;
          default:
            body[pos] = rebound(body[pos], level, l->from, l->from - 1);
            break;
        }
        break;
      }
      case 3: {  // change a constant fill (the -inf init or a zero fill) when there is one
        const Stmt* s = body[pos].get();
        while (s->kind == StmtKind::For) s = s->body[0].get();
        if (s->kind == StmtKind::Set && s->value->kind == ExprKind::Const)
          body[pos] = with_value(body[pos], constant(rng.range(0, 1) ? 0.0 : -1.0, s->value->prec));
        else if (s->kind == StmtKind::Zero)
          body[pos] = for_loop("z", 0, 1, {set(s->name, {Index::iter("z")}, constant(1.0, Prec::F32))});
        break;
      }
      default: {  // a probe reading or writing a chain node
        const std::string node = chain[static_cast<std::size_t>(rng.range(0, 5))];
        int kind = static_cast<int>(rng.range(0, 3));
        if (node == "x" && kind >= 2 && rng.range(0, 1)) kind = 0;
        body.insert(body.begin() + static_cast<std::ptrdiff_t>(pos), probe(r, node, kind, k));
        break;
      }
    }
  }
  r.body = seq(std::move(body));
  return r;
}

TEST(OnlineSoftmaxMutation, EveryMutantIsDeclinedUnchangedOrRewrittenFaithfully) {
  std::string text = read_text_file(lit_path("apply-basic.fp"));
  text.replace(text.find("routine softmax {"), 17,
               "routine softmax {\n  node y : f32[2] materialized output");
  const Routine base = parse_checked(text);
  int applied = 0, declined = 0, malformed = 0;
  for (std::uint64_t seed = 1; seed <= 1000; ++seed) {
    SplitMix64 rng(seed);
    Routine mutant = mutate(base, rng);
    if (!check_routine(mutant).empty()) {
      ++malformed;
      continue;
    }
    SCOPED_TRACE(::testing::Message() << "seed=" << seed << "\n" << print_routine(mutant));
    RewriteResult res = rewrite(mutant);
    bool scan = false;
    for (const auto& a : res.applications) scan = scan || a.shape == "online-softmax.normalizer-scan";
    if (res.applications.empty()) {
      ++declined;
      ASSERT_TRUE(equal(res.routine, mutant));
      continue;
    }
    ++applied;
    ASSERT_TRUE(well_formed(res.routine));
    ASSERT_TRUE(equal(rewrite(res.routine).routine, res.routine));
    for (std::uint64_t in_seed : {seed, seed + 1000}) {
      TensorMap in = testref::make_inputs(mutant, in_seed);
      TensorMap want = interpret(mutant, in), got = interpret(res.routine, in);
      for (const auto& [node, t] : want) {
        if (scan)
          ASSERT_TRUE(testref::close(got.at(node).data, t.data, 1e-5, node));
        else  // only the hoist applied: bitwise
          ASSERT_TRUE(testref::close(got.at(node).data, t.data, 0.0, node));
      }
    }
  }
  // The mutations must exercise both outcomes.
  EXPECT_GT(applied, 200);
  EXPECT_GT(declined, 400);
  RecordProperty("applied", applied);
  RecordProperty("declined", declined);
  RecordProperty("malformed", malformed);
}

}  // namespace
}  // namespace fp
