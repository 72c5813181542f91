// The fuzzing generators (fuzz/): attention cases (every drawn case builds and checks, its text
// round-trips, malformed case text is a located exit-65 error, the generator shrinks to the
// simplest case), look-alikes (each kind applies somewhere and gives a well-formed, different
// routine), hostile data (every class at 100%, random_inputs exactly at 0%) and text mutation
// (deterministic, always a change, never a crash of the parser).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/attention.h"
#include "fuzz/attention_case.h"
#include "fuzz/hostile_data.h"
#include "fuzz/lookalike.h"
#include "fuzz/random_routine.h"
#include "fuzz/text_mutation.h"

namespace fp::fuzz {
namespace {

using ::testing::HasSubstr;

std::string diagnostics(const Routine& r) {
  std::string out;
  for (const auto& d : check_routine(r)) out += d.message + "\n";
  return out;
}

bool same_tensors(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.prec != t.prec || it->second.dims != t.dims ||
        it->second.data.size() != t.data.size())
      return false;
    for (std::size_t i = 0; i < t.data.size(); ++i)
      if (!same_value(t.data[i], it->second.data[i])) return false;
  }
  return true;
}

template <typename T>
rc::Shrinkable<T> sample(const rc::Gen<T>& gen, std::uint64_t seed) {
  return gen(rc::Random(seed), rc::kNominalSize);
}

// ---- attention cases ----------------------------------------------------------------------------

RC_GTEST_PROP(FuzzGenProperty, EveryAttentionCaseBuildsChecksRunsAndRoundTrips, ()) {
  const AttentionCase c = *gen_attention_case();
  const std::string text = attention_case_text(c);
  RC_LOG() << text;
  const Routine r = build_case_routine(c);
  RC_ASSERT(diagnostics(r).empty());
  const TensorMap in = case_inputs(c, r);
  interpret(r, in);
  const AttentionCase back = parse_attention_case(text, "case.json");
  RC_ASSERT(attention_case_text(back) == text);
  RC_ASSERT(equal(build_case_routine(back), r));
  RC_ASSERT(c.spec.sq >= 1 && c.spec.sq <= 12 && c.spec.sk >= 1 && c.spec.sk <= 12);
  RC_ASSERT(c.hostile_percent >= 0 && c.hostile_percent <= 100);
}

TEST(FuzzGen, AttentionCaseOptionsAreRespected) {
  AttentionCaseOptions o;
  o.allow_train = o.allow_lookalikes = o.allow_hostile = false;
  o.max_seq = 3;
  o.max_layers = 1;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const AttentionCase c = sample(gen_attention_case(o), seed).value();
    EXPECT_FALSE(c.spec.train);
    EXPECT_EQ(c.lookalike, Lookalike::None);
    EXPECT_EQ(c.hostile_percent, 0);
    EXPECT_LE(c.spec.sq, 3);
    EXPECT_LE(c.spec.sk, 3);
    EXPECT_EQ(c.spec.layers, 1);
  }
}

