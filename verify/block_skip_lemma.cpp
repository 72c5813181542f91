#include "verify/block_skip_lemma.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "core/numerics.h"
#include "rewrites/online_softmax/normalizer_scan.h"
#include "verify/smt/smt.h"
#include "verify/symbolic/term.h"

namespace fp::verify {

namespace {

SkipLemma prove(Prec q, Prec up, std::optional<Prec> vp, const Limits& limits) {
  TermStore s;
  const TermP NEG = s.constant(-INFINITY, q), LOW = s.constant(osm::lowest_finite(q), q);
  const TermP mp = s.var("m", 0, q), other = s.var("y", 0, q);
  // The skip branch's floor and rescale (the block's max is the previous one) and the exponential
  // of a -inf score under that floor.
  const TermP fl = s.binary(BinOp::Max, mp, LOW, q);
  const TermP alpha = s.unary(UnOp::Exp, s.binary(BinOp::Sub, s.binary(BinOp::Max, mp, LOW, q), fl, q), q);
  const TermP t0 = s.unary(UnOp::Exp, s.binary(BinOp::Sub, NEG, fl, q), q);
  const TermP zero_q = s.constant(0.0, q);
  std::vector<std::pair<std::string, std::pair<TermP, TermP>>> queries = {
      {"max", {s.ternary(TernOp::Where, s.binary(BinOp::Eq, other, NEG, q), s.binary(BinOp::Max, mp, other, q), mp, q),
               mp}},
      {"sum", {s.binary(BinOp::Add, s.binary(BinOp::Add, zero_q, t0, q), t0, q), s.binary(BinOp::Add, zero_q, t0, q)}},
  };
  if (vp) {
    const TermP u = s.var("U", 0, up), w = s.var("w", 0, up), v = s.var("v", 0, *vp);
    const TermP zero_up = s.constant(0.0, up);
    const TermP x = s.binary(BinOp::Mul, u, alpha, up);
    const TermP Z = s.binary(BinOp::Mul, zero_up, w, up);  // ranges over {+0, -0, NaN}
    const TermP zv = s.binary(BinOp::Mul, zero_q, v, up);
    const TermP next = s.binary(BinOp::Add, Z, zv, up);
    queries.push_back({"base", {x, s.binary(BinOp::Add, x, s.constant(-0.0, up), up)}});
    queries.push_back({"step", {s.binary(BinOp::Add, s.binary(BinOp::Add, x, Z, up), s.binary(BinOp::Mul, t0, v, up), up),
                                s.binary(BinOp::Add, x, next, up)}});
    queries.push_back({"closed", {next, s.binary(BinOp::Mul, next, zero_up, up)}});
  }
  smt::FpQueryOptions fo;
  fo.cut_shared = false;  // the queries need the link between α, t0 and the floor
  smt::SmtLimits lim;
  lim.rlimit = limits.rlimit;
  lim.timeout_s = limits.timeout_s;
  std::vector<std::string> done;
  for (const auto& [name, pair] : queries) {
    const smt::SmtOutcome o = smt::find_difference(s, {pair}, fo, lim);
    if (o.status != smt::SmtStatus::Unsat)
      return {false, fmt::format("the block-skip lemma's {} query at state {}, numerator {}: {}", name, prec_name(q),
                                 prec_name(up), smt::smt_status_name(o.status))};
    done.push_back(name);
  }
  return {true, fmt::format("the block-skip lemma (Z3 floating point, every value: {} unsat at state {}{})",
                            fmt::join(done, ", "), prec_name(q),
                            vp ? fmt::format(", numerator {}, values {}", prec_name(up), prec_name(*vp)) : "")};
}

}  // namespace

SkipLemma block_skip_lemma(Prec state, Prec numerator, std::optional<Prec> value, const Limits& limits) {
  static std::mutex mu;
  static std::map<std::tuple<Prec, Prec, int>, SkipLemma> proved;
  const auto key = std::make_tuple(state, numerator, value ? static_cast<int>(*value) : -1);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = proved.find(key); it != proved.end()) return it->second;
  }
  SkipLemma r = prove(state, numerator, value, limits);
  if (r.proved) {
    std::lock_guard<std::mutex> lock(mu);
    proved.emplace(key, r);
  }
  return r;
}

}  // namespace fp::verify
