// Terms (verify/symbolic/term.h) in Z3's floating-point theory, exactly as core/ir.h's SEMANTICS:
// exact sorts (f64 (11,53), f32 (8,24), f16 (5,11), bf16 (8,8)), round-to-nearest-even for every
// operation, i32 as 32-bit vectors, max/min with NaN propagating and -0 < +0 (IEEE 754-2019
// maximum/minimum — NOT Z3's fp.max, which leaves max(-0, +0) unspecified), where/eq/lt, and exp
// and pow as uninterpreted functions per precision shared by both sides. exp keeps its exactly
// specified values (exp(NaN) = NaN, exp(-inf) = +0, exp(+inf) = +inf, exp(±0) = 1) and, as the
// semantics guarantee for every finite input, a non-negative non-NaN result; only the rest is
// uninterpreted, so a proof holds for every implementation of exp.
#include <z3++.h>

#include <bit>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "core/diagnostic.h"
#include "core/numerics.h"
#include "verify/smt/smt.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt {

namespace {

struct FpFormat {
  unsigned ebits, sbits;
};
FpFormat format_of(Prec p) {
  switch (p) {
    case Prec::F64:
      return {11, 53};
    case Prec::F32:
      return {8, 24};
    case Prec::F16:
      return {5, 11};
    case Prec::BF16:
      return {8, 8};
    case Prec::I32:
      break;
  }
  return {0, 0};
}

std::uint64_t bits_of(Prec p, double v) {
  switch (p) {
    case Prec::F64:
      return std::bit_cast<std::uint64_t>(v);
    case Prec::F32:
      return std::bit_cast<std::uint32_t>(static_cast<float>(v));
    case Prec::F16:
      return f16_bits(v);
    case Prec::BF16:
      return bf16_bits(v);
    case Prec::I32:
      return static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
  }
  return 0;
}

double value_of_bits(Prec p, std::uint64_t b) {
  switch (p) {
    case Prec::F64:
      return std::bit_cast<double>(b);
    case Prec::F32:
      return std::bit_cast<float>(static_cast<std::uint32_t>(b));
    case Prec::F16:
      return f16_value(static_cast<std::uint16_t>(b));
    case Prec::BF16:
      return bf16_value(static_cast<std::uint16_t>(b));
    case Prec::I32:
      return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(b)));
  }
  return 0;
}

class Encoder {
 public:
  Encoder(z3::context& c, const TermStore& store) : c_(c), store_(store), rm_(c) {
    rm_ = z3::expr(c_, Z3_mk_fpa_rne(c_));
  }

  z3::sort sort_of(Prec p) {
    if (p == Prec::I32) return c_.bv_sort(32);
    FpFormat f = format_of(p);
    return c_.fpa_sort(f.ebits, f.sbits);
  }

  void set_cuts(std::unordered_set<TermP> cuts) { cuts_ = std::move(cuts); }
  bool used_cuts() const { return used_cuts_; }
  const std::map<std::uint32_t, z3::expr>& inputs() const { return inputs_; }
  const std::vector<z3::expr>& side_conditions() const { return side_; }

  z3::expr constant(Prec p, double v) {
    if (p == Prec::I32) return c_.bv_val(static_cast<std::uint64_t>(bits_of(p, v)), 32);
    if (std::isnan(v)) return z3::expr(c_, Z3_mk_fpa_nan(c_, sort_of(p)));
    FpFormat f = format_of(p);
    z3::expr bv = c_.bv_val(static_cast<std::uint64_t>(bits_of(p, v)), f.ebits + f.sbits);
    return z3::expr(c_, Z3_mk_fpa_to_fp_bv(c_, bv, sort_of(p)));
  }

  z3::expr encode(TermP root) {
    // Iterative post-order: summation chains are deep.
    std::vector<TermP> stack{root};
    while (!stack.empty()) {
      TermP t = stack.back();
      if (memo_.count(t)) {
        stack.pop_back();
        continue;
      }
      if (cuts_.count(t) && t->op != TermOp::Var && t->op != TermOp::Const) {
        used_cuts_ = true;
        memo_.emplace(t, c_.constant(("cut_" + std::to_string(t->id)).c_str(), sort_of(t->prec)));
        stack.pop_back();
        continue;
      }
      bool ready = true;
      for (int i = 0; i < t->nargs; ++i)
        if (!memo_.count(t->args[i])) {
          ready = false;
          stack.push_back(t->args[i]);
        }
      if (!ready) continue;
      stack.pop_back();
      memo_.emplace(t, build(t));
    }
    return memo_.at(root);
  }

 private:
  z3::expr arg(TermP t, int i) { return memo_.at(t->args[i]); }