TEST(FuzzGen, AttentionCasesCoverTheSpace) {
  std::set<std::string> seen;
  for (std::uint64_t seed = 0; seed < 600; ++seed) {
    const AttentionCase c = sample(gen_attention_case(), seed).value();
    const AttentionSpec& s = c.spec;
    seen.insert("mask:" + s.mask.substr(0, s.mask.find(':')));
    seen.insert("fill:" + s.mask_fill);
    seen.insert(std::string("prec:") + prec_name(s.precision));
    seen.insert(s.leaf ? "leaf" : "non-leaf");
    seen.insert(s.train ? "train" : "forward");
    seen.insert(s.sq == s.sk ? "square" : "rectangular");
    seen.insert(s.scale ? (*s.scale == 0 ? "scale:0" : "scale:set") : "scale:default");
    seen.insert(s.dropout > 0 ? "dropout" : "no-dropout");
    seen.insert(fmt::format("layers:{}", s.layers));
    seen.insert(std::string("lookalike:") + lookalike_name(c.lookalike));
    seen.insert(c.hostile_percent > 0 ? "hostile" : "plain-data");
    if (s.mask == fmt::format("padding:{}", s.sk)) seen.insert("no-key-visible");
    for (const auto& setting : c.settings) seen.insert(setting);
    if (c.settings.empty()) seen.insert("no-settings");
  }
  for (const char* want : {"mask:none",
                           "mask:causal",
                           "mask:prefix",
                           "mask:padding",
                           "mask:banded",
                           "mask:random",
                           "fill:-inf",
                           "fill:nan",
                           "fill:inf",
                           "fill:-1e4",
                           "prec:f64",
                           "prec:f32",
                           "prec:f16",
                           "prec:bf16",
                           "leaf",
                           "non-leaf",
                           "train",
                           "forward",
                           "square",
                           "rectangular",
                           "scale:0",
                           "scale:set",
                           "scale:default",
                           "dropout",
                           "layers:1",
                           "layers:2",
                           "lookalike:none",
                           "hostile",
                           "plain-data",
                           "no-key-visible",
                           "online_softmax=true",
                           "online_softmax_backward=true",
                           "online_softmax_block=1",
                           "online_softmax_block=2",
                           "online_softmax_block=3",
                           "online_softmax_block=4",
                           "online_softmax_block=8",
                           "no-settings"})
    EXPECT_TRUE(seen.count(want)) << want;
  for (Lookalike k : lookalike_kinds())
    EXPECT_TRUE(seen.count(std::string("lookalike:") + lookalike_name(k)));
}

// Always taking the first shrink walks to the simplest case RapidCheck can reach.
TEST(FuzzGen, AttentionCasesShrinkToTheSimplestCase) {
  for (std::uint64_t seed : {3u, 17u, 99u}) {
    rc::Shrinkable<AttentionCase> s = sample(gen_attention_case(), seed);
    for (int steps = 0; steps < 10000; ++steps) {
      auto next = s.shrinks().next();
      if (!next) break;
      s = *next;
    }
    const AttentionCase c = s.value();
    const AttentionSpec& p = c.spec;
    EXPECT_EQ(p.sq, 1);
    EXPECT_EQ(p.sk, 1);
    EXPECT_EQ(p.d, 1);
    EXPECT_EQ(p.e, 1);
    EXPECT_EQ(p.batch, 1);
    EXPECT_EQ(p.heads, 1);
    EXPECT_EQ(p.mask, "none");
    EXPECT_EQ(p.mask_fill, "-inf");
    EXPECT_EQ(p.precision, Prec::F32);
    EXPECT_EQ(p.layers, 1);
    EXPECT_FALSE(p.train);
    EXPECT_TRUE(p.leaf);
    EXPECT_FALSE(p.scale.has_value());
    EXPECT_EQ(p.dropout, 0);
    EXPECT_TRUE(c.settings.empty());
    EXPECT_EQ(c.lookalike, Lookalike::None);
    EXPECT_EQ(c.hostile_percent, 0);
    EXPECT_EQ(c.data_seed, 1u);
  }
}

TEST(FuzzGen, AttentionCaseTextIsStableAndComplete) {
  AttentionCase c;
  c.spec.sq = 3;
  c.spec.sk = 5;
  c.spec.mask = "banded:2";
  c.spec.scale = 0.25;
  c.settings = {"online_softmax=true", "online_softmax_block=2"};
  c.lookalike = Lookalike::ShiftedRead;
  c.lookalike_seed = 7;
  c.data_seed = 18446744073709551615u;
  c.hostile_percent = 30;
  const std::string text = attention_case_text(c);
  EXPECT_EQ(text.substr(0, 30), "{\n  \"spec\": {\n    \"batch\": 1,\n");
  EXPECT_THAT(text, HasSubstr("\"scale\": 0.25"));
  EXPECT_THAT(text, HasSubstr("\"lookalike\": \"shifted-read\""));
  const AttentionCase back = parse_attention_case(text, "c.json");
  EXPECT_EQ(attention_case_text(back), text);
  EXPECT_EQ(back.data_seed, c.data_seed);
  // Missing keys keep their defaults.
  const AttentionCase minimal = parse_attention_case(R"({"spec": {"sq": 2}})", "m.json");
  EXPECT_EQ(minimal.spec.sq, 2);
  EXPECT_EQ(minimal.spec.sk, 4);
  EXPECT_EQ(minimal.data_seed, 1u);
}

