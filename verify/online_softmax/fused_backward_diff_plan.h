#pragma once
// The certified plan `flashproof diff --rewrite` compares a fused backward's gradients with
// (docs/bounds.md §8.1), at any size: the joint plan of the claims `backward-dq` and `backward-dk`
// (Checker::joint_plan of `certified-bound.fused-backward`).
//
// Reads, in the original routine, the composed step the application matched: the probabilities
// p[S] = e[S] / l[S - t] (the key axis t, the pair layout S), the value pass o += p·v and
// dP += dO·v (O and dO in S with the key replaced by the value width), the gradient chain from
// dS back to ng (links 0 + y, the mask's where(c, y, 0), at most one product by a constant c),
// and each gradient's one contraction X += pair·operand (dS·k for dQ, dS·q for dK, p·dO for dV).
// Other applications may perturb l and O within certified checks (a two-pass or fold forward);
// anything else the backward reads (q, k, v, dO, the row max, the scores) must be unperturbed.
//
// After the source run, `complete` evaluates per query row the pair bounds of §8 / §8.1 from the
// source's e, l, dP, O, dO and the forward's certified |l_tgt - l| and Σ|dO|·|O_tgt - O| (MPFR,
// rounded up), writes the pair terms T (dQ, dK) and a (dV) in the pair layout, and runs each
// gradient's contraction with T (or a) for the pair factor and |operand| for the other, in f64, on
// the diff's first executor; each cell's bound is that sum, raised by (1 + 2γ_m(2⁻⁵³)) and m
// subnormal units for the f64 evaluation, plus the contraction's tail. A row outside the bound's
// hypotheses bounds nothing (its cells must be equal or NaN on both sides), except a row whose
// score gradients are all exactly 0 in the source (fully masked: the same where gives 0 on both
// sides), which contributes nothing. A row with non-finite values no mask accounts for (a non-finite
// input, an overflow) is outside every statement of §8 — the two forms need not even agree on where
// NaN appears — and then the plan certifies nothing on that run: its outputs move to the stand-in,
// with a note. dQ (with dV, when l is perturbed) belongs to `backward-dq`'s plan, dK to
// `backward-dk`'s.

#include <optional>
#include <string>

#include "core/ir.h"
#include "rewrites/application.h"
#include "verify/downstream_bounds.h"

namespace fp::verify {

std::optional<DownstreamPlan> plan_fused_backward_gradients(const Routine& src, const Application& app,
                                                            const Obligation& ob, const UpstreamOf& upstream,
                                                            double exp_ulp, std::string* why);

}  // namespace fp::verify