  z3::expr is_nan(const z3::expr& e) { return z3::expr(c_, Z3_mk_fpa_is_nan(c_, e)); }
  z3::expr is_zero(const z3::expr& e) { return z3::expr(c_, Z3_mk_fpa_is_zero(c_, e)); }
  z3::expr is_neg(const z3::expr& e) { return z3::expr(c_, Z3_mk_fpa_is_negative(c_, e)); }
  z3::expr is_inf(const z3::expr& e) { return z3::expr(c_, Z3_mk_fpa_is_infinite(c_, e)); }
  z3::expr fp_lt(const z3::expr& a, const z3::expr& b) { return z3::expr(c_, Z3_mk_fpa_lt(c_, a, b)); }
  z3::expr fp_gt(const z3::expr& a, const z3::expr& b) { return z3::expr(c_, Z3_mk_fpa_gt(c_, a, b)); }
  z3::expr fp_eq(const z3::expr& a, const z3::expr& b) { return z3::expr(c_, Z3_mk_fpa_eq(c_, a, b)); }

  z3::func_decl uf(const char* name, Prec p, int arity) {
    std::string key = std::string(name) + "_" + prec_name(p);
    auto it = ufs_.find(key);
    if (it != ufs_.end()) return it->second;
    z3::sort s = sort_of(p);
    z3::func_decl f = arity == 1 ? c_.function(key.c_str(), s, s) : c_.function(key.c_str(), s, s, s);
    ufs_.emplace(key, f);
    return f;
  }

  z3::expr truthy(TermP cond) {
    z3::expr c = memo_.at(cond);
    if (cond->prec == Prec::I32) return c != c_.bv_val(0, 32);
    return !is_zero(c);  // NaN counts as true
  }

  z3::expr convert(const z3::expr& a, Prec from, Prec to) {
    if (from == to) return a;
    if (to == Prec::I32) {
      // Truncation toward zero, saturating, NaN -> 0: compare in f64 (every float converts
      // exactly), then fp.to_sbv with round-toward-zero inside the range.
      z3::expr a64 =
          from == Prec::F64 ? a : z3::expr(c_, Z3_mk_fpa_to_fp_float(c_, rm_, a, sort_of(Prec::F64)));
      z3::expr rtz(c_, Z3_mk_fpa_rtz(c_));
      z3::expr conv(c_, Z3_mk_fpa_to_sbv(c_, rtz, a64, 32));
      z3::expr hi = constant(Prec::F64, 2147483647.0), lo = constant(Prec::F64, -2147483648.0);
      return z3::ite(is_nan(a64), c_.bv_val(0, 32),
                     z3::ite(z3::expr(c_, Z3_mk_fpa_geq(c_, a64, hi)), c_.bv_val(2147483647, 32),
                             z3::ite(z3::expr(c_, Z3_mk_fpa_leq(c_, a64, lo)),
                                     c_.bv_val(static_cast<std::uint64_t>(0x80000000u), 32), conv)));
    }
    if (from == Prec::I32) return z3::expr(c_, Z3_mk_fpa_to_fp_signed(c_, rm_, a, sort_of(to)));
    return z3::expr(c_, Z3_mk_fpa_to_fp_float(c_, rm_, a, sort_of(to)));
  }

  z3::expr max_min(const z3::expr& a, const z3::expr& b, Prec p, bool is_max) {
    if (p == Prec::I32) return is_max ? z3::ite(z3::sgt(a, b), a, b) : z3::ite(z3::slt(a, b), a, b);
    z3::expr nan = constant(p, NAN);
    z3::expr larger = is_max ? fp_gt(a, b) : fp_lt(a, b);
    z3::expr smaller = is_max ? fp_lt(a, b) : fp_gt(a, b);
    // Equal values: only ±0 differ in bits; max takes +0, min takes -0.
    z3::expr zeros = z3::ite(is_neg(a), is_max ? b : a, is_max ? a : b);
    return z3::ite(is_nan(a) || is_nan(b), nan,
                   z3::ite(larger, a, z3::ite(smaller, b, z3::ite(is_zero(a) && is_zero(b), zeros, a))));
  }

  z3::expr exp_of(const z3::expr& x, Prec p) {
    z3::expr u = uf("exp", p, 1)(x);
    side_.push_back(!is_nan(u) && !is_neg(u));
    return z3::ite(is_nan(x), constant(p, NAN),
                   z3::ite(is_inf(x), z3::ite(is_neg(x), constant(p, 0.0), constant(p, INFINITY)),
                           z3::ite(is_zero(x), constant(p, 1.0), u)));
  }