struct Malformed {
  const char* text;
  int line;
  const char* message;
};

TEST(FuzzGen, MalformedAttentionCaseTextIsALocatedExit65) {
  const Malformed cases[] = {
      {"{\n  \"spec\": {\n    \"sq\": 2,,\n  }\n}", 3, "malformed JSON"},
      {"[1, 2]", 1, "expected an attention case"},
      {"{\n  \"data_seed\": 1,\n  \"colour\": 3\n}", 3, "unknown key 'colour'"},
      {"{\n  \"spec\": {\n    \"sq\": 2,\n    \"wide\": true\n  }\n}", 4, "unknown spec key 'wide'"},
      {"{\n  \"spec\": {\n    \"sq\": \"two\"\n  }\n}", 3, "key 'sq': expected an integer"},
      {"{\n  \"spec\": {\n    \"train\": 1\n  }\n}", 3, "expected true or false"},
      {"{\n  \"spec\": {\n    \"precision\": \"i32\"\n  }\n}", 2, "float precision"},
      {"{\n  \"spec\": {\n    \"precision\": \"f8\"\n  }\n}", 3, "expected f64, f32, f16 or bf16"},
      {"{\n  \"spec\": {\n    \"leaf\": false,\n    \"sq\": 3\n  }\n}", 2, "invalid attention spec"},
      {"{\n  \"spec\": {\n    \"mask\": \"banded:0\"\n  }\n}", 2, "window width"},
      {"{\n  \"settings\": [\"online_softmax\"]\n}", 2, "key=value"},
      {"{\n  \"settings\": [\"no_such_key=1\"]\n}", 2, "invalid setting"},
      {"{\n  \"settings\": [\"online_softmax_block=-2\"]\n}", 2, "invalid setting"},
      {"{\n\n  \"lookalike\": \"third-max\"\n}", 3, "lookalike 'third-max'"},
      {"{\n  \"data_seed\": -1\n}", 2, "non-negative integer"},
      {"{\n  \"hostile_percent\": 101\n}", 2, "expected 0 to 100"},
      {"", 1, "malformed JSON"},
  };
  for (const auto& m : cases) {
    SCOPED_TRACE(m.text);
    try {
      parse_attention_case(m.text, "bad.json");
      ADD_FAILURE() << "accepted";
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitMalformed);
      EXPECT_EQ(e.file(), "bad.json");
      EXPECT_EQ(e.line(), m.line) << e.what();
      EXPECT_GE(e.col(), 1);
      EXPECT_THAT(e.message(), HasSubstr(m.message));
    }
  }
}

// ---- look-alikes --------------------------------------------------------------------------------

std::vector<AttentionSpec> lookalike_specs() {
  std::vector<AttentionSpec> out;
  for (const char* mask : {"none", "causal", "banded:2", "random:5"})
    for (bool train : {false, true})
      for (int layers : {1, 2}) {
        AttentionSpec s;
        s.batch = 2;
        s.heads = 2;
        s.sq = 3;
        s.sk = layers == 1 ? 4 : 3;
        s.d = s.e = 2;
        s.mask = mask;
        s.train = train;
        s.layers = layers;
        s.leaf = layers == 1 || train;
        out.push_back(s);
      }
  AttentionSpec one;  // one key: nothing to shift along it
  one.sq = 1;
  one.sk = 1;
  one.d = one.e = 1;
  one.dropout = 0.5;
  out.push_back(one);
  return out;
}

