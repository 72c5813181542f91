// The tensor-expression frontend: the raw lowering's structure (one nest per assignment, zeroing
// vs -inf fill, loop order, precisions, index predicates), its meaning (interpreted results), and
// the text language's located errors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "attention_reference.h"
#include "core/checker.h"
#include "core/diagnostic.h"
#include "frontend/lower.h"
#include "frontend/te_parser.h"
#include "core/interpreter.h"
#include "core/ir_visit.h"
#include "core/text_parser.h"
#include "core/text_printer.h"

namespace fp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kSoftmax = R"(# composed attention, as in the documentation
axes b=1 s=4 t=4 h=2 d=3 e=2
input q[b,s,h,d] : f32
input k[b,t,h,d] : f32
input v[b,t,h,e] : f32
scores[b,s,h,t] = q[b,s,h,d] * k[b,t,h,d]
x[b,s,h,t] = where(t <= s, scores[b,s,h,t] * 0.125, -inf)
m[b,s,h] = max(t) x[b,s,h,t]
n[b,s,h,t] = x[b,s,h,t] - m[b,s,h]
p_exp[b,s,h,t] = exp(n[b,s,h,t])
l[b,s,h] = sum(t) p_exp[b,s,h,t]
p[b,s,h,t] = p_exp[b,s,h,t] / l[b,s,h]
o[b,s,h,e] = p[b,s,h,t] * v[b,t,h,e]
output o
)";

Routine lower_text(const std::string& src) {
  return fe::lower_source(src, "test.te");
}

const std::vector<StmtP>& top(const Routine& r) {
  return r.body->body;
}

// Loop symbols from the outside in, down to the statement inside the innermost loop.
std::vector<std::string> loops(const StmtP& s) {
  std::vector<std::string> out;
  const Stmt* cur = s.get();
  while (cur->kind == StmtKind::For) {
    EXPECT_EQ(cur->body.size(), 1u) << "a nest holds one statement per level";
    out.push_back(cur->sym);
    cur = cur->body[0].get();
  }
  return out;
}

const Stmt& innermost(const StmtP& s) {
  const Stmt* cur = s.get();
  while (cur->kind == StmtKind::For) cur = cur->body[0].get();
  return *cur;
}

// "zero N" or "N: loops -> value" for each top-level statement, for compact structural checks.
std::vector<std::string> shape(const Routine& r) {
  std::vector<std::string> out;
  for (const auto& s : top(r)) {
    if (s->kind == StmtKind::Zero) {
      out.push_back("zero " + s->name);
      continue;
    }
    const Stmt& set_stmt = innermost(s);
    std::string l;
    for (const auto& sym : loops(s)) l += sym;
    out.push_back(set_stmt.name + "@" + l);
  }
  return out;
}

TEST(Frontend, SoftmaxLowersToOneNestPerOperationInProgramOrder) {
  Routine r = lower_text(kSoftmax);
  EXPECT_THAT(shape(r), ElementsAre("zero scores", "scores@bshtd", "x@bsht", "m@bsh", "m@bsht", "n@bsht",
                                    "p_exp@bsht", "zero l", "l@bsht", "p@bsht", "zero o", "o@bshet"));
}

TEST(Frontend, MaxReductionFillsWithMinusInfinityAndSumZeroes) {
  Routine r = lower_text(kSoftmax);
  const auto& s = top(r);
  // m: a fill nest over m's cells storing -inf, then max(m, x) over the reduced axis too.
  EXPECT_EQ(print_expr(*innermost(s[3]).value), "-inf:f32");
  EXPECT_EQ(print_expr(*innermost(s[4]).value), "max.f32(m[b, s, h], x[b, s, h, t])");
  // l: zero, then add(l, e) — never a constant fill.
  EXPECT_EQ(s[7]->kind, StmtKind::Zero);
  EXPECT_EQ(print_expr(*innermost(s[8]).value), "add.f32(l[b, s, h], p_exp[b, s, h, t])");
  // The value pass: target axes outermost, the reduced t innermost.
  EXPECT_THAT(loops(s[11]), ElementsAre("b", "s", "h", "e", "t"));
  EXPECT_EQ(print_expr(*innermost(s[11]).value),
            "add.f32(o[b, s, h, e], mul.f32(p[b, s, h, t], v[b, t, h, e]))");
  for (const auto& st : s)
    for_each_stmt(st, [](const Stmt& x) {
      if (x.kind == StmtKind::For) {
        EXPECT_EQ(x.from, 0);
      }
    });
}