  z3::expr build(TermP t) {
    const Prec p = t->prec;
    switch (t->op) {
      case TermOp::Var: {
        const VarInfo& vi = store_.vars()[t->var];
        std::string name = "in_" + vi.node + "_" + std::to_string(vi.cell);
        z3::expr e = c_.constant(name.c_str(), sort_of(p));
        inputs_.emplace(t->var, e);
        return e;
      }
      case TermOp::Const:
        return constant(p, t->value);
      case TermOp::Cvt:
        return convert(arg(t, 0), t->args[0]->prec, p);
      default:
        break;
    }
    if (p == Prec::I32) return build_int(t);
    switch (t->op) {
      case TermOp::Neg:
        return z3::expr(c_, Z3_mk_fpa_neg(c_, arg(t, 0)));
      case TermOp::Abs:
        return z3::expr(c_, Z3_mk_fpa_abs(c_, arg(t, 0)));
      case TermOp::Sqrt:
        return z3::expr(c_, Z3_mk_fpa_sqrt(c_, rm_, arg(t, 0)));
      case TermOp::Exp:
        return exp_of(arg(t, 0), p);
      case TermOp::Add:
        return z3::expr(c_, Z3_mk_fpa_add(c_, rm_, arg(t, 0), arg(t, 1)));
      case TermOp::Sub:
        return z3::expr(c_, Z3_mk_fpa_sub(c_, rm_, arg(t, 0), arg(t, 1)));
      case TermOp::Mul:
        return z3::expr(c_, Z3_mk_fpa_mul(c_, rm_, arg(t, 0), arg(t, 1)));
      case TermOp::Div:
        return z3::expr(c_, Z3_mk_fpa_div(c_, rm_, arg(t, 0), arg(t, 1)));
      case TermOp::Max:
        return max_min(arg(t, 0), arg(t, 1), p, true);
      case TermOp::Min:
        return max_min(arg(t, 0), arg(t, 1), p, false);
      case TermOp::Pow:
        return uf("pow", p, 2)(arg(t, 0), arg(t, 1));
      case TermOp::Eq:
        return z3::ite(fp_eq(arg(t, 0), arg(t, 1)), constant(p, 1.0), constant(p, 0.0));
      case TermOp::Lt:
        return z3::ite(fp_lt(arg(t, 0), arg(t, 1)), constant(p, 1.0), constant(p, 0.0));
      case TermOp::Where:
        return z3::ite(truthy(t->args[0]), arg(t, 1), arg(t, 2));
      case TermOp::Fma:
        return z3::expr(c_, Z3_mk_fpa_fma(c_, rm_, arg(t, 0), arg(t, 1), arg(t, 2)));
      default:
        break;
    }
    FP_UNREACHABLE("no encoding for term op {}", term_op_name(t->op));
    return c_.bool_val(false);
  }

  z3::expr build_int(TermP t) {
    z3::expr zero = c_.bv_val(0, 32), one = c_.bv_val(1, 32);
    switch (t->op) {
      case TermOp::Neg:
        return -arg(t, 0);
      case TermOp::Abs:
        return z3::ite(z3::slt(arg(t, 0), zero), -arg(t, 0), arg(t, 0));
      case TermOp::Add:
        return arg(t, 0) + arg(t, 1);
      case TermOp::Sub:
        return arg(t, 0) - arg(t, 1);
      case TermOp::Mul:
        return arg(t, 0) * arg(t, 1);
      case TermOp::Div:
        // Truncating; x / 0 = 0; INT32_MIN / -1 = INT32_MIN (bvsdiv wraps to exactly that).
        return z3::ite(arg(t, 1) == zero, zero, z3::expr(c_, Z3_mk_bvsdiv(c_, arg(t, 0), arg(t, 1))));
      case TermOp::Max:
        return max_min(arg(t, 0), arg(t, 1), Prec::I32, true);
      case TermOp::Min:
        return max_min(arg(t, 0), arg(t, 1), Prec::I32, false);
      case TermOp::Eq:
        return z3::ite(arg(t, 0) == arg(t, 1), one, zero);
      case TermOp::Lt:
        return z3::ite(z3::slt(arg(t, 0), arg(t, 1)), one, zero);
      case TermOp::Where:
        return z3::ite(truthy(t->args[0]), arg(t, 1), arg(t, 2));
      case TermOp::Pow:
        return uf("pow", Prec::I32, 2)(arg(t, 0), arg(t, 1));
      default:
        break;
    }
    FP_UNREACHABLE("no i32 encoding for term op {}", term_op_name(t->op));
    return zero;
  }

