#pragma once
// Shared helpers of the rewrite-tier and online-softmax tests: parsing checked routines (the lit
// golden files double as unit-test inputs), running the tier with the gate on, counting scans.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attention_reference.h"
#include "core/checker.h"
#include "core/interpreter.h"
#include "core/ir_visit.h"
#include "core/random_inputs.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "frontend/attention.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"
#include "tensor_expect.h"

namespace fp::ostest {

inline Routine parse_checked(const std::string& text, const std::string& name = "test.fp") {
  Routine r = parse_routine(text, name);
  check_routine_or_throw(r, name);
  return r;
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string lit_path(const std::string& file) {
  return std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit/online_softmax/" + file;
}

// Every occurrence of `from` in `text` replaced by `to`.
inline std::string replaced_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// A routine of tests/lit/online_softmax/, parsed and checked.
inline Routine lit_routine(const std::string& file) {
  return parse_checked(read_text_file(lit_path(file)), file);
}

// One small attention of the differential tests (batch 1, 2 heads, d = 4 — 3 when layers stack,
// which needs d = e — and e = 3).
struct AttentionCase {
  std::string mask = "none";
  std::string fill = "-inf";
  std::int64_t sq = 3, sk = 3;
  int layers = 1;
  Prec prec = Prec::F32;
  bool train = false;
  double dropout = 0;
};

inline AttentionSpec spec_of(const AttentionCase& c) {
  AttentionSpec s;
  s.batch = 1;
  s.heads = 2;
  s.sq = c.sq;
  s.sk = c.sk;
  s.d = c.layers > 1 ? 3 : 4;
  s.e = 3;
  s.mask = c.mask;
  s.mask_fill = c.fill;
  s.precision = c.prec;
  s.layers = c.layers;
  s.train = c.train;
  s.dropout = c.dropout;
  return s;
}

// One training step of batch 1 and 1 head (its cells are row-major [sq, sk], [sq, e], ...) with an
// explicit scale: the fused backward's bound tests index it directly.
inline AttentionSpec one_head_training_step(Prec p, const std::string& mask, std::int64_t sq, std::int64_t sk,
                                            std::int64_t d, std::int64_t e, const std::string& fill = "-inf") {
  AttentionSpec s;
  s.sq = sq;
  s.sk = sk;
  s.d = d;
  s.e = e;
  s.scale = 0.3;
  s.mask = mask;
  s.mask_fill = fill;
  s.precision = p;
  s.train = true;
  return s;
}

inline std::string case_name(const AttentionCase& c) {
  return "mask " + c.mask + " fill " + c.fill + " sq " + std::to_string(c.sq) + " sk " + std::to_string(c.sk) +
         " layers " + std::to_string(c.layers) + " " + prec_name(c.prec) + (c.train ? " train" : "") +
         (c.dropout > 0 ? " dropout" : "");
}

// A differential case with a block size for shape 4 (0: the two-pass form); 5 queries and 7 keys
// by default.
struct BlockedCase : AttentionCase {
  std::int64_t block = 3;
  BlockedCase() {
    sq = 5;
    sk = 7;
  }
  BlockedCase(std::string m, std::string f, std::int64_t q, std::int64_t k, std::int64_t b, Prec p = Prec::F32,
              bool tr = false) {
    mask = std::move(m);
    fill = std::move(f);
    sq = q;
    sk = k;
    block = b;
    prec = p;
    train = tr;
  }
};

inline std::string blocked_case_name(const BlockedCase& c) { return case_name(c) + " B " + std::to_string(c.block); }

// How many applications of `shape` the tier made.
inline int count_shape(const RewriteResult& r, const std::string& shape) {
  int n = 0;
  for (const auto& a : r.applications) n += a.shape == shape;
  return n;
}

// Both routines on the same inputs (make_inputs with `seed`), every output of the first within
// `tol` of it in the second (attention_reference.h close).
inline void expect_outputs_close(const Routine& composed, const Routine& rewritten, std::uint64_t seed, double tol) {
  TensorMap in = testref::make_inputs(composed, seed);
  TensorMap want = interpret(composed, in);
  TensorMap got = interpret(rewritten, in);
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [node, t] : want) EXPECT_TRUE(testref::close(got.at(node).data, t.data, tol, node));
}

inline Config gate_on() {
  Config c;
  c.set("online_softmax", "true");
  return c;
}

inline RewriteResult rewrite(const Routine& r, const TierOptions& o = {}) {
  return run_tier(r, gate_on(), o);
}

inline int count_kind(const Routine& r, StmtKind k) {
  int n = 0;
  for_each_stmt(r.body, [&](const Stmt& s) { n += s.kind == k; });
  return n;
}

inline ::testing::AssertionResult well_formed(const Routine& r) {
  auto d = check_routine(r);
  if (d.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << d[0].where << " " << d[0].message << "\n" << print_routine(r);
}

// `tgt` (a rewritten training step) with each of `nodes` scaled by `factor` just before the fused
// backward's first statement (the one computing its row dot): a forward less accurate than its
// claim, as the backward sees it.
inline Routine scaled_before_backward(Routine tgt, const std::vector<std::string>& nodes, double factor) {
  std::vector<StmtP> body = top_level_statements(tgt);
  const auto backward = std::find_if(body.begin(), body.end(), [](const StmtP& st) {
    bool rowdot = false;
    for_each_stmt(st, [&](const Stmt& x) { rowdot = rowdot || x.name.find("rowdot") != std::string::npos; });
    return rowdot;
  });
  EXPECT_NE(backward, body.end());
  std::vector<StmtP> scale;
  for (const std::string& name : nodes) {
    const Node* n = tgt.find_node(name);
    EXPECT_NE(n, nullptr) << name;
    if (!n) continue;
    std::vector<Index> idx;
    for (std::size_t a = 0; a < n->dims.size(); ++a) idx.push_back(Index::iter("i" + std::to_string(a)));
    StmtP nest =
        set(name, idx, binary(BinOp::Mul, get(name, idx, n->prec), constant(factor, n->prec), n->prec));
    for (std::size_t a = n->dims.size(); a-- > 0;)
      nest = for_loop("i" + std::to_string(a), 0, n->dims[a] - 1, {nest});
    scale.push_back(nest);
  }
  body.insert(backward, scale.begin(), scale.end());
  tgt.body = seq(body);
  return tgt;
}

// `r`, printed, with each `from` replaced by its `to` (each found exactly once), parsed back.
inline Routine edited(const Routine& r, const std::vector<std::pair<std::string, std::string>>& replace) {
  std::string text = print_routine(r);
  for (const auto& [from, to] : replace) {
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return r;
    EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "more than one " << from;
    text.replace(at, from.size(), to);
  }
  return parse_routine(text, "edited.fp");
}

// The outputs of `tgt` on three seeded inputs of `src`, bit for bit those of `want` (only `node`'s
// when one is named).
inline bool same_outputs(const Routine& src, const Routine& want, const Routine& tgt, const std::string& node = "") {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const TensorMap in = random_inputs(src, seed);
    const TensorMap a = interpret(want, in), b = interpret(tgt, in);
    if (node.empty() ? !fp::testing::bitwise_equal(a, b) : !fp::testing::bitwise_equal(a.at(node), b.at(node), node))
      return false;
  }
  return true;
}

// One random one-token edit of `text` (one of `swaps`, at one of its places from `from_at` on),
// parsed and checked; nullopt when the edit is not a well-formed program. `what` names it.
inline std::optional<Routine> random_edit(const std::string& text, std::size_t from_at,
                                          const std::vector<std::pair<std::string, std::string>>& swaps,
                                          std::mt19937_64& rng, std::string& what) {
  const auto& [from, to] = swaps[rng() % swaps.size()];
  std::vector<std::size_t> at;
  for (std::size_t p = text.find(from, from_at); p != std::string::npos; p = text.find(from, p + 1)) at.push_back(p);
  if (at.empty()) return std::nullopt;
  std::string edited_text = text;
  const std::size_t where = at[rng() % at.size()];
  edited_text.replace(where, from.size(), to);
  what = "'" + from + "' -> '" + to + "' at " + std::to_string(where);
  try {
    Routine r = parse_routine(edited_text, "edit.fp");
    check_routine_or_throw(r, "edit.fp");
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // not a well-formed program
  }
}

// Text edits of a routine (each `from` found once) and the condition a lift names in refusing them.
struct RefusedEdit {
  std::vector<std::pair<std::string, std::string>> replace;
  std::string refusal;
};

// One attention of the lifts' tests: sq × sk, widths d and e, a mask, a precision.
inline AttentionSpec attention_of(std::int64_t sq, std::int64_t sk, std::int64_t d, std::int64_t e, const char* mask,
                                  Prec p, bool train) {
  AttentionSpec s;
  s.sq = sq;
  s.sk = sk;
  s.d = d;
  s.e = e;
  s.mask = mask;
  s.precision = p;
  s.train = train;
  return s;
}

}  // namespace fp::ostest