TEST(Frontend, ContractionLoopsAreTargetAxesThenReducedAxesInOrderOfAppearance) {
  Routine r = lower_text(R"(
axes i=2 j=3 k=4 l=5
input a[i,k,l] : f64
input w[l,k,j] : f64
y[j,i] : f64 = a[i,k,l] * w[l,k,j]
output y
)");
  ASSERT_EQ(top(r).size(), 2u);
  EXPECT_EQ(top(r)[0]->kind, StmtKind::Zero);
  EXPECT_THAT(loops(top(r)[1]), ElementsAre("j", "i", "k", "l"));
  const Stmt& outer = *top(r)[1];
  EXPECT_EQ(outer.to, 2);  // extent 3 -> 0..2
  EXPECT_EQ(print_expr(*innermost(top(r)[1]).value), "add.f64(y[j, i], mul.f64(a[i, k, l], w[l, k, j]))");
}

TEST(Frontend, ImplicitSumEqualsExplicitSum) {
  const char* implicit = "axes i=2 j=3\ninput a[i,j] : f32\ny[i] = a[i,j]\noutput y\n";
  const char* explicit_ = "axes i=2 j=3\ninput a[i,j] : f32\ny[i] = sum(j) a[i,j]\noutput y\n";
  EXPECT_TRUE(equal(lower_text(implicit), lower_text(explicit_)));
}

TEST(Frontend, IndexPredicatesLowerToI32ComparisonsWithoutAMaskTensor) {
  Routine r = lower_text(R"(
axes s=4 t=16
input x[s,t] : f32
a[s,t] = where(t <= s, x[s,t], -inf)
b[s,t] = where(t < 12 - 3, x[s,t], 0)
c[s,t] = where(t < 2 || 2*s >= t + 1, x[s,t], nan)
d[s,t] = where(!(t == s), x[s,t], 1.5)
e2[s,t] = where(x[s,t] < 0.5, x[s,t], 0)
f[s,t] = x[s,t] * t
output a, b, c, d, e2, f
)");
  const auto& s = top(r);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(print_expr(*innermost(s[0]).value),
            "where.f32(lt.i32(idx.i32(t), idx.i32(s + 1)), x[s, t], -inf:f32)");
  EXPECT_EQ(print_expr(*innermost(s[1]).value), "where.f32(lt.i32(idx.i32(t), 9:i32), x[s, t], 0:f32)");
  EXPECT_EQ(print_expr(*innermost(s[2]).value),
            "where.f32(max.i32(lt.i32(idx.i32(t), 2:i32), lt.i32(idx.i32(t + 1), idx.i32(2*s + 1))), x[s, "
            "t], nan:f32)");
  EXPECT_EQ(print_expr(*innermost(s[3]).value),
            "where.f32(eq.i32(eq.i32(idx.i32(t), idx.i32(s)), 0:i32), x[s, t], 1.5:f32)");
  // A comparison involving a tensor value is computed at the target's precision.
  EXPECT_EQ(print_expr(*innermost(s[4]).value), "where.f32(lt.f32(x[s, t], 0.5:f32), x[s, t], 0:f32)");
  // An axis used as a value is its position, embedded at the target's precision.
  EXPECT_EQ(print_expr(*innermost(s[5]).value), "mul.f32(x[s, t], idx.f32(t))");
  for (const auto& n : r.nodes) EXPECT_NE(n.dims, (std::vector<std::int64_t>{4, 4})) << n.name;
}

TEST(Frontend, EveryOperationCarriesTheTargetPrecision) {
  Routine r = lower_text(R"(
axes i=3 j=2
precision f16
input a[i,j] : f32
input w[j] : bf16
y[i] : f64 = a[i,j] * w[j]
z[i,j] = exp(-a[i,j]) / (y[i] + 1)
output z
)");
  for (const auto& s : top(r)) {
    if (s->kind != StmtKind::For) continue;
    const Stmt& set_stmt = innermost(s);
    const Prec want = r.find_node(set_stmt.name)->prec;
    for_each_expr(set_stmt.value, [&](const Expr& e) {
      if (e.kind == ExprKind::Unary || e.kind == ExprKind::Binary || e.kind == ExprKind::Const) {
        EXPECT_EQ(e.prec, want) << print_expr(e);
      }
      if (e.kind == ExprKind::Get) {
        EXPECT_EQ(e.prec, r.find_node(e.name)->prec) << print_expr(e);
      }
    });
  }
  EXPECT_EQ(r.find_node("y")->prec, Prec::F64);
  EXPECT_EQ(r.find_node("z")->prec, Prec::F16);
}

