#pragma once
// What the online-softmax member hands to its proofs (verify/online_softmax/): the ids of its
// shapes and claims, the roles each shape records in its Application, and the parameters of its
// bounded claims' bounds. The rewriter writes them (the *_application functions of each shape)
// and the member's checkers read them back through the same names and types, so the two rooms
// agree by construction and nothing outside them needs to know either.

#include <cstdint>
#include <string>

#include "core/ir.h"
#include "rewrites/application.h"

namespace fp::osm {

// ---- shapes ----------------------------------------------------------------------------------
inline constexpr const char* kNormalizerScanId = "online-softmax.normalizer-scan";
inline constexpr const char* kValuePassHoistId = "online-softmax.value-pass-hoist";
inline constexpr const char* kBlockFoldId = "online-softmax.block-fold";
inline constexpr const char* kFusedBackwardId = "online-softmax.fused-backward";

// The configuration key of the fold's block size (a proof re-emits small instances under it).
inline constexpr const char* kBlockKey = "online_softmax_block";

// ---- claims (Obligation::claim) ----------------------------------------------------------------
namespace claim {
inline constexpr const char* kNormalizerMax = "normalizer-max";
inline constexpr const char* kNormalizerSum = "normalizer-sum";
inline constexpr const char* kValuePass = "value-pass";
inline constexpr const char* kFoldMax = "fold-max";
inline constexpr const char* kFoldSum = "fold-sum";
inline constexpr const char* kFoldOutput = "fold-output";
inline constexpr const char* kBackwardDv = "backward-dv";
inline constexpr const char* kBackwardDq = "backward-dq";
inline constexpr const char* kBackwardDk = "backward-dk";
}  // namespace claim

// ---- the bound's parameters (Obligation::bound) -----------------------------------------------

// A sum of `terms` exponentials reassociated into a running rescaled sum, stored at `storage`,
// carried at `state`; a block fold's in blocks of `block` keys (min(B, terms); 0: one key per
// step). The normalizer's and the fold's bounded claims carry it (docs/bounds.md §5, §7).
struct SumTerms final : BoundParameters {
  std::int64_t terms = 0;
  Prec storage = Prec::F32;
  Prec state = Prec::F32;
  std::int64_t block = 0;

  SumTerms(std::int64_t terms_, Prec storage_, Prec state_, std::int64_t block_ = 0)
      : terms(terms_), storage(storage_), state(state_), block(block_) {}
  std::string text() const override;
  std::string identity() const override;
};

// The SumTerms of `ob`, or nullptr when it carries none.
inline const SumTerms* sum_terms(const Obligation& ob) {
  return bound_parameters<SumTerms>(ob);
}

// ---- roles (Application::matched) -------------------------------------------------------------

// The fused backward's matched nodes: the forward's (scores x, probabilities p, output o, values v,
// row max m, exps e, row sum l) and the backward's (dO, dP = dO·vᵀ, dS the score gradient after
// the chain, ng before it, q and k the contraction operands, the three gradients).
struct BackwardRoles {
  std::string x, p, o, v, d_out, d_p, d_s, q, k, d_q, d_k, d_v, m, e, l, ng;
};
std::vector<std::pair<std::string, std::string>> matched_roles(const BackwardRoles& r);
BackwardRoles backward_roles(const Application& app);

// The block fold's matched nodes: scores x, row max m, row sum l, probabilities p, output o,
// values v, and the score node its chain starts from.
struct FoldRoles {
  std::string x, m, l, p, o, v, scores;
};
std::vector<std::pair<std::string, std::string>> matched_roles(const FoldRoles& r);
FoldRoles fold_roles(const Application& app);

// The normalizer scan's matched nodes: scores x, row max m, shifted scores n, exps e, row sum l;
// the row loops' symbols ("-" for none) and the reduced axis' symbol.
struct NormalizerRoles {
  std::string x, m, n, e, l, rows, reduced;
};
std::vector<std::pair<std::string, std::string>> matched_roles(const NormalizerRoles& r);
NormalizerRoles normalizer_roles(const Application& app);

// The hoisted value pass: the reduction's target, the hoisted factor w and the other factor v.
struct HoistRoles {
  std::string target, w, v;
};
std::vector<std::pair<std::string, std::string>> matched_roles(const HoistRoles& r);

// The contraction operand of a gradient the fused backward claims (k for dQ, q for dK, dO for dV),
// "" when `gradient` is none of the three.
std::string contraction_operand(const BackwardRoles& r, const std::string& gradient);

}  // namespace fp::osm
