#pragma once
// The online-softmax member of the rewrite tier (id `online-softmax`, gate `online_softmax`):
// shapes 1, 2 and 4 of the specification (docs/online_softmax.md, "From the specification"). Its
// shapes, applied in this order within one application of the member:
//   4. online-softmax.block-fold (block_fold.h), only with online_softmax_block = B > 0: a
//      normalizer and its value pass become one scan per row over key blocks of B; a normalizer
//      it declines goes on to shape 1.
//   1. online-softmax.normalizer-scan (normalizer_scan.h): every (max, sum-of-shifted-exp) pair
//      over one axis becomes one scan per row; bounded claim.
//   2. online-softmax.value-pass-hoist (value_pass_hoist.h): every reduction consuming the
//      normalized probabilities reads them once, its other loops moved innermost; exact claim.
// The hoist only fires in a routine where shape 1 recognized a normalizer (whether or not shape 1
// is enabled to rewrite it) and never on a normalizer's own statements or a fold's.
//
// Idempotent, as the tier's fixpoint requires: the output has no max-reduction nest left to anchor
// a normalizer on (the max nest became loops around a scan, or was folded away), hence no
// normalized nodes and no hoist candidates; a hoisted reduction is no longer a nest either.
//
// online_softmax_backward selects shape 3, which this version of the tier does not implement:
// with it set, shapes 1 and 2 apply as above (the specification's fallback when that shape
// declines). online_softmax_block = auto resolves to osm::kAutoFoldBlock (64), the block size the CPU
// sweep chose (docs/performance.md, "B sweep").

#include <cstdint>
#include <string>

#include "rewrites/member.h"

namespace fp {

inline constexpr const char* kOnlineSoftmaxId = "online-softmax";

Member online_softmax_member();

// The member's function as the tier calls it: its options read off the context.
MemberOutput rewrite_online_softmax(const Routine& r, const MemberContext& ctx);

namespace osm {

// What the member applies, typed: the shapes that may apply, the fold's block size (0: no fold,
// the two-pass form), and the round recorded in applications and declines.
struct RewriteOptions {
  bool scan = true, hoist = true, fold = true, backward = false;
  std::int64_t block = 0;
  int round = 1;
  // Only the shape with this id (claims.h), folding in blocks of `block` where that is the fold.
  static RewriteOptions only(const std::string& shape, std::int64_t block = 0);
};
RewriteOptions options_of(const MemberContext& ctx);

// The member's function under typed options (the member's proofs build their references with it).
MemberOutput rewrite(const Routine& r, const RewriteOptions& options);

}  // namespace osm

}  // namespace fp
