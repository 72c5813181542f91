// The composed attention programs: their nest sequence (what the rewrite tier recognizes), the
// interpreter on them against the independent float64 reference (attention_reference.h) across
// masks, fills, rectangular shapes and dropout — forward and training-step gradients — central
// finite differences for every layout, invalid specs, and the `attention` subcommand.
//
// Criterion (attention_reference.h): |got − ref| <= tol·(|ref| + rms(ref)), NaN exactly where the
// reference has NaN; tol = 1e-12 at f64 and 1e-5 at f32.

#include "frontend/attention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "attention_reference.h"
#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "core/text_parser.h"
#include "core/text_printer.h"

namespace fp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// "zero N" or "N@loops" for each top-level statement.
std::vector<std::string> shape(const Routine& r) {
  std::vector<std::string> out;
  for (const auto& s : r.body->body) {
    if (s->kind == StmtKind::Zero) {
      out.push_back("zero " + s->name);
      continue;
    }
    std::string l;
    const Stmt* cur = s.get();
    while (cur->kind == StmtKind::For) {
      l += cur->sym;
      cur = cur->body[0].get();
    }
    out.push_back(cur->name + "@" + l);
  }
  return out;
}

std::string value_of(const Routine& r, const std::string& node, int nth = 0) {
  int seen = 0;
  for (const auto& s : r.body->body) {
    const Stmt* cur = s.get();
    while (cur->kind == StmtKind::For) cur = cur->body[0].get();
    if (cur->kind == StmtKind::Set && cur->name == node && seen++ == nth) return print_expr(*cur->value);
  }
  return "(none)";
}

std::vector<std::string> names(const std::vector<const Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->name);
  return out;
}

AttentionSpec spec_of(std::int64_t sq, std::int64_t sk, std::string mask, std::string fill = "-inf") {
  AttentionSpec s;
  s.batch = 2;
  s.heads = 2;
  s.sq = sq;
  s.sk = sk;
  s.d = 3;
  s.e = 2;
  s.mask = std::move(mask);
  s.mask_fill = std::move(fill);
  return s;
}

// ---- structure ---------------------------------------------------------------------------------

TEST(Attention, ForwardLowersToTheRawNestSequence) {
  AttentionSpec s = spec_of(3, 5, "causal");
  Routine r = build_attention(s);
  EXPECT_THAT(shape(r), ElementsAre("zero scores", "scores@bshtd", "scaled@bsht", "masked@bsht",
                                    "row_max@bsh", "row_max@bsht", "shifted@bsht", "exps@bsht",
                                    "zero row_sum", "row_sum@bsht", "probs@bsht", "zero o", "o@bshet"));
  EXPECT_EQ(value_of(r, "scores"), "add.f32(scores[b, s, h, t], mul.f32(q[b, s, h, d], k[b, t, h, d]))");
  EXPECT_EQ(value_of(r, "scaled"), "mul.f32(scores[b, s, h, t], 0.5773502588272095:f32)");
  // Causal with sk - sq = 2: key t visible iff t <= s + 2.
  EXPECT_EQ(value_of(r, "masked"),
            "where.f32(lt.i32(idx.i32(t), idx.i32(s + 3)), scaled[b, s, h, t], -inf:f32)");
  EXPECT_EQ(value_of(r, "row_max", 0), "-inf:f32");
  EXPECT_EQ(value_of(r, "row_max", 1), "max.f32(row_max[b, s, h], masked[b, s, h, t])");
  EXPECT_EQ(value_of(r, "shifted"), "sub.f32(masked[b, s, h, t], row_max[b, s, h])");
  EXPECT_EQ(value_of(r, "exps"), "exp.f32(shifted[b, s, h, t])");
  EXPECT_EQ(value_of(r, "row_sum"), "add.f32(row_sum[b, s, h], exps[b, s, h, t])");
  EXPECT_EQ(value_of(r, "probs"), "div.f32(exps[b, s, h, t], row_sum[b, s, h])");
  EXPECT_EQ(value_of(r, "o"), "add.f32(o[b, s, h, e], mul.f32(probs[b, s, h, t], v[b, t, h, e]))");
  EXPECT_EQ(r.name, "attention_forward");
  EXPECT_EQ(r.attrs, (std::map<std::string, std::int64_t>{{"seq_k", 5}, {"seq_q", 3}}));
  EXPECT_THAT(names(r.inputs()), ElementsAre("q", "k", "v"));
  EXPECT_THAT(names(r.outputs()), ElementsAre("o"));
  for (const auto& n : r.nodes) EXPECT_EQ(n.mode, MemMode::Materialized);
  EXPECT_NO_THROW(check_routine_or_throw(r, "attention"));
}

