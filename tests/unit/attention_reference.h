#pragma once
// An INDEPENDENT float64 reference for leaf attention, written as plain C++ loops over the
// formulas — it shares nothing with the frontend, the IR or the interpreter — plus the test
// helpers the attention and autodiff tests share (deterministic inputs, a tolerance criterion,
// finite differences).
//
// Forward, per batch b, head h, query s (visible(s, t) as in frontend/attention.h):
//   x_t = visible ? scale·Σ_d q[s,d]·k[t,d] : fill        m = max_t x_t (NaN propagates)
//   p_t = exp(x_t − m) / Σ_t' exp(x_t' − m)                p'_t = p_t·[r < u_t]/(1 − r)
//   o[s,e] = Σ_t p'_t·v[t,e]
// Backward of loss Σ o·dout, the analytic softmax gradient (max not differentiated, which is
// exact: softmax is shift invariant):
//   dp_t = (Σ_e dout[s,e]·v[t,e])·[r < u_t]/(1 − r)        D = Σ_t p_t·dp_t
//   ds_t = visible ? scale·p_t·(dp_t − D) : 0
//   dq[s,d] = Σ_t ds_t·k[t,d]   dk[t,d] = Σ_s ds_t·q[s,d]   dv[t,e] = Σ_s p'_t·dout[s,e]
// NaN arises where the composed program gives it: a row with no visible key under fill −inf
// (exp(−inf − −inf)), a NaN or +inf fill reaching the max, and everything downstream of them.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/attention.h"
#include "core/interpreter.h"

namespace fp::testref {

struct AttentionReference {
  std::vector<double> o, dq, dk, dv;
};

// q[b,sq,h,d], k[b,sk,h,d], v[b,sk,h,e], dout[b,sq,h,e], u[b,sq,h,sk] (u empty without dropout;
// dout empty for forward only), row-major. Supports spec.leaf with one layer.
AttentionReference attention_reference(const AttentionSpec& spec, const std::vector<double>& q,
                                       const std::vector<double>& k, const std::vector<double>& v,
                                       const std::vector<double>& dout, const std::vector<double>& u);

// Deterministic inputs (SplitMix64; no std distributions, so the same everywhere): every input node
// of `r` filled uniformly from [lo, hi) — [0, 1) for nodes named dropout_u* — rounded to the node's
// precision; a random mask's mask_keep* holds its pattern (core/random_inputs.h).
TensorMap make_inputs(const Routine& r, std::uint64_t seed, double lo = -1.0, double hi = 1.0);

// The mixed criterion every numeric comparison uses: |got − ref| <= tol·(|ref| + rms(ref)), where
// rms is over the finite reference values (so a cell near zero is judged against the tensor's
// typical size, not against itself); NaN must match NaN exactly and an infinity must be equal.
::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& ref, double tol,
                                 const std::string& what);

// Central finite differences of loss(inputs) with respect to every cell of input `name`.
std::vector<double> finite_difference(const TensorMap& inputs, const std::string& name, double h,
                                      const std::function<double(const TensorMap&)>& loss);

// Σ over the pairs (output, seed): Σ_i outputs[output][i] · inputs[seed][i].
double dot_loss(const TensorMap& outputs, const TensorMap& inputs,
                const std::vector<std::pair<std::string, std::string>>& terms);

}  // namespace fp::testref
