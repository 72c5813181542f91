// Reverse-mode differentiation: every rule against central finite differences at f64 (through the
// interpreter on both the forward routine and the training step), and the training step's shape
// (forward, zeroing, accumulating adjoint nests; no pow; gradients as the only outputs).

#include "frontend/autodiff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "attention_reference.h"
#include "core/checker.h"
#include "core/diagnostic.h"
#include "frontend/lower.h"
#include "frontend/te_parser.h"
#include "core/interpreter.h"
#include "core/ir_visit.h"
#include "core/text_printer.h"

namespace fp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Lowered {
  fe::GradRequest req;
  Routine forward;  // the loss terms as outputs
  Routine train;
};

Lowered lower_case(const std::string& src, bool differentiable_max) {
  fe::ParsedProgram pp = fe::parse_program(src, "ad.te");
  EXPECT_TRUE(pp.grad.has_value());
  Lowered out;
  out.req = *pp.grad;
  out.req.differentiable_max = differentiable_max;
  fe::Program fwd = pp.program;
  for (auto& t : fwd.tensors) t.is_output = false;
  for (const auto& [o, s] : out.req.loss) fwd.find_tensor(o)->is_output = true;
  out.forward = fe::lower(fwd);
  out.train = fe::lower_training_step(pp.program, out.req, "ad.te");
  return out;
}

// Every requested gradient of `src` (f64 throughout) agrees with central differences (h = 1e-5)
// to 1e-6 under the mixed criterion of attention_reference.h.
void expect_gradients_match_finite_differences(const std::string& src, bool differentiable_max = false,
                                               double lo = -1.0, double hi = 1.0) {
  Lowered l = lower_case(src, differentiable_max);
  ASSERT_NO_THROW(check_routine_or_throw(l.train, "train"));
  ASSERT_NO_THROW(check_routine_or_throw(l.forward, "forward"));
  TensorMap in = testref::make_inputs(l.train, 42, lo, hi);
  TensorMap grads = interpret(l.train, in);
  auto loss = [&](const TensorMap& x) { return testref::dot_loss(interpret(l.forward, x), x, l.req.loss); };
  for (const auto& w : l.req.wrt) {
    std::vector<double> fd = testref::finite_difference(in, w, 1e-5, loss);
    EXPECT_TRUE(testref::close(grads.at(fe::grad_name(w)).data, fd, 1e-6, fe::grad_name(w)));
  }
}

TEST(Autodiff, AddSubNegAndBroadcastReads) {
  expect_gradients_match_finite_differences(R"(
axes i=3 j=2
precision f64
input a[i,j] : f64
input b[i] : f64
input c[j] : f64
input dy[i,j] : f64
y[i,j] = a[i,j] + b[i] - (-(a[i,j] - c[j]))
grad a, b, c
loss y * dy
)");
}

TEST(Autodiff, MulWithARepeatedRead) {
  expect_gradients_match_finite_differences(R"(
axes i=3 j=2
precision f64
input a[i,j] : f64
input b[j] : f64
input dy[i,j] : f64
y[i,j] = a[i,j] * b[j] * a[i,j]
grad a, b
loss y * dy
)");
}

TEST(Autodiff, Contraction) {
  expect_gradients_match_finite_differences(R"(
axes i=2 j=3 k=2
precision f64
input a[i,j] : f64
input w[j,k] : f64
input dy[i,k] : f64
y[i,k] = a[i,j] * w[j,k]
grad a, w
loss y * dy
)");
}

TEST(Autodiff, DivisionBothOperands) {
  expect_gradients_match_finite_differences(R"(
axes i=4
precision f64
input a[i] : f64
input b[i] : f64
input dy[i] : f64
y[i] = a[i] / b[i] + 1 / (b[i] * a[i])
grad a, b
loss y * dy
)",
                                            false, 0.5, 1.5);
}

TEST(Autodiff, ExpAsWholeRhsAndNested) {
  expect_gradients_match_finite_differences(R"(
axes i=3 j=2
precision f64
input a[i,j] : f64
input b[i] : f64
input dy[i] : f64
e[i,j] = exp(a[i,j])
y[i] = exp(b[i] * 2) * e[i,j]
grad a, b
loss y * dy
)");
}