TEST(Attention, MaskVariantsAndDropoutShapes) {
  Routine none = build_attention(spec_of(4, 4, "none"));
  EXPECT_EQ(value_of(none, "masked"), "(none)");
  EXPECT_EQ(value_of(none, "row_max", 1), "max.f32(row_max[b, s, h], scaled[b, s, h, t])");
  EXPECT_EQ(value_of(build_attention(spec_of(4, 4, "prefix:2", "nan")), "masked"),
            "where.f32(max.i32(lt.i32(idx.i32(t), 2:i32), lt.i32(idx.i32(t), idx.i32(s + 1))), scaled[b, s, "
            "h, t], nan:f32)");
  EXPECT_EQ(value_of(build_attention(spec_of(4, 6, "padding:2", "-1e4")), "masked"),
            "where.f32(lt.i32(idx.i32(t), 4:i32), scaled[b, s, h, t], -10000:f32)");
  AttentionSpec d = spec_of(2, 3, "none");
  d.dropout = 0.25;
  Routine r = build_attention(d);
  EXPECT_THAT(shape(r), ElementsAre("zero scores", "scores@bshtd", "scaled@bsht", "row_max@bsh",
                                    "row_max@bsht", "shifted@bsht", "exps@bsht", "zero row_sum",
                                    "row_sum@bsht", "probs@bsht", "dropped@bsht", "zero o", "o@bshet"));
  EXPECT_EQ(value_of(r, "dropped"),
            "div.f32(mul.f32(probs[b, s, h, t], lt.f32(0.25:f32, dropout_u[b, s, h, t])), 0.75:f32)");
  EXPECT_THAT(names(r.inputs()), ElementsAre("q", "k", "v", "dropout_u"));
  EXPECT_EQ(r.find_node("dropout_u")->dims, (std::vector<std::int64_t>{2, 2, 2, 3}));
}

TEST(Attention, BandedAndRandomMasks) {
  // banded:W keeps the W latest keys up to the causal diagonal: s + off - W < t.
  EXPECT_EQ(
      value_of(build_attention(spec_of(4, 6, "banded:2")), "masked"),
      "where.f32(min.i32(lt.i32(idx.i32(s), idx.i32(t)), lt.i32(idx.i32(t), idx.i32(s + 3))), scaled[b, s, "
      "h, t], -inf:f32)");
  // random:SEED is data: an input mask_keep of the scores' shape and the seed as an attribute.
  AttentionSpec rs = spec_of(3, 5, "random:42");
  rs.layers = 2;
  rs.d = rs.e = 2;
  rs.dropout = 0.5;
  Routine r = build_attention(rs);
  EXPECT_EQ(value_of(r, "masked_1"),
            "where.f32(lt.f32(0.5:f32, mask_keep_1[b, s, h, t]), scaled_1[b, s, h, t], -inf:f32)");
  EXPECT_THAT(names(r.inputs()), ElementsAre("q", "k_1", "v_1", "dropout_u_1", "mask_keep_1", "k_2", "v_2",
                                             "dropout_u_2", "mask_keep_2"));
  EXPECT_EQ(r.find_node("mask_keep_2")->dims, (std::vector<std::int64_t>{2, 3, 2, 5}));
  EXPECT_EQ(r.attrs.at("mask_seed"), 42);
  EXPECT_NO_THROW(check_routine_or_throw(r, "attention"));
  rs.train = true;
  EXPECT_EQ(build_attention(rs).attrs.at("mask_seed"), 42);
  // The pattern is a function of (s, t, SEED) only, of both values, the same for every b and h.
  TensorMap in = random_inputs(r, 1), other = random_inputs(r, 2);
  EXPECT_EQ(in.at("mask_keep_1").data, other.at("mask_keep_1").data);
  EXPECT_EQ(in.at("mask_keep_1").data, in.at("mask_keep_2").data);
  int ones = 0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t s = 0; s < 3; ++s)
      for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t t = 0; t < 5; ++t) {
          const double bit =
              in.at("mask_keep_1").data[static_cast<std::size_t>(((b * 3 + s) * 2 + h) * 5 + t)];
          EXPECT_EQ(bit, random_mask_bit(42, s, t));
          ones += bit == 1;
        }
  EXPECT_GT(ones, 0);
  EXPECT_LT(ones, 60);
  // A layer-1 routine of random:1 and random:2 differ in their pattern (over 64 cells).
  rs = spec_of(8, 8, "random:1");
  TensorMap m1 = random_inputs(build_attention(rs), 5);
  rs.mask = "random:2";
  EXPECT_NE(m1.at("mask_keep").data, random_inputs(build_attention(rs), 5).at("mask_keep").data);
}

