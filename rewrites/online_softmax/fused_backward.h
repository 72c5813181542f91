#pragma once
// Shape 3 of online softmax — the fused backward, FlashAttention's backward (id
// online-softmax.fused-backward). Gate: `online_softmax` and `online_softmax_backward` on (on in the
// approximate profile, off in reproducible).
//
// MATCHES, per normalizer shape 1 recognized (normalizer_scan.h: m = max x, n = x - m, e = exp n,
// l = Σ e over the key axis t), in a routine that also holds its composed backward (a training
// step). Nests are related through the axes of the nodes they share (axis_roles.h: the row roles,
// the key role, and two channel roles — the value width `c0`, the head width `c1`):
//   P       P = div(e, l)                        the value pass's probabilities, P's only writer
//   VP      O += P·v                             the value pass: one loop beyond x's roles (c0)
//   A       dP += dO·v                           dO read at O's axes (dO ≠ O), dP at x's roles
//   C1      eg += dP / l                         the two readers of dP, exactly
//   D       lg += dP·(−e / (l·l))                (−e may be neg(e), −1·e or e·−1; l·l or pow(l, 2))
//   C2      eg += lg                             lg's only reader; D before C2
//   E       ng += eg·e                           eg's only reader besides C1, C2
//   links   g_i += f_i(g_{i−1})                  from ng, each node's only reader, an accumulation
//                                                onto a zeroed node of x's roles (the mask's where,
//                                                the scale), up to the node dS with two readers:
//   K, L    dQ += dS·k (target: rows, c1)  and  dK += q·dS (target: key, c1, not every row)
//                                                {q, k} the score contraction's factors (score_chain.h)
//   B       dV += P·dO                           P's only reader besides the value pass
// Every intermediate (dP, eg, lg, ng, the links, dS) is zeroed once and accumulated only by its
// matched nest(s).
//
// EMITS at the first matched nest (all matched nests and the intermediates' zero-outs deleted),
// with one fresh symbol per role and SP the wider of x's and dP's state precisions:
//   D[m's cells] := Σ_c0 dO·O                          minted node (m's dims, SP)
//   dQ:  for rows { for t { pair; for c1: K with dS -> ds } }
//   dK:  for dK's own axes but c1 { for the other rows { pair; for c1: L with dS -> ds } }
//   dV:  for dV's own axes but c0 { for the other rows { p; for c0: B with P -> p } }
// where the pair recomputes, in scope locals at each node's own precision, the score contraction
// (its reduced loops in order), the chain to x, n, e and p = P's cell (bit for bit the composed
// values: the same operations on the same operands), dp := 0 + Σ_c0 A's product (dP's cell, bit
// for bit), ds := p·(dp − D) at SP, then each link's accumulation 0 + f_i(ds) in order (the mask's
// where and the scale act on ds only: a masked cell gives the composed 0 exactly). Each nest writes
// only its own gradient, its outer loops indexing it (no races), its cells accumulated over the
// same key (query) order as the composed contraction.
// SKIPS (blocked form): when x = where(pred, ·, fill) with pred an i32 predicate of the indices
// monotone in the block's cell (lt of affine indices, and max / min of such: causal, padding and
// prefix masks), the steps that only feed where's live branch — S's zero and contraction and the
// chain before x; with a link 0 + where(pred, ds, 0), dp's zero and contraction, ds and the links
// before it — run under `if live`, live = pred at the block's cell where it is true longest (its
// first if pred can only fall along the block, its last if it can only rise). A block every cell
// of which is masked then skips its score and dp contractions; the wheres still run and select the
// fill and 0 as before, whatever the tiles hold: bit for bit the same values.
//
// CLAIMS: exact `backward-dv` (dV: the same products in the same order, p bit for bit); bounded
// `backward-dq` and `backward-dk` (ds reassociates the composed (dP / l + lg)·e, and D is Σ dO·O
// instead of Σ_t p·dP; certified per cell: docs/bounds.md §8). The per-cell summation order of the
// three gradients is proved for every size of the blocked template (verify/online_softmax/fused_backward_order.h).
//
// DECLINES (the backward stays composed; code in brackets):
//   [no-normalizer]           a composed softmax backward (an l.grad term −e / (l·l)) in a routine
//                             with no forward normalizer to anchor on (reported once per routine)
//   [value-pass-not-direct]   the value pass reads probabilities that are not e / l directly
//                             (a dropout-like step)
//   [backward-shape]          a step of the pattern above is missing or has another form
//   [composed-max-gradient]   the max's gradient is composed (a gradient of x reduced into a node
//                             of the row axes)
//   [gradient-reader]         a consumed gradient node has another reader
//   [requested-intermediate]  a consumed node is requested, an input or an output
//   [dead-or-partial-loop]    a matched nest has a loop that runs zero times or not over its axis
//   [mixed-precision]         P is not at x's precision, or the backward's intermediates are not
//                             all at dP's precision, or not floating point
//   [input-written-in-span]   a node the fused nests read is written at or after the emit position
//   [gradient-output-touched] dQ, dK or dV is read or written between the emit position and its
//                             contraction, or accumulated by another statement
//   [opaque-in-span]          a statement that is not a nest (a guard, a scan, locals) touches a
//                             matched node inside the span

#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "core/ir.h"
#include "rewrites/application.h"
#include "rewrites/name_minter.h"
#include "rewrites/online_softmax/normalizer_scan.h"
#include "rewrites/online_softmax/routine_view.h"

namespace fp::osm {

struct BackwardMatch;  // fused_backward_match.h

struct BackwardPlan {
  std::shared_ptr<const BackwardMatch> match;
  int emit_at = -1;                         // 0-based: where the four nests go
  std::vector<int> consumed;                // 0-based, sorted, emit_at included
  std::vector<std::string> consumed_nodes;  // the intermediates (their declarations go)
};

// The fused backward of `nz`, a Decline saying why not, or nullopt when the routine has no composed
// backward of this normalizer at all (an inference routine: nothing to say).
std::optional<std::variant<BackwardPlan, Decline>> match_backward(const RoutineView& view,
                                                                  const Normalizer& nz);

// With no normalizer in the routine: a decline for a composed softmax backward found anyway.
std::optional<Decline> orphan_backward(const RoutineView& view);

// Cells of the pair's other axis per block in the blocked form.
inline constexpr std::int64_t kBackwardBlock = 64;

struct BackwardEmission {
  std::vector<StmtP> stmts;  // D, dQ, dK, dV
  std::vector<Node> nodes;   // D, and the blocked form's tiles
  bool blocked = false;      // at least one nest in the blocked form
  bool skips = false;        // fully masked blocks skip their score (and dp) steps (SKIPS)
};
// `allow_blocks` false: every nest in the per-pair form (tests compare the two bit for bit).
BackwardEmission emit_backward(const BackwardPlan& plan, const RoutineView& view, NameMinter& names,
                               bool allow_blocks = true);

Application backward_application(const BackwardPlan& plan, const RoutineView& view,
                                 const BackwardEmission& em);

}  // namespace fp::osm