  z3::context& c_;
  const TermStore& store_;
  z3::expr rm_;
  std::unordered_map<TermP, z3::expr> memo_;
  std::unordered_set<TermP> cuts_;
  bool used_cuts_ = false;
  std::map<std::uint32_t, z3::expr> inputs_;
  std::map<std::string, z3::func_decl> ufs_;
  std::vector<z3::expr> side_;
};

// Terms reachable from both a src root and a tgt root.
std::unordered_set<TermP> shared_terms(const std::vector<std::pair<TermP, TermP>>& pairs) {
  std::unordered_set<TermP> from_src, shared;
  std::vector<TermP> stack;
  for (const auto& pr : pairs) stack.push_back(pr.first);
  while (!stack.empty()) {
    TermP t = stack.back();
    stack.pop_back();
    if (!from_src.insert(t).second) continue;
    for (int i = 0; i < t->nargs; ++i) stack.push_back(t->args[i]);
  }
  std::unordered_set<TermP> seen;
  for (const auto& pr : pairs) stack.push_back(pr.second);
  while (!stack.empty()) {
    TermP t = stack.back();
    stack.pop_back();
    if (!seen.insert(t).second) continue;
    if (from_src.count(t)) {
      shared.insert(t);
      continue;  // maximal shared subterm: its own subterms need no cut
    }
    for (int i = 0; i < t->nargs; ++i) stack.push_back(t->args[i]);
  }
  return shared;
}

double model_value(z3::context& c, z3::model& m, const z3::expr& e, Prec p) {
  if (p != Prec::I32) {
    z3::expr nan = m.eval(z3::expr(c, Z3_mk_fpa_is_nan(c, e)), true);
    if (nan.is_true()) return NAN;
    z3::expr bv = m.eval(z3::expr(c, Z3_mk_fpa_to_ieee_bv(c, e)), true);
    std::uint64_t bits = 0;
    Z3_get_numeral_uint64(c, bv, &bits);
    return value_of_bits(p, bits);
  }
  z3::expr v = m.eval(e, true);
  std::uint64_t bits = 0;
  Z3_get_numeral_uint64(c, v, &bits);
  return value_of_bits(p, bits);
}

void read_model(z3::context& c, z3::solver& s, const TermStore& store, const Encoder& enc,
                const std::vector<z3::expr>& separated, SmtOutcome& o) {
  z3::model m = s.get_model();
  for (const auto& [var, e] : enc.inputs()) o.inputs[var] = model_value(c, m, e, store.vars()[var].prec);
  for (std::size_t i = 0; i < separated.size(); ++i)
    if (m.eval(separated[i], true).is_true()) {
      o.witness = static_cast<int>(i);
      break;
    }
}

SmtOutcome pair_query(
    const TermStore& store, const std::vector<std::pair<TermP, TermP>>& pairs, const FpQueryOptions& options,
    const SmtLimits& limits,
    const std::function<z3::expr(Encoder&, const z3::expr&, const z3::expr&, Prec)>& violation) {
  z3::context c;
  z3::solver s(c);
  detail::apply_limits(c, s, limits);
  Encoder enc(c, store);
  if (options.cut_shared) enc.set_cuts(shared_terms(pairs));
  std::vector<z3::expr> separated;
  z3::expr any = c.bool_val(false);
  for (const auto& [a, b] : pairs) {
    z3::expr ea = enc.encode(a), eb = enc.encode(b);
    separated.push_back(violation(enc, ea, eb, a->prec));
    any = any || separated.back();
  }
  for (const auto& side : enc.side_conditions()) s.add(side);
  s.add(any);
  SmtOutcome o = detail::run_check(s, limits);
  o.used_cuts = enc.used_cuts();
  if (o.status == SmtStatus::Sat) read_model(c, s, store, enc, separated, o);
  return o;
}

}  // namespace

SmtOutcome find_difference(const TermStore& store, const std::vector<std::pair<TermP, TermP>>& pairs,
                           const FpQueryOptions& options, const SmtLimits& limits) {
  return pair_query(store, pairs, options, limits,
                    [](Encoder&, const z3::expr& a, const z3::expr& b, Prec) { return !(a == b); });
}

SmtOutcome self_check(const TermStore& store, const std::vector<TermP>& terms, const SmtLimits& limits) {
  z3::context c;
  z3::solver s(c);
  detail::apply_limits(c, s, limits);
  // Two encoders: the second encoding is built independently (its own memo), so a
  // non-deterministic or non-reflexive encoding shows up here.
  Encoder e1(c, store), e2(c, store);
  z3::expr any = c.bool_val(false);
  std::vector<z3::expr> separated;
  for (TermP t : terms) {
    separated.push_back(!(e1.encode(t) == e2.encode(t)));
    any = any || separated.back();
  }
  for (const auto& side : e1.side_conditions()) s.add(side);
  s.add(any);
  SmtOutcome o = detail::run_check(s, limits);
  if (o.status == SmtStatus::Sat) read_model(c, s, store, e1, separated, o);
  return o;
}