TEST(Attention, TrainingStepBackwardHasTheComposedShape) {
  AttentionSpec s = spec_of(3, 3, "causal");
  s.train = true;
  Routine r = build_attention(s);
  EXPECT_EQ(r.name, "attention_train");
  EXPECT_THAT(names(r.inputs()), ElementsAre("q", "k", "v", "dout"));
  EXPECT_THAT(names(r.outputs()), ElementsAre("grad_q", "grad_k", "grad_v"));
  auto sh = shape(r);
  // forward (13 statements), zeroing of every gradient node, then one accumulation per adjoint.
  std::vector<std::string> rest(sh.begin() + 13, sh.end());
  EXPECT_THAT(rest,
              ElementsAre("zero grad_probs", "zero grad_exps", "zero grad_row_sum", "zero grad_shifted",
                          "zero grad_masked", "zero grad_scaled", "zero grad_scores", "zero grad_q",
                          "zero grad_k", "zero grad_v", "grad_probs@bshet", "grad_v@bshet", "grad_exps@bsht",
                          "grad_row_sum@bsht", "grad_exps@bsht", "grad_shifted@bsht", "grad_masked@bsht",
                          "grad_scaled@bsht", "grad_scores@bsht", "grad_q@bshtd", "grad_k@bshtd"));
  EXPECT_EQ(value_of(r, "grad_probs"),
            "add.f32(grad_probs[b, s, h, t], mul.f32(dout[b, s, h, e], v[b, t, h, e]))");
  EXPECT_EQ(value_of(r, "grad_v"),
            "add.f32(grad_v[b, t, h, e], mul.f32(probs[b, s, h, t], dout[b, s, h, e]))");
  EXPECT_EQ(value_of(r, "grad_exps", 0),
            "add.f32(grad_exps[b, s, h, t], div.f32(grad_probs[b, s, h, t], row_sum[b, s, h]))");
  EXPECT_EQ(
      value_of(r, "grad_row_sum"),
      "add.f32(grad_row_sum[b, s, h], mul.f32(grad_probs[b, s, h, t], div.f32(neg.f32(exps[b, s, h, t]), "
      "mul.f32(row_sum[b, s, h], row_sum[b, s, h]))))");
  EXPECT_EQ(value_of(r, "grad_exps", 1), "add.f32(grad_exps[b, s, h, t], grad_row_sum[b, s, h])");
  EXPECT_EQ(value_of(r, "grad_shifted"),
            "add.f32(grad_shifted[b, s, h, t], mul.f32(grad_exps[b, s, h, t], exps[b, s, h, t]))");
  EXPECT_EQ(value_of(r, "grad_masked"), "add.f32(grad_masked[b, s, h, t], grad_shifted[b, s, h, t])");
  EXPECT_EQ(value_of(r, "grad_scaled"),
            "add.f32(grad_scaled[b, s, h, t], where.f32(lt.i32(idx.i32(t), idx.i32(s + 1)), grad_masked[b, "
            "s, h, t], 0:f32))");
  EXPECT_EQ(value_of(r, "grad_scores"),
            "add.f32(grad_scores[b, s, h, t], mul.f32(grad_scaled[b, s, h, t], 0.5773502588272095:f32))");
  EXPECT_EQ(value_of(r, "grad_q"),
            "add.f32(grad_q[b, s, h, d], mul.f32(grad_scores[b, s, h, t], k[b, t, h, d]))");
  EXPECT_EQ(value_of(r, "grad_k"),
            "add.f32(grad_k[b, t, h, d], mul.f32(q[b, s, h, d], grad_scores[b, s, h, t]))");
  // The max is not differentiated: nothing reads or writes a row_max gradient.
  EXPECT_EQ(r.find_node("grad_row_max"), nullptr);
  EXPECT_NO_THROW(check_routine_or_throw(r, "attention"));
}