TEST(FuzzGen, EachLookalikeAppliesAndIsWellFormedAndDifferent) {
  EXPECT_FALSE(make_lookalike(build_attention(AttentionSpec{}), Lookalike::None, 0).has_value());
  for (Lookalike k : lookalike_kinds()) {
    SCOPED_TRACE(lookalike_name(k));
    EXPECT_EQ(parse_lookalike(lookalike_name(k)), k);
    int applied = 0;
    for (const AttentionSpec& s : lookalike_specs()) {
      const Routine plain = build_attention(s);
      for (std::uint64_t seed = 0; seed < 6; ++seed) {
        std::optional<Routine> r = make_lookalike(plain, k, seed);
        if (!r) continue;
        ++applied;
        SCOPED_TRACE(print_routine(*r));
        EXPECT_EQ(diagnostics(*r), "");
        EXPECT_FALSE(equal(*r, plain));
        EXPECT_TRUE(equal(*make_lookalike(plain, k, seed), *r));  // deterministic
        interpret(*r, hostile_inputs(*r, seed, 20));
      }
    }
    EXPECT_GT(applied, 0);
  }
  EXPECT_FALSE(parse_lookalike("third-max").has_value());
  // No softmax chain: nothing to look like.
  EXPECT_FALSE(make_lookalike(sample_routine(1), Lookalike::ExtraReaderOfL, 0).has_value());
}

TEST(FuzzGen, LookalikesEditTheChainTheirNameSays) {
  AttentionSpec s;
  s.sq = s.sk = 3;
  s.d = s.e = 2;
  const Routine plain = build_attention(s);
  auto text = [](const std::optional<Routine>& r) { return r ? print_routine(*r) : std::string("(none)"); };
  EXPECT_THAT(text(make_lookalike(plain, Lookalike::ExtraReaderOfL, 0)), HasSubstr("node l_copy"));
  EXPECT_THAT(text(make_lookalike(plain, Lookalike::ExtraReaderOfMax, 0)),
              HasSubstr("m_copy[b, s, h] = row_max[b, s, h]"));
  EXPECT_THAT(text(make_lookalike(plain, Lookalike::SumWithoutExp, 0)),
              HasSubstr("row_sum[b, s, h] = add.f32(row_sum[b, s, h], shifted[b, s, h, t])"));
  EXPECT_THAT(text(make_lookalike(plain, Lookalike::DropoutLikeStep, 0)),
              HasSubstr("mul.f32(kept[b, s, h, t], v[b, t, h, e])"));
  std::set<std::string> shifted;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const std::string t = text(make_lookalike(plain, Lookalike::ShiftedRead, seed));
    for (const char* read :
         {"exps[b, s, h, t + 1]", "scaled[b, s, h, t + 1]", "probs[b, s, h, t + 1]", "exps[b, s + 1, h, t]"})
      if (t.find(read) != std::string::npos) shifted.insert(read);
  }
  EXPECT_EQ(shifted.size(), 4u);
}

// ---- hostile data -------------------------------------------------------------------------------

Routine data_routine() {
  Routine r;
  r.name = "data";
  for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16})
    r.nodes.push_back(make_node(std::string("x_") + prec_name(p), {2048}, p, true));
  r.nodes.push_back(make_node("dropout_u", {64}, Prec::F32, true));
  r.nodes.push_back(make_node("mask_keep", {1, 4, 1, 4}, Prec::F32, true));
  r.nodes.push_back(make_node("count", {64}, Prec::I32, true));
  r.nodes.push_back(make_node("out", {1}, Prec::F32, false, true));
  r.body = seq({});
  return r;
}