TEST(Autodiff, SumReductionBroadcastsItsAdjoint) {
  expect_gradients_match_finite_differences(R"(
axes i=3 j=4
precision f64
input a[i,j] : f64
input b[i,j] : f64
input dy[i,j] : f64
s[i] = sum(j) a[i,j] * a[i,j]
y[i,j] = s[i] * b[i,j]
grad a, b
loss y * dy
)");
}

TEST(Autodiff, WhereWithIndexAndTensorConditions) {
  expect_gradients_match_finite_differences(R"(
axes i=4 j=4
precision f64
input a[i,j] : f64
input b[i,j] : f64
input c[i] : f64
input dy[i,j] : f64
x[i,j] = where(j <= i, a[i,j] * 3, b[i,j])
y[i,j] = where(c[i] < 0, x[i,j], -x[i,j] * 2) + where(a[i,j] > 0, a[i,j], 0)
grad a, b, c
loss y * dy
)");
}

TEST(Autodiff, ConstantsContributeNothing) {
  expect_gradients_match_finite_differences(R"(
axes i=3
precision f64
input a[i] : f64
input dy[i] : f64
y[i] = 2 * a[i] + 3 - i
grad a
loss y * dy
)");
}

TEST(Autodiff, DifferentiableMaxRoutesToTheMaximum) {
  const char* src = R"(
axes i=3 j=4
precision f64
input a[i,j] : f64
input dm[i] : f64
m[i] = max(j) a[i,j]
grad a
loss m * dm
)";
  expect_gradients_match_finite_differences(src, /*differentiable_max=*/true);
  // Undifferentiated, the max is a constant: a gets a zero gradient and no adjoint nest.
  Lowered l = lower_case(src, false);
  TensorMap in = testref::make_inputs(l.train, 3);
  TensorMap out = interpret(l.train, in);
  for (double g : out.at("grad_a").data) EXPECT_EQ(g, 0.0);
  Lowered d = lower_case(src, true);
  EXPECT_EQ(print_expr(*[&] {
              const Stmt* s = d.train.body->body.back().get();
              while (s->kind == StmtKind::For) s = s->body[0].get();
              return s->value;
            }()),
            "add.f64(grad_a[i, j], mul.f64(dm[i], eq.f64(a[i, j], m[i])))");
}

TEST(Autodiff, UndifferentiatedMaxStillGivesTheExactSoftmaxGradient) {
  // Softmax does not depend on the shift, so treating the max as a constant is exact.
  expect_gradients_match_finite_differences(R"(
axes i=2 j=5
precision f64
input a[i,j] : f64
input dy[i,j] : f64
m[i] = max(j) a[i,j]
n[i,j] = a[i,j] - m[i]
e[i,j] = exp(n[i,j])
l[i] = sum(j) e[i,j]
p[i,j] = e[i,j] / l[i]
grad a
loss p * dy
)");
}

TEST(Autodiff, OutputsReadElsewhereAndMultipleLossTerms) {
  expect_gradients_match_finite_differences(R"(
axes i=3
precision f64
input a[i] : f64
input unused[i] : f64
input dy[i] : f64
input dz[i] : f64
y[i] = a[i] * a[i]
z[i] = exp(y[i]) + y[i]
grad a, unused
loss y * dy, z * dz
)");
}

// The adjoint nest writing `node` (the last one), as "loops: value".
std::string adjoint_of(const Routine& r, const std::string& node, int nth = 0) {
  int seen = 0;
  for (const auto& s : r.body->body) {
    std::string l;
    const Stmt* cur = s.get();
    while (cur->kind == StmtKind::For) {
      l += cur->sym;
      cur = cur->body[0].get();
    }
    if (cur->kind == StmtKind::Set && cur->name == node && seen++ == nth)
      return l + ": " + print_expr(*cur->value);
  }
  return "(none)";
}