TEST(Attention, NonLeafAndStackedLayouts) {
  AttentionSpec s = spec_of(3, 3, "causal");
  s.leaf = false;
  s.train = true;
  Routine r = build_attention(s);
  EXPECT_THAT(names(r.inputs()), ElementsAre("x", "w_q", "w_k", "w_v", "w_o", "dout"));
  EXPECT_THAT(names(r.outputs()), ElementsAre("grad_x", "grad_w_q", "grad_w_k", "grad_w_v", "grad_w_o"));
  EXPECT_EQ(r.find_node("x")->dims, (std::vector<std::int64_t>{2, 3, 6}));  // dm = heads * d
  EXPECT_EQ(value_of(r, "k"), "add.f32(k[b, t, h, d], mul.f32(x[b, t, c], w_k[c, h, d]))");
  EXPECT_EQ(value_of(r, "y"), "add.f32(y[b, s, c], mul.f32(o[b, s, h, e], w_o[h, e, c]))");
  EXPECT_NO_THROW(check_routine_or_throw(r, "attention"));

  AttentionSpec l = spec_of(2, 3, "none");
  l.e = l.d;
  l.layers = 2;
  Routine st = build_attention(l);
  EXPECT_THAT(names(st.inputs()), ElementsAre("q", "k_1", "v_1", "k_2", "v_2"));
  EXPECT_THAT(names(st.outputs()), ElementsAre("o"));
  EXPECT_EQ(value_of(st, "scores_2"),
            "add.f32(scores_2[b, s, h, t], mul.f32(o_1[b, s, h, d], k_2[b, t, h, d]))");
  EXPECT_NO_THROW(check_routine_or_throw(st, "attention"));

  AttentionSpec nl = spec_of(3, 3, "none");
  nl.leaf = false;
  nl.layers = 3;
  nl.dmodel = 5;
  Routine ns = build_attention(nl);
  EXPECT_THAT(names(ns.outputs()), ElementsAre("y"));
  EXPECT_EQ(value_of(ns, "q_3"), "add.f32(q_3[b, s, h, d], mul.f32(y_2[b, s, c], w_q_3[c, h, d]))");
  EXPECT_EQ(ns.find_node("w_o_2")->dims, (std::vector<std::int64_t>{2, 2, 5}));
}

