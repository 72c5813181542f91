#include "verify/online_softmax/block_skip_lemma.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "core/numerics.h"
#include "verify/smt/smt.h"
#include "verify/symbolic/term.h"

namespace fp::verify {

namespace {

SkipLemma prove(Prec q, Prec up, std::optional<Prec> vp, const Limits& limits) {
  TermStore s;
  const TermP NEG = s.constant(-INFINITY, q), LOW = s.constant(lowest_finite(q), q), NaN_q = s.constant(NAN, q);
  const TermP mp = s.var("m", 0, q), other = s.var("y", 0, q);
  // The skip branch's floor and rescale (the block's max is the previous one) and the exponential
  // of a -inf score under that floor.
  const TermP fl = s.binary(BinOp::Max, mp, LOW, q);
  const TermP alpha = s.unary(UnOp::Exp, s.binary(BinOp::Sub, s.binary(BinOp::Max, mp, LOW, q), fl, q), q);
  const TermP t0 = s.unary(UnOp::Exp, s.binary(BinOp::Sub, NEG, fl, q), q);
  const TermP zero_q = s.constant(0.0, q);
  const TermP fl_is_num = s.binary(BinOp::Eq, fl, fl, q);  // false exactly when fl is NaN
  std::vector<std::pair<std::string, std::pair<TermP, TermP>>> queries = {
      {"max", {s.ternary(TernOp::Where, s.binary(BinOp::Eq, other, NEG, q), s.binary(BinOp::Max, mp, other, q), mp, q),
               mp}},
      // t0 is +0, or NaN exactly when fl is, and then α is NaN too.
      {"floor", {t0, s.ternary(TernOp::Where, fl_is_num, zero_q, NaN_q, q)}},
      {"rescale", {s.ternary(TernOp::Where, fl_is_num, zero_q, alpha, q), s.ternary(TernOp::Where, fl_is_num, zero_q, NaN_q, q)}},
      {"sum", {s.binary(BinOp::Add, s.binary(BinOp::Add, zero_q, t0, q), t0, q), s.binary(BinOp::Add, zero_q, t0, q)}},
  };
  if (vp) {
    // With t0 = +0 the block's products are 0·v, the zero sum's own terms; with fl NaN, α and hence
    // x = U·α are NaN and both sides are NaN. What remains are additions of zeros and NaNs.
    const TermP x = s.var("x", 0, up), v = s.var("v", 0, *vp);
    const TermP NaN_u = s.constant(NAN, up), zero_u = s.constant(0.0, up);
    auto zero_or_nan = [&](TermP t) {  // t where t is ±0, NaN elsewhere
      return s.ternary(TernOp::Where, s.binary(BinOp::Eq, t, zero_u, up), t, NaN_u, up);
    };
    const TermP Z = zero_or_nan(s.var("w", 0, up)), P = zero_or_nan(s.var("p", 0, up));
    const TermP pv = s.binary(BinOp::Mul, zero_q, v, up);
    const TermP next = s.binary(BinOp::Add, Z, P, up);
    queries.push_back({"product", {pv, zero_or_nan(pv)}});
    queries.push_back({"base", {x, s.binary(BinOp::Add, x, s.constant(-0.0, up), up)}});
    queries.push_back({"step", {s.binary(BinOp::Add, s.binary(BinOp::Add, x, Z, up), P, up), s.binary(BinOp::Add, x, next, up)}});
    queries.push_back({"closed", {next, zero_or_nan(next)}});
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
