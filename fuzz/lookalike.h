#pragma once
// Look-alikes of a lowered attention program (frontend/attention.h): small edits of the composed
// softmax chain that leave a program which still looks like attention to a pattern matcher but is
// not the same computation, or is the same computation spelled so that a shortcut would break it.
// Every rewrite of the tier must decline each one or rewrite it faithfully; the fuzzing targets
// check that against the interpreter and the verifier.
//
// Every look-alike edits one layer's chain (drawn from the seed when there are several), names
// its new nodes after the chain's (`row_max2`, `l_copy`, ... plus the layer's suffix) and returns
// a routine that is well formed (core/checker.h finds nothing), keeps every access in bounds and
// differs from the input:
//   sum-over-other-axis  the normalizer's sum reduces over another loop than the max's: down the
//                        column (exps[b, t, h, s], sq == sk), over the heads or the batch too, or
//                        over the queries as well as the keys
//   second-max           an extra max over the raw scores feeding the shift (x - max(m, m2)), or
//                        the sum nest turned into a max
//   shifted-read         a reduction reads its operand one key (or one query) further on, with
//                        its loop one shorter so the read stays in bounds: the sum, the max or
//                        the p·v contraction
//   extra-reader-of-l    a new output written from the normalizer l (l, or m + l) after the chain
//   extra-reader-of-p    a new output written from the probabilities (or the exps) after it
//   extra-reader-of-max  a new output written from the row max after it
//   dropout-like-step    an elementwise step between the probabilities and the p·v contraction (a
//                        scaling, a threshold on p itself, p squared) that the p·v contraction reads
//   sum-without-exp      the normalizer sums the shifted scores instead of their exps
// A kind that cannot apply (no chain, or the sizes leave no room: a shift over one key) gives
// nullopt.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ir.h"

namespace fp::fuzz {

enum class Lookalike : std::uint8_t {
  None,
  SumOverOtherAxis,
  SecondMax,
  ShiftedRead,
  ExtraReaderOfL,
  ExtraReaderOfP,
  ExtraReaderOfMax,
  DropoutLikeStep,
  SumWithoutExp,
};

// Every kind but None, in declaration order.
const std::vector<Lookalike>& lookalike_kinds();
// The kebab-case name ("none", "sum-over-other-axis", ...).
const char* lookalike_name(Lookalike k);
// nullopt for an unknown name.
std::optional<Lookalike> parse_lookalike(const std::string& name);

// The look-alike of `attention` (a routine of build_attention) of this kind, its variant and
// layer drawn from `seed`; nullopt when the kind does not apply (always for None).
std::optional<Routine> make_lookalike(const Routine& attention, Lookalike kind, std::uint64_t seed);

}  // namespace fp::fuzz