TEST(Attention, InvalidSpecsAreUsageErrors) {
  auto bad = [](auto mutate) {
    AttentionSpec s;
    mutate(s);
    try {
      build_attention(s);
      return std::string("no error");
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitUsage) << e.what();
      return e.message();
    }
  };
  EXPECT_THAT(bad([](AttentionSpec& s) { s.sq = 0; }), HasSubstr("--sq 0"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.d = std::int64_t{1} << 30; }), HasSubstr("--d"));
  EXPECT_THAT(bad([](AttentionSpec& s) {
                s.batch = 1 << 20;
                s.sq = 1 << 20;
                s.sk = 1 << 20;
              }),
              HasSubstr("2^40"));
  EXPECT_THAT(bad([](AttentionSpec& s) {
                s.leaf = false;
                s.heads = 1 << 20;
                s.dmodel = 1 << 20;
              }),
              HasSubstr("2^40"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.mask = "diagonal"; }), HasSubstr("unknown mask"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.mask = "prefix:x"; }), HasSubstr("non-negative integer"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.mask = "padding:9"; }), HasSubstr("more than the 4 keys"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.mask_fill = "lots"; }), HasSubstr("mask fill"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.mask = "banded:0"; }), HasSubstr("window width from 1"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.mask = "banded:"; }), HasSubstr("non-negative integer"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.mask = "random:-3"; }), HasSubstr("non-negative integer"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.mask = "random"; }), HasSubstr("banded:W or random:SEED"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.dropout = 1; }), HasSubstr("dropout"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.scale = INFINITY; }), HasSubstr("scale"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.precision = Prec::I32; }), HasSubstr("float"));
  EXPECT_THAT(bad([](AttentionSpec& s) { s.layers = 0; }), HasSubstr("layers"));
  EXPECT_THAT(bad([](AttentionSpec& s) {
                s.layers = 2;
                s.e = 4;
              }),
              HasSubstr("--d equal to --e"));
  EXPECT_THAT(bad([](AttentionSpec& s) {
                s.leaf = false;
                s.sk = 5;
              }),
              HasSubstr("--sq equal to --sk"));
}

// `attention --precision f32 --scale 1e39` wrote inf:f32; f16 70000 overflowed; 1e-50 became 0.
TEST(Attention, ScaleOutsideThePrecisionsNormalRangeIsAUsageError) {
  auto message = [](Prec p, double scale) {
    AttentionSpec s;
    s.precision = p;
    s.scale = scale;
    try {
      build_attention(s);
      return std::string("no error");
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitUsage) << e.what();
      return e.message();
    }
  };
  EXPECT_THAT(message(Prec::F32, 1e39), HasSubstr("not representable at f32 (it rounds to inf)"));
  EXPECT_THAT(message(Prec::F16, 70000),
              HasSubstr("(it rounds to inf); expected 0 or a magnitude from 2^-14"));
  EXPECT_THAT(message(Prec::F32, 1e-50), HasSubstr("(it rounds to 0)"));
  EXPECT_THAT(message(Prec::F16, 1e-6), HasSubstr("(it rounds to the subnormal"));
  EXPECT_THAT(message(Prec::F64, 1e-310), HasSubstr("not representable at f64"));
  for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16})
    for (double ok : {0.0, -0.125, min_normal(p), max_finite(p)}) {
      AttentionSpec s;
      s.precision = p;
      s.scale = ok;
      EXPECT_NO_THROW(build_attention(s)) << prec_name(p) << " " << ok;
    }
}

// ---- numerics against the float64 reference ------------------------------------------------

struct NumericCase {
  const char* mask;
  const char* fill;
  std::int64_t sq, sk;
  double dropout;
};

void PrintTo(const NumericCase& c, std::ostream* os) {
  *os << c.mask << " fill " << c.fill << " " << c.sq << "x" << c.sk << " dropout " << c.dropout;
}

const NumericCase kCases[] = {
    {"none", "-inf", 3, 5, 0},      {"causal", "-inf", 4, 4, 0},    {"causal", "-inf", 5, 3, 0},
    {"causal", "-inf", 3, 5, 0},    {"prefix:2", "-inf", 4, 4, 0},  {"padding:1", "-inf", 3, 4, 0},
    {"causal", "-1e4", 5, 3, 0},    {"causal", "nan", 4, 4, 0},     {"prefix:1", "inf", 3, 3, 0},
    {"padding:4", "-inf", 2, 4, 0}, {"causal", "-inf", 3, 4, 0.25}, {"none", "-inf", 1, 1, 0.5},
    {"banded:2", "-inf", 4, 6, 0},  {"banded:1", "-inf", 5, 3, 0},  {"banded:3", "-1e4", 4, 4, 0.25},
    {"random:7", "-inf", 4, 5, 0},  {"random:3", "-1e4", 3, 3, 0.25}, {"random:0", "nan", 5, 2, 0},
};

struct Outcome {
  TensorMap in, out;
  testref::AttentionReference ref;
};

