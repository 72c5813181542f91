#include "verify/online_softmax/bounds/induction_instance.h"

#include <mpfr.h>

#include <algorithm>
#include <cmath>

#include "verify/bounds/rounding_model.h"

namespace fp::verify {

namespace {

struct Mp {
  mpfr_t v;
  Mp() { mpfr_init2(v, 256); }
  ~Mp() { mpfr_clear(v); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
};

}  // namespace

smt::InductionQuery induction_query(Prec storage, Prec state, double exp_ulp) {
  smt::InductionQuery q;
  q.storage_bits = significand_bits(storage);
  q.state_bits = significand_bits(state);
  q.eps_storage = exp_error(storage, exp_ulp);
  q.eps_state = exp_error(state, exp_ulp);
  q.omega_storage_log2 = model_underflow_lead_log2(storage);
  q.omega_state_log2 = model_underflow_lead_log2(state);
  q.omega_tail_log2 = kModelUnderflowTailLog2;
  // Smallest normal: 2^(1 - bias), bias 15 (f16), 127 (f32, bf16), 1023 (f64).
  const int emin = storage == Prec::F16 ? -14 : storage == Prec::F64 ? -1022 : -126;
  q.storage_min_normal = std::ldexp(1.0, emin);
  q.final_store = storage != state;
  return q;
}

InductionInstance induction_instance(const smt::InductionQuery& q, std::int64_t n, double stated) {
  InductionInstance r;
  const mpfr_rnd_t U = MPFR_RNDU, D = MPFR_RNDD;
  Mp us, ut, es, et, ws, wt, elow, nn, n1, t, t2, g, as, at, bs, p, a, bt, rel, den;
  mpfr_set_ui_2exp(us.v, 1, -q.storage_bits, U);
  mpfr_set_ui_2exp(ut.v, 1, -q.state_bits, U);
  mpfr_set_d(es.v, q.eps_storage, U);
  mpfr_set_d(et.v, q.eps_state, U);
  mpfr_set_ui_2exp(ws.v, 1, q.omega_storage_log2, U);
  mpfr_set_ui_2exp(wt.v, 1, q.omega_state_log2, U);
  mpfr_set_ui_2exp(t.v, 1, q.omega_tail_log2, U);
  mpfr_add(ws.v, ws.v, t.v, U);
  mpfr_add(wt.v, wt.v, t.v, U);
  mpfr_set_str(elow.v, "2.71828182", 10, D);  // e's lower end, as the queries take it
  mpfr_set_si(nn.v, n, U);                    // exact
  mpfr_set_si(n1.v, n - 1, U);                // exact
  // γ_{n-1}(u_s) = (n-1)u_s / (1 - (n-1)u_s): numerator up, denominator down.
  mpfr_mul(t.v, n1.v, us.v, U);
  mpfr_mul(t2.v, n1.v, us.v, D);
  mpfr_ui_sub(t2.v, 1, t2.v, D);
  if (mpfr_sgn(t2.v) <= 0) return r;
  mpfr_div(g.v, t.v, t2.v, U);
  // α(u) = u / (e_low (1 - u)).
  auto alpha = [&](Mp& out, const Mp& u) {
    Mp d;
    mpfr_ui_sub(d.v, 1, u.v, D);
    mpfr_mul(d.v, d.v, elow.v, D);
    mpfr_div(out.v, u.v, d.v, U);
  };
  alpha(as, us);
  alpha(at, ut);
  // B_src = (1 + γ)((1 + ε_s)(1 + (n-1)α_s) + n·ω_s) - 1.
  mpfr_mul(t.v, n1.v, as.v, U);
  mpfr_add_ui(t.v, t.v, 1, U);
  mpfr_add_ui(t2.v, es.v, 1, U);
  mpfr_mul(t.v, t.v, t2.v, U);
  mpfr_mul(t2.v, nn.v, ws.v, U);
  mpfr_add(t.v, t.v, t2.v, U);
  mpfr_add_ui(t2.v, g.v, 1, U);
  mpfr_mul(t.v, t.v, t2.v, U);
  mpfr_sub_ui(bs.v, t.v, 1, U);
  // 1 + φ = (1 + ε_t)^n (1 + u_t)^(2(n-1)).
  mpfr_add_ui(t.v, et.v, 1, U);
  mpfr_pow_ui(t.v, t.v, static_cast<unsigned long>(n), U);
  mpfr_add_ui(t2.v, ut.v, 1, U);
  mpfr_pow_ui(t2.v, t2.v, static_cast<unsigned long>(2 * (n - 1)), U);
  mpfr_mul(p.v, t.v, t2.v, U);
  // A = n(n+2)(1 + φ)²ω_t.
  mpfr_add_ui(t.v, nn.v, 2, U);
  mpfr_mul(t.v, t.v, nn.v, U);
  mpfr_mul(t.v, t.v, p.v, U);
  mpfr_mul(t.v, t.v, p.v, U);
  mpfr_mul(a.v, t.v, wt.v, U);
  // B_tgt = (1 + ρ)((1 + φ)(1 + (n-1)α_t) + A) - 1, ρ = u_s when the result is stored narrower.
  mpfr_mul(t.v, n1.v, at.v, U);
  mpfr_add_ui(t.v, t.v, 1, U);
  mpfr_mul(t.v, t.v, p.v, U);
  mpfr_add(t.v, t.v, a.v, U);
  if (q.final_store) {
    mpfr_add_ui(t2.v, us.v, 1, U);
    mpfr_mul(t.v, t.v, t2.v, U);
  }
  mpfr_sub_ui(bt.v, t.v, 1, U);
  // REL = (B_src + B_tgt) / (1 - B_src): numerator up, denominator down.
  mpfr_ui_sub(den.v, 1, bs.v, D);
  if (mpfr_sgn(den.v) <= 0) return r;
  mpfr_add(t.v, bs.v, bt.v, U);
  mpfr_div(rel.v, t.v, den.v, U);
  r.defined = true;
  r.b_src = mpfr_get_d(bs.v, U);
  r.b_tgt = mpfr_get_d(bt.v, U);
  r.rel = mpfr_get_d(rel.v, U);
  r.covered = mpfr_cmp_d(rel.v, stated) <= 0;
  return r;
}

}  // namespace fp::verify
