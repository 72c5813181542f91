#include "verify/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/diagnostic.h"
#include "verify/error_bound.h"

namespace fp::verify {

namespace {

std::vector<std::int64_t> unflatten(std::int64_t cell, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> idx(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    idx[i] = cell % dims[i];
    cell /= dims[i];
  }
  return idx;
}

// The smallest magnitude that rounds to infinity at p: max + ulp(max)/2 = 2^emax·(2 - 2^-bits).
long double overflow_threshold(Prec p) {
  switch (p) {
    case Prec::F64:
      return std::ldexp(2.0L - std::ldexp(1.0L, -53), 1023);
    case Prec::F32:
      return std::ldexp(2.0L - std::ldexp(1.0L, -24), 127);
    case Prec::F16:
      return std::ldexp(2.0L - std::ldexp(1.0L, -11), 15);
    case Prec::BF16:
      return std::ldexp(2.0L - std::ldexp(1.0L, -8), 127);
    case Prec::I32:
      break;
  }
  return INFINITY;
}

}  // namespace

double cell_ratio(const NodeCheck& c, double s, double t, double scale) {
  if (c.kind == NodeCheck::Kind::Bitwise) return same_value(s, t) ? 0 : INFINITY;
  if (std::isnan(s) || std::isnan(t)) return std::isnan(s) && std::isnan(t) ? 0 : INFINITY;
  const double mag = c.kind == NodeCheck::Kind::Relative ? std::fabs(s) : scale;
  if (std::isinf(s) || std::isinf(t)) {
    // (Long double holds this sum within far less than the gap between the threshold and the
    // largest finite value of any precision.)
    const long double allowed = static_cast<long double>(c.rel) * mag + c.abs;
    if (s == t) return 0;
    if ((std::isinf(s) && std::isinf(t)) || !c.overflow_tolerant) return INFINITY;
    // One side overflowed: within the bound when the other can reach the overflow threshold.
    const double fin = std::isinf(s) ? t : s, inf = std::isinf(s) ? s : t;
    if (std::signbit(fin) != std::signbit(inf) && fin != 0) return INFINITY;
    return std::fabs(static_cast<long double>(fin)) + allowed >= overflow_threshold(c.prec) ? 1 : INFINITY;
  }
  if (std::isnan(mag)) return INFINITY;
  // A scale that overflowed f64 is at least the largest double: round it down to that.
  return error_fraction(s, t, c.rel, std::min(mag, std::numeric_limits<double>::max()), c.abs);
}

std::string Mismatch::text() const {
  std::string idx;
  for (std::size_t i = 0; i < index.size(); ++i) idx += (i ? ", " : "") + std::to_string(index[i]);
  if (std::isinf(ratio)) return fmt::format("{}[{}]: source {}, target {}", node, idx, src, tgt);
  return fmt::format("{}[{}]: source {}, target {} ({:.3g}x the allowed error)", node, idx, src, tgt, ratio);
}

std::optional<Mismatch> compare_outputs(const std::vector<NodeCheck>& checks, const TensorMap& src,
                                        const TensorMap& tgt,
                                        const std::map<std::string, std::vector<std::int64_t>>& dims,
                                        std::map<std::string, double>* worst) {
  std::optional<Mismatch> first;
  for (const auto& c : checks) {
    auto s = src.find(c.node), t = tgt.find(c.node);
    FP_INTERNAL_CHECK(s != src.end() && t != tgt.end(), "node {} was not returned by both runs", c.node);
    const Tensor* scale = nullptr;
    if (c.kind == NodeCheck::Kind::Scaled) {
      auto sc = src.find(c.scale_node);
      FP_INTERNAL_CHECK(sc != src.end(), "scale node {} was not returned", c.scale_node);
      scale = &sc->second;
    }
    double node_worst = 0;
    for (std::int64_t i = 0; i < s->second.size(); ++i) {
      const double sv = s->second.data[static_cast<std::size_t>(i)],
                   tv = t->second.data[static_cast<std::size_t>(i)];
      const double r = cell_ratio(c, sv, tv, scale ? scale->data[static_cast<std::size_t>(i)] : 0);
      node_worst = std::max(node_worst, r);
      if (r > 1 && !first) {
        first = Mismatch{c.node, i, unflatten(i, dims.at(c.node)), sv, tv, r};
        if (!worst) return first;
      }
    }
    if (worst) (*worst)[c.node] = std::max((*worst)[c.node], node_worst);
  }
  return first;
}

Routine with_outputs(const Routine& r, const std::vector<std::string>& nodes, bool keep_outputs) {
  Routine out = r;
  for (auto& n : out.nodes) {
    bool want = std::find(nodes.begin(), nodes.end(), n.name) != nodes.end();
    n.is_output = want || (keep_outputs && n.is_output);
  }
  return out;
}

PairRunner::PairRunner(Routine src, Routine tgt, std::vector<NodeCheck> checks)
    : src_(std::move(src)), tgt_(std::move(tgt)), checks_(std::move(checks)) {
  for (const auto& c : checks_) {
    const Node* n = src_.find_node(c.node);
    FP_INTERNAL_CHECK(n != nullptr, "no node {}", c.node);
    dims_[c.node] = n->dims;
  }
}

std::optional<Mismatch> PairRunner::run(const TensorMap& inputs, std::map<std::string, double>* worst) const {
  ++runs_;
  TensorMap s = interpret(src_, inputs), t = interpret(tgt_, inputs);
  return compare_outputs(checks_, s, t, dims_, worst);
}

}  // namespace fp::verify