Outcome run(const AttentionSpec& s, std::uint64_t seed) {
  Routine r = build_attention(s);
  Outcome o;
  o.in = testref::make_inputs(r, seed);
  o.out = interpret(r, o.in);
  auto data = [&](const char* n) { return o.in.count(n) ? o.in.at(n).data : std::vector<double>{}; };
  o.ref = testref::attention_reference(s, data("q"), data("k"), data("v"), data("dout"), data("dropout_u"));
  return o;
}

class AttentionNumerics : public ::testing::TestWithParam<NumericCase> {
 protected:
  AttentionSpec spec(Prec p, bool train) const {
    const NumericCase& c = GetParam();
    AttentionSpec s = spec_of(c.sq, c.sk, c.mask, c.fill);
    s.dropout = c.dropout;
    s.precision = p;
    s.train = train;
    return s;
  }
};

TEST_P(AttentionNumerics, ForwardMatchesReference) {
  for (auto [p, tol] : {std::pair{Prec::F64, 1e-12}, std::pair{Prec::F32, 1e-5}}) {
    SCOPED_TRACE(prec_name(p));
    Outcome o = run(spec(p, false), 11);
    EXPECT_TRUE(testref::close(o.out.at("o").data, o.ref.o, tol, "o"));
  }
}

TEST_P(AttentionNumerics, TrainingGradientsMatchReference) {
  for (auto [p, tol] : {std::pair{Prec::F64, 1e-12}, std::pair{Prec::F32, 1e-5}}) {
    SCOPED_TRACE(prec_name(p));
    Outcome o = run(spec(p, true), 12);
    EXPECT_TRUE(testref::close(o.out.at("grad_q").data, o.ref.dq, tol, "grad_q"));
    EXPECT_TRUE(testref::close(o.out.at("grad_k").data, o.ref.dk, tol, "grad_k"));
    EXPECT_TRUE(testref::close(o.out.at("grad_v").data, o.ref.dv, tol, "grad_v"));
  }
}

INSTANTIATE_TEST_SUITE_P(Attention, AttentionNumerics, ::testing::ValuesIn(kCases));

TEST(Attention, FullyMaskedRowWithMinusInfinityFillIsNaN) {
  // Causal with sq = 5 > sk = 3: queries 0 and 1 see no key (t <= s - 2).
  Outcome o = run(spec_of(5, 3, "causal"), 5);
  const auto& out = o.out.at("o").data;  // [2, 5, 2, 2]
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t s = (i / 4) % 5;
    EXPECT_EQ(std::isnan(out[i]), s < 2) << i;
  }
}

TEST(Attention, NaNFillPoisonsExactlyTheRowsWithAMaskedKey) {
  Outcome o = run(spec_of(4, 4, "causal", "nan"), 6);
  const auto& out = o.out.at("o").data;
  std::size_t nans = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t s = (i / 4) % 4;
    EXPECT_EQ(std::isnan(out[i]), s < 3) << i;  // only the last query sees every key
    nans += std::isnan(out[i]);
  }
  EXPECT_EQ(nans, 2u * 3u * 2u * 2u);
}

// ---- finite differences ---------------------------------------------------------------------

void expect_gradients_match_finite_differences(AttentionSpec s) {
  s.precision = Prec::F64;
  s.train = true;
  Routine train = build_attention(s);
  AttentionSpec f = s;
  f.train = false;
  Routine forward = build_attention(f);
  TensorMap in = testref::make_inputs(train, 99);
  TensorMap grads = interpret(train, in);
  const std::string out = s.leaf ? "o" : "y";
  auto loss = [&](const TensorMap& x) {
    TensorMap fin;
    for (const Node* n : forward.inputs()) fin[n->name] = x.at(n->name);
    return testref::dot_loss(interpret(forward, fin), x, {{out, "dout"}});
  };
  for (const Node* g : train.outputs()) {
    const std::string leaf = g->name.substr(5);  // grad_<leaf>
    std::vector<double> fd = testref::finite_difference(in, leaf, 1e-5, loss);
    EXPECT_TRUE(testref::close(grads.at(g->name).data, fd, 1e-6, g->name));
  }
}

