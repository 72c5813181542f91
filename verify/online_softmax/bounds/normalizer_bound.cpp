#include "verify/online_softmax/bounds/normalizer_bound.h"

#include <fmt/format.h>

#include <mpfr.h>

#include <cmath>
#include <cstdint>

#include "core/numerics.h"
#include "verify/bounds/mpfr_up.h"
#include "verify/error_bound.h"

namespace fp::verify {

namespace {

using LD = long double;

LD e_lower() {
  return 2.71828182L;
}

// The formula's B_src, B_tgt and REL are evaluated in verify/bounds/mpfr_up.h's Up (256-bit MPFR,
// every operation rounded toward the larger bound; docs/bounds.md §5): B - 1 cancels about
// -log2(B - 1) bits, which a long double evaluation loses (at f64 n = 3 the stated REL came out
// 6e-5 relative below the formula's value).

struct UpperBounds {
  double b_src = 0, b_tgt = 0, rel = 0;
  bool bsrc_below_one = false;
};

// B_src = (1 + γ_{n-1}(u_s))·[(1 + ε_s)(1 + (n-1)·α(u_s)) + n·ω_s] - 1, rounded up.
Up composed_bound(Prec storage, std::int64_t n, double exp_ulp) {
  const Up one(1), us(unit_roundoff(storage)), nn(static_cast<LD>(n)), n1(static_cast<LD>(n - 1));
  const Up es(exp_error(storage, exp_ulp)), ws = model_underflow_up(storage);
  const Up alpha = us / Up(e_lower()) / us.one_minus_down();
  const Up gamma = (n1 * us) / (n1 * us).one_minus_down();
  return ((one + gamma) * ((one + es) * (one + n1 * alpha) + nn * ws)).minus_one();
}

UpperBounds upper_bounds(Prec storage, Prec state, std::int64_t n, double exp_ulp) {
  const Up one(1), us(unit_roundoff(storage)), ut(unit_roundoff(state)), nn(static_cast<LD>(n));
  const Up n1(static_cast<LD>(n - 1));
  // e is taken low (α grows as e shrinks); 1 - u and 1 - k·u are exact at 256 bits.
  auto alpha_up = [&](const Up& u) { return u / Up(e_lower()) / u.one_minus_down(); };
  // The exp error terms as stated (rounded up to doubles): the figures the report prints and the
  // induction's queries take.
  const Up et(exp_error(state, exp_ulp));
  const Up wt = model_underflow_up(state);
  const Up bsrc = composed_bound(storage, n, exp_ulp);
  const Up phi = ((one + et).pow_up(n) * (one + ut).pow_up(2 * (n - 1))).minus_one();
  const Up under = nn * Up(static_cast<LD>(n + 2)) * (one + phi) * (one + phi) * wt;
  const Up rho(storage == state ? 0 : static_cast<LD>(unit_roundoff(storage)));
  const Up btgt = ((one + rho) * ((one + phi) * (one + n1 * alpha_up(ut)) + under)).minus_one();
  UpperBounds r;
  r.bsrc_below_one = bsrc.below_one();
  r.b_src = bsrc.to_double_up();
  r.b_tgt = btgt.to_double_up();
  if (r.bsrc_below_one) r.rel = ((bsrc + btgt) / bsrc.one_minus_down()).to_double_up();
  return r;
}

}  // namespace

NormalizerBound normalizer_bound(Prec storage, Prec state, std::int64_t n, double exp_ulp) {
  NormalizerBound b;
  b.storage = storage;
  b.state = state;
  b.n = n;
  b.exp_ulp = exp_ulp;
  if (!is_float(storage) || !is_float(state) || n < 1) {
    b.undefined_reason = "the bound is defined for floating-point storage and state and n >= 1";
    return b;
  }
  const LD us = unit_roundoff(storage);
  const LD nn = static_cast<LD>(n);
  if ((nn - 1) * us >= 1) {
    b.undefined_reason = fmt::format(
        "(n - 1)·u_storage = {:.3g} >= 1: the composed {}-key sum at {} has no relative bound of this form "
        "(recursive summation may stagnate)",
        static_cast<double>((nn - 1) * us), n, prec_name(storage));
    return b;
  }
  const UpperBounds ub = upper_bounds(storage, state, n, exp_ulp);
  if (!ub.bsrc_below_one) {
    b.undefined_reason = fmt::format("B_src = {:.3g} >= 1: no relative bound of this form", ub.b_src);
    return b;
  }
  b.defined = true;
  b.b_src = ub.b_src;
  b.b_tgt = ub.b_tgt;
  b.rel = ub.rel;
  return b;
}

NormalizerBound fold_bound(Prec storage, Prec state, std::int64_t n, std::int64_t b, double exp_ulp) {
  NormalizerBound r = normalizer_bound(storage, state, n, exp_ulp);
  r.block = b;
  if (!r.defined) return r;
  if (b < 1 || b > n || static_cast<LD>(b) * static_cast<LD>(unit_roundoff(state)) >= 1) {
    r.defined = false;
    r.undefined_reason = fmt::format("block size {} outside 1..n = {} (or b·u_t >= 1)", b, n);
    return r;
  }
  const Up one(1), ut(unit_roundoff(state)), bb(static_cast<LD>(b)), n1(static_cast<LD>(n - 1));
  const Up et(exp_error(state, exp_ulp)), wt = model_underflow_up(state);
  const Up G = (Up(static_cast<LD>(b - 1)) * ut) / (Up(static_cast<LD>(b - 1)) * ut).one_minus_down();
  const Up step = (one + et) * (one + ut) * (one + ut);
  const Up a_block = (one + ut) * wt * (one + (one + G) * bb);
  const Up a_carry = (one + ut) * (one + ut), a_growth = one + et + wt;
  const std::int64_t blocks = (n + b - 1) / b;
  Up P = (one + G) * (one + et), A = (one + G) * bb * wt;
  for (std::int64_t k = 1; k < blocks; ++k) {
    const Up cells(static_cast<LD>(k) * static_cast<LD>(b));
    Up A1 = a_carry * (P * cells * wt + A * a_growth) + a_block;
    Up P1 = P * step;
    mpfr_swap(A.raw(), A1.raw());
    mpfr_swap(P.raw(), P1.raw());
  }
  const Up alpha = ut / Up(e_lower()) / ut.one_minus_down();
  const Up rho(storage == state ? 0 : static_cast<LD>(unit_roundoff(storage)));
  const Up btgt = ((one + rho) * (P * (one + n1 * alpha) + A)).minus_one();
  const Up bsrc = composed_bound(storage, n, exp_ulp);
  r.b_src = bsrc.to_double_up();
  r.b_tgt = btgt.to_double_up();
  r.rel = ((bsrc + btgt) / bsrc.one_minus_down()).to_double_up();
  return r;
}

FoldOutputBound fold_output_bound(Prec storage, Prec state, std::int64_t n, std::int64_t b, double exp_ulp) {
  FoldOutputBound r;
  const NormalizerBound nb = fold_bound(storage, state, n, b, exp_ulp);
  const LD us_ld = unit_roundoff(storage);
  if (!nb.defined || nb.b_tgt >= 1 || static_cast<LD>(n) * us_ld >= 1) {
    r.undefined_reason = nb.defined ? "B_fold >= 1 or n·u_storage >= 1" : nb.undefined_reason;
    return r;
  }
  const bool store = storage != state;
  const Up one(1), u(unit_roundoff(state)), eps(exp_error(state, exp_ulp)), om = model_underflow_up(state);
  const Up us(us_ld), es(exp_error(storage, exp_ulp)), oms = model_underflow_up(storage);
  const Up rho(store ? us_ld : 0), om_store = store ? model_underflow_up(storage) : Up(0);
  // The numerator's invariant through K blocks: a rescale, then b additions each.
  Up onephi = (one + u) * (one + eps), a(0), c(0);
  const Up k_rescale = (one + u) * (one + eps) + (one + u) * om;
  const Up add_a = (one + u) * (one + u) * om;
  const std::int64_t blocks = (n + b - 1) / b;
  for (std::int64_t k = 0; k < blocks; ++k) {
    Up a1 = a * k_rescale + (one + u) * om * onephi, c1 = c * k_rescale + om, p1 = onephi * (one + u) * (one + eps);
    for (std::int64_t j = 0; j < b; ++j) {
      Up a2 = a1 * (one + u) + add_a, c2 = (c1 + om) * (one + u), p2 = p1 * (one + u);
      mpfr_swap(a1.raw(), a2.raw());
      mpfr_swap(c1.raw(), c2.raw());
      mpfr_swap(p1.raw(), p2.raw());
    }
    mpfr_swap(a.raw(), a1.raw());
    mpfr_swap(c.raw(), c1.raw());
    mpfr_swap(onephi.raw(), p1.raw());
  }
  const Up phi = onephi.minus_one();
  const Up bf(nb.b_tgt), bs(nb.b_src);
  const Up alpha = u / Up(e_lower()) / u.one_minus_down(), alpha_s = us / Up(e_lower()) / us.one_minus_down();
  const Up f = (one + u) * (one + rho);
  // The fold's side (o.closing.*), the composed side (src.o.key, src.o.dot-*), the pair (o.pair).
  const Up cA = (phi + bf) / bf.one_minus_down() * f + u * (one + rho) + rho;
  const Up cV = (phi * alpha + a + alpha) / bf.one_minus_down() * f;
  const Up cabs = c / bf.one_minus_down() * f + om * (one + rho) + om_store;
  const Up cAs = (es + bs) / bs.one_minus_down() * (one + us) + us;
  const Up cVs = ((one + es) * alpha_s + oms) * (one + us) / bs.one_minus_down() + oms;
  if (!cAs.below_one()) {
    r.undefined_reason = "the composed probabilities' relative bound is >= 1";
    return r;
  }
  const Up nn(static_cast<LD>(n));
  const Up G = (nn * us) / (nn * us).one_minus_down();
  const Up dabs = nn * (one + G) * oms;
  const Up rel_z = (cA + cAs) / cAs.one_minus_down() + G;
  const Up rel_v = (cA + cAs) * cVs / cAs.one_minus_down() + cV + cVs;
  r.defined = true;
  r.rel_z = rel_z.to_double_up();
  r.rel_v = rel_v.to_double_up();
  r.abs = (cabs + dabs).to_double_up();
  r.kappa = (rel_v / rel_z).to_double_up();
  return r;
}

std::string fold_formula_text() {
  return "|l_fold - l_src| <= REL·|l_src|, REL = (B_src + B_fold)/(1 - B_src); B_src as the scan's; "
         "B_fold = (1 + ρ)·[P_K(1 + (n-1)·α(u_t)) + A_K] - 1 over K = ceil(n/b) blocks of b cells, "
         "P_1 = (1 + γ_{b-1}(u_t))(1 + ε_t), P_{k+1} = P_k(1 + ε_t)(1 + u_t)^2, A_1 = (1 + γ_{b-1}(u_t))·b·ω, "
         "A_{k+1} = (1 + u_t)^2(P_k·k·b·ω + A_k(1 + ε_t + ω)) + (1 + u_t)·ω·(1 + (1 + γ_{b-1}(u_t))·b); "
         "ω = 2^max(log2 ω_t, -200) + 2^-148 (>= Ω_t); the recurrences are the invariant the fold's "
         "induction proves";
}

std::string normalizer_formula_text() {
  return "|l_tgt - l_src| <= REL·|l_src|, REL = (B_src + B_tgt)/(1 - B_src); "
         "B_src = (1 + γ_{n-1}(u_s))·[(1 + ε_s)(1 + (n-1)·α(u_s)) + n·Ω_s] - 1; "
         "B_tgt = (1 + ρ)·[(1 + φ)(1 + (n-1)·α(u_t)) + n(n+2)(1 + φ)^2·Ω_t] - 1; "
         "φ = (1 + ε_t)^n (1 + u_t)^(2(n-1)) - 1; γ_k(u) = k·u/(1 - k·u); α(u) = u/(e(1 - u)); "
         "ε_p = relative error of exp.p: f64 η64 = exp_ulp·2^-52, f32 η32 = U32·2^-23, f16/bf16 "
         "(1 + η32)(1 + u_p) - 1, U32 = the measured fp_exp32 ulp figure; Ω_p = 2^max(log2 ω_p, -200) + "
         "2^-148, at or above the absolute error of exp.p below p's normal range (f64 2ω_64, f32 U32·2^-149, "
         "f16/bf16 ω_p + U32·2^-149·(1 + u_p)); "
         "ρ = u_s if storage != state else 0; ω_p = half the smallest subnormal of p; u_s, u_t the unit "
         "roundoffs of storage and state";
}

std::string normalizer_instantiated_text(const NormalizerBound& b) {
  if (!b.defined) return "undefined: " + b.undefined_reason;
  return fmt::format(
      "n = {}, storage {} (u_s = 2^-{}, ε_s = {:.6g}), state {} (u_t = 2^-{}, ε_t = {:.6g}): B_src = {:.6g}, "
      "B_tgt = {:.6g}, REL = {:.6g}",
      b.n, prec_name(b.storage), significand_bits(b.storage), exp_error(b.storage, b.exp_ulp),
      prec_name(b.state), significand_bits(b.state), exp_error(b.state, b.exp_ulp), b.b_src, b.b_tgt, b.rel);
}
}  // namespace fp::verify