TEST(Autodiff, TrainingStepIsForwardThenZeroingThenAccumulations) {
  Lowered l = lower_case(R"(
axes i=2 j=3
precision f32
input a[i,j] : f32
input b[i] : f32
input dy[i] : f32
q[i,j] = a[i,j] / b[i]
y[i] = sum(j) exp(q[i,j])
grad a, b
loss y * dy
)",
                         false);
  const auto& body = l.train.body->body;
  // forward: q (1), y (zero + nest); then zeroing of every gradient node; then the adjoints.
  ASSERT_EQ(body.size(), 3u + 3u + 3u);
  EXPECT_EQ(body[3]->kind, StmtKind::Zero);
  EXPECT_EQ(body[3]->name, "grad_q");
  EXPECT_EQ(body[4]->name, "grad_a");
  EXPECT_EQ(body[5]->name, "grad_b");
  // y's seed is dy itself; the sum's adjoint is broadcast over its loops, exp's recomputed.
  EXPECT_EQ(adjoint_of(l.train, "grad_q"), "ij: add.f32(grad_q[i, j], mul.f32(dy[i], exp.f32(q[i, j])))");
  EXPECT_EQ(adjoint_of(l.train, "grad_a"), "ij: add.f32(grad_a[i, j], div.f32(grad_q[i, j], b[i]))");
  EXPECT_EQ(adjoint_of(l.train, "grad_b"),
            "ij: add.f32(grad_b[i], mul.f32(grad_q[i, j], div.f32(neg.f32(a[i, j]), mul.f32(b[i], b[i]))))");
  for_each_stmt(l.train.body, [](const Stmt& s) {
    if (s.kind == StmtKind::Set)
      for_each_expr(s.value, [](const Expr& e) {
        if (e.kind == ExprKind::Binary) {
          EXPECT_NE(e.binop(), BinOp::Pow);
        }
      });
  });
  std::vector<std::string> outs;
  for (const Node* n : l.train.outputs()) outs.push_back(n->name);
  EXPECT_THAT(outs, ElementsAre("grad_a", "grad_b"));
  EXPECT_EQ(l.train.name, "main_train");
  for (const auto& n : l.train.nodes) EXPECT_EQ(n.mode, MemMode::Materialized);
}

TEST(Autodiff, ExpAsTheWholeRhsReusesItsResult) {
  Lowered l = lower_case(
      "axes i=2\ninput a[i] : f32\ninput dy[i] : f32\ne[i] = exp(a[i])\ngrad a\nloss e * dy\n", false);
  EXPECT_EQ(adjoint_of(l.train, "grad_a"), "i: add.f32(grad_a[i], mul.f32(dy[i], e[i]))");
}

TEST(Autodiff, WhereSendsTheAdjointToTheSelectedBranchOnly) {
  Lowered l = lower_case(
      "axes s=2 t=2\ninput a[s,t] : f32\ninput dy[s,t] : f32\nx[s,t] = where(t <= s, a[s,t], -inf)\ngrad "
      "a\nloss x * dy\n",
      false);
  EXPECT_EQ(adjoint_of(l.train, "grad_a"),
            "st: add.f32(grad_a[s, t], where.f32(lt.i32(idx.i32(t), idx.i32(s + 1)), dy[s, t], 0:f32))");
}

TEST(Autodiff, InvalidRequestsAreMalformedInput) {
  fe::ParsedProgram pp = fe::parse_program(
      "axes i=2\ninput a[i] : f32\ninput s[i] : f32\ninput m[i] : i32\ny[i] = a[i]\noutput y\n", "bad.te");
  auto attempt = [&](fe::GradRequest req) {
    try {
      fe::lower_training_step(pp.program, req, "bad.te");
      return std::string("no error");
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitMalformed);
      return e.message();
    }
  };
  EXPECT_THAT(attempt({{"y"}, {{"y", "s"}}, false}), HasSubstr("not an input"));
  EXPECT_THAT(attempt({{"m"}, {{"y", "s"}}, false}), HasSubstr("not a float"));
  EXPECT_THAT(attempt({{"a"}, {{"y", "a2"}}, false}), HasSubstr("not an input"));
  EXPECT_THAT(attempt({{"a"}, {}, false}), HasSubstr("needs a loss"));
  EXPECT_THAT(attempt({{"a", "a"}, {{"y", "s"}}, false}), HasSubstr("twice"));
  fe::ParsedProgram taken = fe::parse_program(
      "axes i=2\ninput a[i] : f32\ninput s[i] : f32\ngrad_a[i] = a[i]\ny[i] = grad_a[i]\noutput y\n",
      "bad.te");
  EXPECT_THROW(fe::lower_training_step(taken.program, {{"a"}, {{"y", "s"}}, false}), UserError);
}

}  // namespace
}  // namespace fp
