#include "rewrites/online_softmax/claims.h"

#include <fmt/format.h>

namespace fp::osm {

std::string SumTerms::text() const {
  return fmt::format("{} terms, storage {}, state {}{}", terms, prec_name(storage), prec_name(state),
                     block ? fmt::format(", blocks of {}", block) : std::string());
}

std::string SumTerms::identity() const {
  return fmt::format("sum-terms terms={} storage={} state={} block={}", terms, prec_name(storage), prec_name(state),
                     block);
}

std::vector<std::pair<std::string, std::string>> matched_roles(const BackwardRoles& r) {
  return {{"x", r.x},   {"p", r.p},   {"o", r.o},     {"v", r.v},     {"dO", r.d_out}, {"dP", r.d_p},
          {"dS", r.d_s}, {"q", r.q},   {"k", r.k},     {"dQ", r.d_q},  {"dK", r.d_k},   {"dV", r.d_v},
          {"m", r.m},   {"e", r.e},   {"l", r.l},     {"ng", r.ng}};
}

BackwardRoles backward_roles(const Application& app) {
  auto at = [&](const char* role) { return matched_node(app, role); };
  return BackwardRoles{at("x"),  at("p"),  at("o"),  at("v"),  at("dO"), at("dP"), at("dS"), at("q"),
                       at("k"),  at("dQ"), at("dK"), at("dV"), at("m"),  at("e"),  at("l"),  at("ng")};
}

std::vector<std::pair<std::string, std::string>> matched_roles(const FoldRoles& r) {
  return {{"x", r.x}, {"m", r.m}, {"l", r.l}, {"p", r.p}, {"o", r.o}, {"v", r.v}, {"scores", r.scores}};
}

FoldRoles fold_roles(const Application& app) {
  auto at = [&](const char* role) { return matched_node(app, role); };
  return FoldRoles{at("x"), at("m"), at("l"), at("p"), at("o"), at("v"), at("scores")};
}

std::vector<std::pair<std::string, std::string>> matched_roles(const NormalizerRoles& r) {
  return {{"x", r.x}, {"m", r.m}, {"n", r.n}, {"e", r.e}, {"l", r.l}, {"rows", r.rows}, {"reduced", r.reduced}};
}

NormalizerRoles normalizer_roles(const Application& app) {
  auto at = [&](const char* role) { return matched_node(app, role); };
  return NormalizerRoles{at("x"), at("m"), at("n"), at("e"), at("l"), at("rows"), at("reduced")};
}

std::vector<std::pair<std::string, std::string>> matched_roles(const HoistRoles& r) {
  return {{"target", r.target}, {"w", r.w}, {"v", r.v}};
}

std::string contraction_operand(const BackwardRoles& r, const std::string& gradient) {
  if (gradient == r.d_q) return r.k;
  if (gradient == r.d_k) return r.q;
  if (gradient == r.d_v) return r.d_out;
  return "";
}

}  // namespace fp::osm
