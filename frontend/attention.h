#pragma once
// The standard attention programs, composed the way a tensor compiler's attention block is: the
// score contraction, the scale, the mask `where`, softmax as five separate operations (max, shift,
// exp, sum, divide), optional dropout, and the value contraction — forward, or the training step
// (forward + composed backward in one routine). Built through the frontend (frontend/), so
// the raw lowering is exactly the nest sequence the rewrite tier recognizes; docs/frontend.md
// lists it nest by nest.
//
// Layout (axes b batch, s query, t key, h head, d head width, e value width, c model width):
//   leaf:     inputs q[b,s,h,d], k[b,t,h,d], v[b,t,h,e]; output o[b,s,h,e]
//   non-leaf: input x[b,s,c]; weights w_q[c,h,d], w_k[c,h,d], w_v[c,h,e], w_o[h,e,c]; output
//             y[b,s,c] (self-attention: needs sq == sk)
//   train:    input dout with the output's dims (loss = Σ output·dout); outputs the gradients of
//             every leaf (grad_q, grad_k, grad_v; or grad_x and the weights' gradients)
//   dropout:  input dropout_u[b,s,h,t] (uniform numbers in [0, 1)); P' = P * (r < u) / (1 - r)
//   layers N: per-layer names get the suffix _1 .. _N; leaf layer i > 1 takes its queries from
//             o_{i-1} (needs d == e) and its own k_i, v_i; non-leaf layer i > 1 takes y_{i-1} as x.
//
// Masks (key t visible from query s; off = sk - sq aligns the last query with the last key):
//   none        every key
//   causal      t <= s + off
//   prefix:N    t < N, or causal
//   padding:N   t < sk - N (the last N keys are padding)
//   banded:W    s + off - W < t <= s + off (a sliding window of the W latest keys; W >= 1)
//   random:SEED mask_keep[b,s,h,t] > 0.5: a per-cell pattern is not affine in (s, t), so it is
//               data — an input mask_keep (per layer: mask_keep_i) at the program's precision,
//               1 = visible; the routine gets the attribute mask_seed = SEED, and
//               core/random_inputs.h draws the cell (b,s,h,t) as a fixed pseudo-random bit of
//               (s, t, SEED) (random_mask_bit), whatever the data seed
// A masked score takes the fill value (-inf by default; a row with no visible key then gives NaN,
// exactly as composed softmax does).

#include <cstdint>
#include <optional>
#include <string>

#include "frontend/tensor_expr.h"
#include "core/ir.h"

namespace fp {

struct AttentionSpec {
  std::int64_t batch = 1, heads = 1, sq = 4, sk = 4, d = 8, e = 8;
  std::optional<double> scale;     // default 1/sqrt(d)
  std::string mask = "none";       // none | causal | prefix:N | padding:N | banded:W | random:SEED
  std::string mask_fill = "-inf";  // -inf | inf | nan | a finite number
  double dropout = 0;
  Prec precision = Prec::F32;
  bool train = false;
  bool leaf = true;
  int layers = 1;
  std::int64_t dmodel = 0;  // non-leaf model width; 0 means heads * d
};

// Largest accepted size of one dimension, and number of layers.
inline constexpr std::int64_t kMaxAttentionSize = std::int64_t{1} << 20;
inline constexpr int kMaxAttentionLayers = 256;

// The forward tensor-expression program (the training step differentiates it). Throws
// UserError(kExitUsage) for an invalid spec: a size < 1 or > 2^20, a node above 2^40 cells, a
// malformed mask or fill, dropout outside [0, 1), a scale that is not 0 and not a normal number
// once rounded to the precision (inf, 0 or a subnormal: the message gives the range), a non-float
// precision, layers outside 1..256, stacked leaf layers with d != e, non-leaf attention with
// sq != sk.
fe::Program attention_program(const AttentionSpec& spec);

// The lowered routine: `attention_forward`, or `attention_train` when spec.train. Attributes
// seq_q and seq_k hold sq and sk.
Routine build_attention(const AttentionSpec& spec);

}  // namespace fp