TEST(Frontend, NodesAreMaterializedWithInputAndOutputFlags) {
  Routine r = lower_text(kSoftmax);
  EXPECT_EQ(r.name, "main");
  ASSERT_EQ(r.nodes.size(), 11u);
  for (const auto& n : r.nodes) EXPECT_EQ(n.mode, MemMode::Materialized) << n.name;
  EXPECT_TRUE(r.find_node("q")->is_input);
  EXPECT_FALSE(r.find_node("q")->is_output);
  EXPECT_TRUE(r.find_node("o")->is_output);
  EXPECT_FALSE(r.find_node("m")->is_input || r.find_node("m")->is_output);
  EXPECT_EQ(r.find_node("scores")->dims, (std::vector<std::int64_t>{1, 4, 2, 4}));
  Routine named = lower_text(std::string("routine attn\nattr seq_q = 4\n") + kSoftmax);
  EXPECT_EQ(named.name, "attn");
  EXPECT_EQ(named.attrs.at("seq_q"), 4);
}

TEST(Frontend, LoweredRoutinesPassTheCheckerAndRoundTripThroughText) {
  for (const char* src :
       {kSoftmax, "axes i=5\ninput a[i] : bf16\ny[i] : f32 = where(i >= 2, exp(a[i]), -a[i])\noutput y\n"}) {
    Routine r = lower_text(src);
    EXPECT_NO_THROW(check_routine_or_throw(r, "lowered"));
    EXPECT_TRUE(equal(parse_routine(print_routine(r), "printed"), r));
  }
}

TEST(Frontend, InterpretedLoweringComputesTheMaskedSoftmax) {
  Routine r = lower_text(R"(
axes s=3 t=3
input x[s,t] : f64
xm[s,t] : f64 = where(t <= s, x[s,t], -inf)
m[s] : f64 = max(t) xm[s,t]
e[s,t] : f64 = exp(xm[s,t] - m[s])
l[s] : f64 = sum(t) e[s,t]
p[s,t] : f64 = e[s,t] / l[s]
output p
)");
  TensorMap in = testref::make_inputs(r, 7);
  TensorMap out = interpret(r, in);
  const auto& x = in.at("x").data;
  const auto& p = out.at("p").data;
  for (int s = 0; s < 3; ++s) {
    double mx = -INFINITY, sum = 0;
    for (int t = 0; t <= s; ++t) mx = std::max(mx, x[s * 3 + t]);
    for (int t = 0; t <= s; ++t) sum += std::exp(x[s * 3 + t] - mx);
    for (int t = 0; t < 3; ++t) {
      double want = t <= s ? std::exp(x[s * 3 + t] - mx) / sum : 0.0;
      EXPECT_NEAR(p[s * 3 + t], want, 1e-15) << s << "," << t;
    }
  }
}

struct BadSource {
  const char* text;
  int line, col;
  const char* message;
};

TEST(Frontend, ParseErrorsAreLocatedAndMalformed) {
  const BadSource cases[] = {
      {"axes i=2\ninput a[i] : f32\ny[i] = a[i] +\noutput y\n", 3, 14,
       "expected an expression, found end of line"},
      {"axes i=2\ninput a[i] : f99\n", 2, 14, "expected a precision"},
      {"axes i=2\ninput a[i] : f32\ny[i] = a[j]\noutput y\n", 3, 8, "unknown axis 'j'"},
      {"axes i=2\ninput a[i] : f32\ny[i] = b[i]\noutput y\n", 3, 8, "unknown tensor 'b'"},
      {"axes i=2 j=3\ninput a[i] : f32\ny[i] = a[j]\noutput y\n", 3, 8, "axis 'j' has extent 3"},
      {"axes i=2\ninput a[i] : f32\ny[i] = a[i]\ny[i] = a[i]\noutput y\n", 4, 1, "already defined"},
      {"axes i=2 j=2\ninput a[i,j] : f32\ny[i] = max(j) a[i,j] + max(j) a[i,j]\noutput y\n", 3, 24,
       "a reduction must be the whole right-hand side"},
      {"axes i=2 j=2\ninput a[i,j] : f32\ny[i] = sum(i) a[i,j]\noutput y\n", 3, 1,
       "both kept in the target and reduced"},
      {"axes i=2 j=2\ninput a[i,j] : f32\ny[i] = max(j) a[i,i]\noutput y\n", 3, 15, "diagonal"},
      {"axes i=0\n", 1, 6, "extent 0"},
      {"axes i=2\ninput a[i] : f32\ny[i] = a[i] $ 2\n", 3, 13, "unexpected character '$'"},
      {"axes i=2\ninput a[i] : f32\ny[i] = a[i]\n", 4, 1, "no output"},
      {"axes i=2\ninput for[i] : f32\n", 2, 7, "reserved word"},
      {"axes i=2\ninput a[i] : f32\ny[i] = a[i] < 1 < 2\noutput y\n", 3, 17,
       "expected end of line, found '<'"},
      {"axes i=2\ninput a[i] : f32\ny[i] = where(a[i], 1)\noutput y\n", 3, 21, "expected ',', found ')'"},
      {"axes i=2\ninput a[i] : f32\ny[i] = a[i]\noutput z\n", 4, 8, "unknown tensor 'z' in output"},
      {"axes i=2\ninput a[i] : f32\ny[i] = a[i]\ngrad a\n", 4, 6, "needs both 'grad'"},
      {"axes i=2\ninput a[i] : f32\ninput s[i] : f32\ny[i] = a[i]\ngrad y\nloss y * s\n", 5, 6,
       "not an input"},
      {"axes i=2\ninput a[i] : i32\ny[i] : i32 = a[i]\noutput y\n", 3, 1, "float precision"},
      {"axes i=2\ninput a[i] : f32\ny[i] = (((a[i]\noutput y\n", 4, 1, "expected ')', found 'output'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      lower_text(c.text);
      ADD_FAILURE() << "no error";
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitMalformed);
      EXPECT_EQ(e.file(), "test.te");
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_EQ(e.col(), c.col) << e.what();
      EXPECT_THAT(e.message(), HasSubstr(c.message));
    }
  }
}