TEST(Attention, TrainingGradientsMatchFiniteDifferences) {
  AttentionSpec s;
  s.batch = 1;
  s.heads = 2;
  s.d = 2;
  s.e = 2;
  for (auto [mask, fill, sq, sk] :
       {std::tuple{"none", "-inf", 3, 4}, std::tuple{"causal", "-inf", 3, 3},
        std::tuple{"prefix:1", "-inf", 3, 4}, std::tuple{"padding:1", "-inf", 2, 3},
        std::tuple{"causal", "-1e4", 4, 3}}) {
    SCOPED_TRACE(fmt::format("{} {} {}x{}", mask, fill, sq, sk));
    s.mask = mask;
    s.mask_fill = fill;
    s.sq = sq;
    s.sk = sk;
    expect_gradients_match_finite_differences(s);
  }
  s.mask = "causal";
  s.mask_fill = "-inf";
  s.sq = s.sk = 3;
  s.dropout = 0.3;
  SCOPED_TRACE("dropout");
  expect_gradients_match_finite_differences(s);
}

TEST(Attention, NonLeafAndStackedGradientsMatchFiniteDifferences) {
  AttentionSpec s;
  s.batch = 1;
  s.heads = 2;
  s.sq = s.sk = 3;
  s.d = s.e = 2;
  s.mask = "causal";
  s.leaf = false;
  {
    SCOPED_TRACE("non-leaf");
    expect_gradients_match_finite_differences(s);
  }
  s.layers = 2;
  s.dmodel = 3;
  {
    SCOPED_TRACE("non-leaf, 2 layers");
    expect_gradients_match_finite_differences(s);
  }
  s.leaf = true;
  s.sk = 4;
  {
    SCOPED_TRACE("leaf, 2 layers");
    expect_gradients_match_finite_differences(s);
  }
}

TEST(Attention, NarrowPrecisionsBuildCheckAndRun) {
  for (Prec p : {Prec::F16, Prec::BF16}) {
    AttentionSpec s = spec_of(3, 4, "causal");
    s.precision = p;
    s.train = true;
    Routine r = build_attention(s);
    EXPECT_NO_THROW(check_routine_or_throw(r, "attention"));
    for (const auto& n : r.nodes) EXPECT_EQ(n.prec, p);
    TensorMap out = interpret(r, testref::make_inputs(r, 1));
    for (double x : out.at("grad_q").data) EXPECT_TRUE(std::isfinite(x));
  }
}

// ---- the subcommand ------------------------------------------------------------------------

int run_tool(const std::string& args) {
  int rc = std::system((std::string(FLASHPROOF_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(Attention, CommandWritesTheRoutineAndRejectsBadFlags) {
  // A per-process name: several build trees may run this test at once.
  const std::string path = ::testing::TempDir() + "/fp_attention_cmd_" + std::to_string(::getpid()) + ".fp";
  ASSERT_EQ(
      run_tool("attention --sq 2 --sk 3 --d 4 --e 4 --heads 2 --mask causal --precision f64 --mode train "
               "--dropout 0.1 -o " +
               path),
      0);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("# command: flashproof attention --sq 2"));
  AttentionSpec s;
  s.sq = 2;
  s.sk = 3;
  s.d = s.e = 4;
  s.heads = 2;
  s.mask = "causal";
  s.precision = Prec::F64;
  s.train = true;
  s.dropout = 0.1;
  EXPECT_TRUE(equal(parse_routine(text, path), build_attention(s)));
  ASSERT_EQ(run_tool("attention --no-leaf --scale 0.5 --layers 2 -o " + path), 0);
  EXPECT_EQ(run_tool("attention --help"), 0);
  EXPECT_EQ(run_tool("attention --mask diagonal"), kExitUsage);
  EXPECT_EQ(run_tool("attention --precision f99"), kExitUsage);
  EXPECT_EQ(run_tool("attention --mode sideways"), kExitUsage);
  EXPECT_EQ(run_tool("attention --sq 0"), kExitUsage);
  EXPECT_EQ(run_tool("attention --sq many"), kExitUsage);
  EXPECT_EQ(run_tool("attention --no-leaf --sq 2 --sk 3"), kExitUsage);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace fp