TEST(FuzzGen, HostileDataHoldsEveryClassAtEveryPrecision) {
  const Routine r = data_routine();
  const TensorMap plain = random_inputs(r, 9);
  const TensorMap in = hostile_inputs(r, 9, 100);
  EXPECT_TRUE(same_tensors(hostile_inputs(r, 9, 100), in));
  for (Prec p : {Prec::F64, Prec::F32, Prec::F16, Prec::BF16}) {
    SCOPED_TRACE(prec_name(p));
    const Tensor& t = in.at(std::string("x_") + prec_name(p));
    std::map<std::string, int> classes;
    for (std::size_t i = 0; i < t.data.size(); ++i) {
      const double v = t.data[i];
      EXPECT_TRUE(representable(p, v)) << v;
      if (i > 0 && same_value(v, t.data[i - 1])) ++classes["tie"];
      auto k = classify_hostile(p, v);
      EXPECT_TRUE(k.has_value() || (i > 0 && same_value(v, t.data[i - 1]))) << v;
      if (k) ++classes[hostile_kind_name(*k)];
    }
    for (int k = 0; k < kHostileKinds; ++k)
      EXPECT_GT(classes[hostile_kind_name(static_cast<HostileKind>(k))], 0)
          << hostile_kind_name(static_cast<HostileKind>(k));
    // Huge range: both ends of the exponent range appear.
    double lo = INFINITY, hi = 0;
    for (double v : t.data)
      if (std::isfinite(v) && v != 0) {
        lo = std::min(lo, std::fabs(v));
        hi = std::max(hi, std::fabs(v));
      }
    EXPECT_EQ(lo, min_positive(p));
    EXPECT_EQ(hi, max_finite(p));
  }
  for (const char* kept : {"dropout_u", "mask_keep", "count"})
    EXPECT_EQ(in.at(kept).data, plain.at(kept).data) << kept;
  for (double u : in.at("dropout_u").data) EXPECT_TRUE(u >= 0 && u < 1);
}

TEST(FuzzGen, HostileDataAtZeroPercentIsRandomInputs) {
  const Routine r = data_routine();
  EXPECT_TRUE(same_tensors(hostile_inputs(r, 4, 0), random_inputs(r, 4)));
  // At a small percentage most cells are random_inputs' cells.
  const TensorMap some = hostile_inputs(r, 4, 10), plain = random_inputs(r, 4);
  int same = 0;
  for (std::size_t i = 0; i < 2048; ++i)
    same += same_value(some.at("x_f32").data[i], plain.at("x_f32").data[i]);
  EXPECT_GT(same, 1700);
  EXPECT_LT(same, 2000);
}

RC_GTEST_PROP(FuzzGenProperty, HostileDataAtZeroIsRandomInputsForAnyRoutine, ()) {
  const Routine r = *gen_routine();
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  RC_ASSERT(same_tensors(hostile_inputs(r, seed, 0), random_inputs(r, seed)));
  const TensorMap h = hostile_inputs(r, seed, *rc::gen::inRange(1, 101));
  for (const Node* n : r.inputs())
    for (double v : h.at(n->name).data) RC_ASSERT(representable(n->prec, v));
}

// ---- text mutation ------------------------------------------------------------------------------

TEST(FuzzGen, MutateTextIsDeterministicAndAlwaysChanges) {
  AttentionSpec s;
  s.sq = s.sk = 2;
  s.d = s.e = 1;
  const std::string text = print_routine(build_attention(s));
  int rejected = 0;
  std::set<std::string> distinct;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const std::string m = mutate_text(text, seed);
    EXPECT_EQ(m, mutate_text(text, seed));
    EXPECT_NE(m, text) << seed;
    distinct.insert(m);
    try {
      parse_routine(m, "mutant.fp");
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitMalformed);
      ++rejected;
    }
  }
  EXPECT_GT(distinct.size(), 290u);
  EXPECT_GT(rejected, 200);
  EXPECT_FALSE(mutate_text("", 3).empty());
  EXPECT_NE(mutate_text("x", 3), "x");
}

RC_GTEST_PROP(FuzzGenProperty, MalformedTextIsRejectedOrParsedNeverCrashes, ()) {
  const std::string text =
      *gen_malformed_text(rc::gen::map(gen_routine(), [](const Routine& r) { return print_routine(r); }));
  try {
    const Routine r = parse_routine(text, "mutant.fp");
    RC_ASSERT(parse_routine(print_routine(r), "again.fp").name == r.name);
  } catch (const UserError& e) {
    RC_ASSERT(e.code() == kExitMalformed);
  }
}

}  // namespace
}  // namespace fp::fuzz