TEST(Frontend, ParserRejectsEveryTruncationCleanlyAndDeepNesting) {
  // Every prefix of a valid file either lowers or is a located malformed-input error.
  const std::string src = kSoftmax;
  for (std::size_t n = 0; n <= src.size(); ++n) {
    try {
      lower_text(src.substr(0, n));
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitMalformed) << n;
      EXPECT_GT(e.line(), 0) << n << ": " << e.what();
    }
  }
  std::string deep = "axes i=2\ninput a[i] : f32\ny[i] = " + std::string(100000, '(') + "a[i]\n";
  try {
    lower_text(deep);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.message(), HasSubstr("nested deeper than 256"));
  }
}

TEST(Frontend, BuilderRejectsInvalidPrograms) {
  fe::ProgramBuilder b("built");
  b.axis("i", 3);
  b.input("a", {"i"}, Prec::F32);
  EXPECT_THROW(b.axis("a", 2), UserError);  // name taken by a tensor
  EXPECT_THROW(b.assign("y", {"i", "i"}, Prec::F32, fe::read("a", {"i"})),
               UserError);  // repeated target axis
  EXPECT_THROW(b.assign("y", {"i"}, Prec::F32, fe::read("a", {"i"}), fe::Reduce::Sum, {"j"}), UserError);
  EXPECT_THROW(b.finish(), UserError);  // no output yet
  b.assign("y", {"i"}, Prec::F32, fe::read("a", {"i"}) * fe::cst(2));
  b.output("y");
  EXPECT_THROW(b.output("y"), UserError);
  EXPECT_THROW(b.output("a"), UserError);  // inputs are not outputs
  fe::Program p = b.finish();
  EXPECT_EQ(p.assignments.size(), 1u);
  EXPECT_EQ(p.find_tensor("y")->dims, (std::vector<std::int64_t>{3}));
}

int run_tool(const std::string& args) {
  int rc = std::system((std::string(FLASHPROOF_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(Frontend, LowerCommandExitCodes) {
  // A per-process directory: several build trees may run this test at once.
  const std::string dir = ::testing::TempDir() + "/fp_frontend_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string good = dir + "/fp_frontend_good.te", bad = dir + "/bad.te", out = dir + "/out.fp";
  std::ofstream(good) << kSoftmax;
  std::ofstream(bad) << "axes i=2\ny[i] = \n";
  EXPECT_EQ(run_tool("lower " + good + " -o " + out), 0);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("# command: "));
  EXPECT_THAT(text, HasSubstr("routine fp_frontend_good {"));
  EXPECT_TRUE(
      equal(parse_routine(text, out), lower_text(std::string("routine fp_frontend_good\n") + kSoftmax)));
  EXPECT_EQ(run_tool("lower " + bad), kExitMalformed);
  EXPECT_EQ(run_tool("lower " + dir + "/fp_frontend_missing.te"), kExitMissingInput);
  EXPECT_EQ(run_tool("lower"), kExitUsage);
  EXPECT_EQ(run_tool("lower --help"), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fp
