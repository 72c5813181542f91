#include "verify/attention_suite.h"

namespace fp::verify {

std::vector<AttentionCase> attention_suite() {
  auto base = [] {
    AttentionSpec s;
    s.batch = 1;
    s.heads = 2;
    s.sq = 3;
    s.sk = 3;
    s.d = 4;
    s.e = 3;
    return s;
  };
  std::vector<AttentionCase> cases;
  auto add = [&](std::string name, auto&& edit) {
    AttentionSpec s = base();
    edit(s);
    cases.push_back(AttentionCase{std::move(name), s});
  };
  add("forward-f32", [](AttentionSpec&) {});
  add("causal", [](AttentionSpec& s) { s.mask = "causal"; });
  add("prefix-2", [](AttentionSpec& s) { s.mask = "prefix:2"; });
  add("padding-1", [](AttentionSpec& s) { s.mask = "padding:1"; });
  add("causal-sq5-sk2-masked-rows", [](AttentionSpec& s) {
    s.mask = "causal";
    s.sq = 5;
    s.sk = 2;
  });
  add("sq2-sk5", [](AttentionSpec& s) {
    s.sq = 2;
    s.sk = 5;
  });
  add("fill-nan", [](AttentionSpec& s) {
    s.mask = "causal";
    s.mask_fill = "nan";
  });
  add("fill-finite", [](AttentionSpec& s) {
    s.mask = "causal";
    s.mask_fill = "-10000";
  });
  add("f64", [](AttentionSpec& s) { s.precision = Prec::F64; });
  add("f16", [](AttentionSpec& s) { s.precision = Prec::F16; });
  add("bf16", [](AttentionSpec& s) { s.precision = Prec::BF16; });
  add("layers-2", [](AttentionSpec& s) {
    s.layers = 2;
    s.d = 3;
  });
  add("dropout", [](AttentionSpec& s) { s.dropout = 0.25; });
  add("train-f32", [](AttentionSpec& s) {
    s.train = true;
    s.mask = "causal";
  });
  return cases;
}

}  // namespace fp::verify
