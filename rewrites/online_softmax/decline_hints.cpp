// The online-softmax declines' hints (decline_hints.h).

#include "rewrites/online_softmax/decline_hints.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "rewrites/online_softmax/claims.h"

namespace fp::osm {

namespace {

// The softmax the normalizer scan matches, statement by statement.
constexpr const char* kSoftmaxForm =
    "write the softmax one statement per step, each into its own node: m[i] = -inf, then m[i] = max(m[i], "
    "x[i, j]); n[i, j] = x[i, j] - m[i]; e[i, j] = exp(n[i, j]); zero l, then l[i] = l[i] + e[i, j] "
    "(docs/online_softmax.md, shape 1; `flashproof attention` writes this form)";

const std::map<std::pair<std::string, std::string>, std::string>& hints() {
  static const std::map<std::pair<std::string, std::string>, std::string> table = {
      {{kNormalizerScanId, "no-sum-chain"},
       "if this max belongs to a softmax, " + std::string(kSoftmaxForm) +
           "; a max reduction that is not a softmax is declined by design"},
      {{kNormalizerScanId, "program-order"}, std::string("keep the order max, shift, exp, sum: ") + kSoftmaxForm},
      {{kNormalizerScanId, "extra-writer"},
       "give the shift and the exps nodes of their own (no other statement writes them), and write m and l "
       "only in the softmax's own statements"},
      {{kNormalizerScanId, "chain-precision-mismatch"},
       "keep m, n, e, l and their operations at the scores' precision; convert before the max or after the "
       "sum"},
      {{kNormalizerScanId, "index-mismatch"},
       "index the shift, the exps and the sum over the max's own axes (the same row loops, the reduced loop "
       "last)"},
      {{kBlockFoldId, "value-pass-not-direct"},
       "by design: the fold computes p·v from e / l itself, so a step between the probabilities and the value "
       "pass (dropout) keeps the two-pass form; --disable " + std::string(kBlockFoldId) +
           " stops trying it"},
      {{kFusedBackwardId, "value-pass-not-direct"},
       "by design: the fused backward recomputes e / l, so a step between the probabilities and the value "
       "pass (dropout) keeps the composed backward; --disable " + std::string(kFusedBackwardId) +
           " stops trying it"},
      {{kBlockFoldId, "tile-too-large"},
       "set a smaller block (--set online_softmax_block=N) or leave it at auto"},
      {{kFusedBackwardId, "no-normalizer"},
       "compile the backward in one routine with its forward (`flashproof attention --mode train` writes "
       "that form): the fused backward anchors on the forward's normalizer"},
      {{kFusedBackwardId, "requested-intermediate"},
       "do not request the softmax's intermediates (the probabilities, their gradient) as outputs: the fused "
       "backward does not keep them"},
  };
  return table;
}

}  // namespace

std::string decline_hint(const Decline& d) {
  if (auto it = hints().find({d.shape, d.code}); it != hints().end()) return it->second;
  return fmt::format("docs/online_softmax.md lists [{}] under {} with the form the shape matches", d.code,
                     d.shape);
}

}  // namespace fp::osm