std::optional<double> evaluate_encoding(const TermStore& store, TermP t,
                                        const std::map<std::uint32_t, double>& inputs) {
  if (t->approx) return std::nullopt;
  z3::context c;
  Encoder enc(c, store);
  z3::expr e = enc.encode(t);
  z3::expr_vector from(c), to(c);
  for (const auto& [var, ex] : enc.inputs()) {
    auto it = inputs.find(var);
    FP_INTERNAL_CHECK(it != inputs.end(), "no value for input variable {}", var);
    from.push_back(ex);
    to.push_back(enc.constant(store.vars()[var].prec, it->second));
  }
  z3::expr v = e.substitute(from, to).simplify();
  z3::solver s(c);
  s.add(c.bool_val(true));
  s.check();
  z3::model m = s.get_model();
  return model_value(c, m, v, t->prec);
}

SmtOutcome find_bound_violation(const TermStore& store, const std::vector<std::pair<TermP, TermP>>& pairs,
                                double rel, const FpQueryOptions& options, const SmtLimits& limits) {
  return pair_query(store, pairs, options, limits,
                    [rel](Encoder&, const z3::expr& s, const z3::expr& t, Prec p) -> z3::expr {
                      z3::context& c = s.ctx();
                      if (p == Prec::I32) {
                        z3::expr rs = z3::to_real(z3::bv2int(s, true)), rt = z3::to_real(z3::bv2int(t, true));
                        z3::expr diff = z3::ite(rt >= rs, rt - rs, rs - rt);
                        z3::expr mag = z3::ite(rs >= 0, rs, -rs);
                        return diff > detail::real_of(c, rel) * mag;
                      }
                      z3::expr nan_s(c, Z3_mk_fpa_is_nan(c, s)), nan_t(c, Z3_mk_fpa_is_nan(c, t));
                      z3::expr inf_s(c, Z3_mk_fpa_is_infinite(c, s)), inf_t(c, Z3_mk_fpa_is_infinite(c, t));
                      // |t - s| > rel·|s|, over-approximated in a format every operand converts to
                      // exactly (a wider exponent, a few more significand bits than the operands'):
                      // the difference rounded up, the allowed error rounded down, so every true
                      // violation satisfies the query (unsat proves the bound); a model near the
                      // boundary may be spurious and is replayed on the interpreter anyway. Few
                      // significand bits keep the bit-blasted multiplier small.
                      const FpFormat f = format_of(p);
                      z3::sort wide = p == Prec::F64 ? c.fpa_sort(15, 64) : c.fpa_sort(11, f.sbits + 6);
                      z3::expr rne(c, Z3_mk_fpa_rne(c)), rtp(c, Z3_mk_fpa_rtp(c)), rtz(c, Z3_mk_fpa_rtz(c));
                      z3::expr ws(c, Z3_mk_fpa_to_fp_float(c, rne, s, wide)),
                          wt(c, Z3_mk_fpa_to_fp_float(c, rne, t, wide));
                      // |t - s| rounded up in either sign: the larger operand minus the smaller,
                      // rounded toward +inf (the abs of a difference rounded toward +inf would
                      // round a negative difference's magnitude down).
                      z3::expr up_ts(c, Z3_mk_fpa_sub(c, rtp, wt, ws)), up_st(c, Z3_mk_fpa_sub(c, rtp, ws, wt));
                      z3::expr diff = z3::ite(z3::expr(c, Z3_mk_fpa_geq(c, wt, ws)), up_ts, up_st);
                      // REL rounded toward zero into the narrower format (rounding to nearest can
                      // raise it).
                      z3::expr rel_w(c, Z3_mk_fpa_to_fp_float(c, rtz, c.fpa_val(rel), wide));
                      z3::expr allowed(c, Z3_mk_fpa_mul(c, rtz, rel_w, z3::expr(c, Z3_mk_fpa_abs(c, ws))));
                      z3::expr finite = !nan_s && !nan_t && !inf_s && !inf_t;
                      return (nan_s != nan_t) || (!nan_s && !nan_t && (inf_s || inf_t) && !(s == t)) ||
                             (finite && z3::expr(c, Z3_mk_fpa_gt(c, diff, allowed)));
                    });
}

}  // namespace fp::verify::smt
