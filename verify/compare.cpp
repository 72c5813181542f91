#include "verify/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/diagnostic.h"
#include "core/ir_visit.h"
#include "core/memory_limit.h"
#include "core/input_validation.h"
#include "verify/error_bound.h"

namespace fp::verify {

namespace {

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

// A stand-in cell's relative error |t - s| / max(|s|, rms), rounded against agreement: the error
// up, the scale down, the quotient up (each operation rounds to nearest, so one step toward the
// safe side covers it). Both values finite.
double stand_in_error(double s, double t, double rms) {
  const double scale = std::nextafter(std::max(std::fabs(s), rms), 0.0);
  const double err = s == t ? 0 : std::nextafter(std::fabs(t - s), INFINITY);
  return err == 0 ? 0 : scale > 0 ? std::nextafter(err / scale, INFINITY) : INFINITY;
}

// The stand-in's fraction of its tolerance: <= 1 exactly when the error is within it.
double stand_in_ratio(double rel_error, double tolerance) {
  if (rel_error == 0) return 0;
  const double r = rel_error / tolerance;
  return rel_error <= tolerance ? std::min(r, 1.0) : std::max(r, std::nextafter(1.0, INFINITY));
}

// Root mean square of the finite cells (0 when there are none).
double finite_rms(const Tensor& t) {
  double sum = 0;
  std::int64_t finite = 0;
  for (double v : t.data)
    if (std::isfinite(v)) {
      sum += v * v;
      ++finite;
    }
  return finite > 0 ? std::sqrt(sum / static_cast<double>(finite)) : 0;
}

// Why a cell whose ratio is `r` (> 1) fails `c`.
std::string why_failed(const NodeCheck& c, double s, double t, double scale, double r) {
  switch (c.kind) {
    case NodeCheck::Kind::Bitwise:
      return std::isnan(s) != std::isnan(t) ? "NaN on one side only" : "bits differ";
    case NodeCheck::Kind::StandIn:
      if (std::isnan(s) || std::isnan(t)) return "NaN on one side only";
      if (std::isinf(s) || std::isinf(t)) return "an infinity on one side only";
      return fmt::format("relative error {:.3g} exceeds the bound {:.3g}", stand_in_error(s, t, scale),
                         c.rel);
    case NodeCheck::Kind::Relative:
    case NodeCheck::Kind::Scaled:
      break;
  }
  return std::isinf(r) ? std::string("NaN or infinity on one side only")
                       : fmt::format("error {:.3g}x the certified bound", r);
}

}  // namespace

const char* comparison_basis_name(NodeCheck::Kind k) {
  switch (k) {
    case NodeCheck::Kind::Bitwise:
      return "bitwise";
    case NodeCheck::Kind::Relative:
    case NodeCheck::Kind::Scaled:
      return "certified";
    case NodeCheck::Kind::StandIn:
      return "stand-in";
  }
  return "?";
}

// An intermediate up to headroom times the per-cell magnitude (the fold's partial numerators, of
// either sign) may have overflowed: outside the no-overflow hypothesis. The magnitude is widened by
// 2^-20 for its own f64 rounding (this direction only excuses).
static bool intermediate_may_overflow(const NodeCheck& c, double mag) {
  if (!c.overflow_tolerant || c.overflow_headroom <= 1 || std::isnan(mag)) return false;
  const long double allowed = static_cast<long double>(c.rel) * mag + c.abs;
  return (static_cast<long double>(mag) + allowed) * c.overflow_headroom * (1 + 0x1p-20L) >= overflow_threshold(c.prec);
}

double cell_ratio(const NodeCheck& c, double s, double t, double scale) {
  if (c.kind == NodeCheck::Kind::Bitwise) return same_value(s, t) ? 0 : INFINITY;
  if (c.kind == NodeCheck::Kind::Scaled && !std::isfinite(scale) && std::isnan(s) != std::isnan(t) &&
      (std::isinf(s) || std::isinf(t)))
    return 0;  // a non-finite operand: NaN against ±inf is outside the claim (docs/bounds.md §2)
  if (c.kind == NodeCheck::Kind::Scaled && std::isnan(s) != std::isnan(t) && intermediate_may_overflow(c, scale))
    return 1;  // an overflowed intermediate became NaN (inf − inf, inf·0 in a rescale): outside the hypothesis
  if (std::isnan(s) || std::isnan(t)) return std::isnan(s) && std::isnan(t) ? 0 : INFINITY;
  if (c.kind == NodeCheck::Kind::StandIn) {
    if (std::isinf(s) || std::isinf(t)) return s == t ? 0 : INFINITY;
    return stand_in_ratio(stand_in_error(s, t, scale), c.rel);
  }
  const double mag = c.kind == NodeCheck::Kind::Relative ? std::fabs(s) : scale;
  if (std::isinf(s) || std::isinf(t)) {
    // (Long double holds this sum within far less than the gap between the threshold and the
    // largest finite value of any precision.)
    const long double allowed = static_cast<long double>(c.rel) * mag + c.abs;
    if (s == t) return 0;
    if ((std::isinf(s) && std::isinf(t)) || !c.overflow_tolerant) return INFINITY;
    // One side overflowed: within the bound when the other can reach the overflow threshold.
    const double fin = std::isinf(s) ? t : s, inf = std::isinf(s) ? s : t;
    if (intermediate_may_overflow(c, mag)) return 1;
    if (std::signbit(fin) != std::signbit(inf) && fin != 0) return INFINITY;
    return std::fabs(static_cast<long double>(fin)) + allowed >= overflow_threshold(c.prec) ? 1 : INFINITY;
  }
  if (std::isnan(mag)) return INFINITY;
  // A scale that overflowed f64 is at least the largest double: round it down to that.
  return error_fraction(s, t, c.rel, std::min(mag, std::numeric_limits<double>::max()), c.abs);
}

double certified_cell_error(const NodeCheck& c, double src, double scale) {
  if (c.kind != NodeCheck::Kind::Relative && c.kind != NodeCheck::Kind::Scaled) return INFINITY;
  const double mag = c.kind == NodeCheck::Kind::Relative ? std::fabs(src) : scale;
  const long double allowed = static_cast<long double>(c.rel) * mag + c.abs;
  if (!std::isfinite(src) || !std::isfinite(mag) || !std::isfinite(static_cast<double>(allowed))) return INFINITY;
  if (c.overflow_tolerant &&
      (std::fabs(static_cast<long double>(src)) + allowed) * std::max(1.0, c.overflow_headroom) * (1 + 0x1p-20L) >=
          overflow_threshold(c.prec))
    return INFINITY;
  return std::nextafter(static_cast<double>(allowed * (1 + 0x1p-50L)), INFINITY);
}

std::string Mismatch::cell_text() const {
  return index_text(index);
}

std::string Mismatch::text() const {
  const std::string idx = fmt::format("{}", fmt::join(index, ", "));
  if (std::isinf(ratio)) return fmt::format("{}[{}]: source {}, target {}", node, idx, src, tgt);
  return fmt::format("{}[{}]: source {}, target {} ({:.3g}x the allowed error)", node, idx, src, tgt, ratio);
}

OutputComparison compare_output(const NodeCheck& check, const Tensor& src, const Tensor& tgt,
                                const Tensor* scale) {
  OutputComparison c;
  c.check = check;
  c.cells = src.size();
  if (src.dims != tgt.dims || src.prec != tgt.prec || src.data.size() != tgt.data.size() ||
      (scale && scale->data.size() != src.data.size())) {
    c.mismatches = c.cells;
    c.first = Mismatch{check.node, 0, {}, 0, 0, INFINITY, "the two outputs have different types"};
    return c;
  }
  FP_INTERNAL_CHECK(scale || check.kind != NodeCheck::Kind::Scaled, "no scale for the Scaled check of {}",
                    check.node);
  const double rms = check.kind == NodeCheck::Kind::StandIn ? finite_rms(src) : 0;
  for (std::size_t i = 0; i < src.data.size(); ++i) {
    const double s = src.data[i], t = tgt.data[i];
    const double cell_scale = scale ? scale->data[i] : rms;
    const double r = cell_ratio(check, s, t, cell_scale);
    if (std::isinf(r))
      ++c.unbounded;
    else
      c.worst = std::max(c.worst, r);
    if (r <= 1) continue;
    ++c.mismatches;
    if (c.first) continue;
    const auto flat = static_cast<std::int64_t>(i);
    c.first = Mismatch{
        check.node, flat, cell_index(src.dims, flat), s, t, r, why_failed(check, s, t, cell_scale, r)};
  }
  return c;
}

std::vector<NodeCheck> bitwise_output_checks(const Routine& r) {
  std::vector<NodeCheck> checks;
  for (const Node* n : r.outputs()) {
    NodeCheck c;
    c.node = n->name;
    checks.push_back(c);
  }
  return checks;
}

OutputComparison compare_output(const NodeCheck& check, const TensorMap& src, const TensorMap& tgt) {
  auto s = src.find(check.node), t = tgt.find(check.node);
  FP_INTERNAL_CHECK(s != src.end() && t != tgt.end(), "node {} was not returned by both runs", check.node);
  const Tensor* scale = nullptr;
  if (check.kind == NodeCheck::Kind::Scaled) {
    auto sc = src.find(check.scale_node);
    FP_INTERNAL_CHECK(sc != src.end(), "scale node {} was not returned", check.scale_node);
    scale = &sc->second;
  }
  return compare_output(check, s->second, t->second, scale);
}

std::optional<Mismatch> compare_outputs(const std::vector<NodeCheck>& checks, const TensorMap& src,
                                        const TensorMap& tgt, std::map<std::string, double>* worst) {
  std::optional<Mismatch> first;
  for (const auto& check : checks) {
    OutputComparison c = compare_output(check, src, tgt);
    if (!first && c.first) {
      first = std::move(c.first);
      if (!worst) return first;
    }
    if (worst) (*worst)[check.node] = std::max((*worst)[check.node], c.max_ratio());
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

Routine through_last_writer(const Routine& r, const std::vector<std::string>& nodes) {
  std::vector<StmtP> S = top_level_statements(r);
  std::size_t last = 0;
  for (std::size_t i = 0; i < S.size(); ++i) {
    bool writes = false;
    for_each_stmt(S[i], [&](const Stmt& st) {
      writes = writes || ((st.kind == StmtKind::Set || st.kind == StmtKind::Zero) &&
                          std::find(nodes.begin(), nodes.end(), st.name) != nodes.end());
    });
    if (writes) last = i + 1;
  }
  if (last == S.size()) return r;
  Routine out = r;
  out.body = seq(std::vector<StmtP>(S.begin(), S.begin() + static_cast<std::ptrdiff_t>(last)));
  return out;
}

namespace {
thread_local std::optional<std::int64_t> t_interp_limit;
thread_local std::string t_interp_origin;
}  // namespace

ScopedInterpreterMemoryLimit::ScopedInterpreterMemoryLimit(std::optional<std::int64_t> bytes, std::string origin)
    : previous_(t_interp_limit), previous_origin_(t_interp_origin) {
  t_interp_limit = bytes;
  t_interp_origin = std::move(origin);
}

ScopedInterpreterMemoryLimit::~ScopedInterpreterMemoryLimit() {
  t_interp_limit = previous_;
  t_interp_origin = previous_origin_;
}

std::int64_t interpreter_bytes(const Routine& r) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t total = 0;
  for (const auto& n : r.nodes) {
    std::int64_t cells = 1;
    for (std::int64_t d : n.dims) cells = d > 0 && cells > kMax / d ? kMax : cells * d;
    const std::int64_t bytes = cells > kMax / 8 ? kMax : cells * 8;
    total = total > kMax - bytes ? kMax : total + bytes;
  }
  return total;
}

void check_interpreter_memory(const Routine& src, const Routine& tgt, const char* phase) {
  if (!t_interp_limit) return;
  const std::int64_t a = interpreter_bytes(src), b = interpreter_bytes(tgt);
  const std::int64_t need = a > std::numeric_limits<std::int64_t>::max() - b ? std::numeric_limits<std::int64_t>::max() : a + b;
  if (need > *t_interp_limit)
    throw InterpreterMemoryExceeded(fmt::format(
        "the {} would run source and target on the interpreter at the routine's sizes, which needs at least {} "
        "(every node as f64 cells), over the limit of {} ({})",
        phase, format_bytes(need), format_bytes(*t_interp_limit), t_interp_origin));
}

PairRunner::PairRunner(Routine src, Routine tgt, std::vector<NodeCheck> checks)
    : src_(std::move(src)), tgt_(std::move(tgt)), checks_(std::move(checks)) {
  for (const auto& c : checks_) FP_INTERNAL_CHECK(src_.find_node(c.node) != nullptr, "no node {}", c.node);
}

std::optional<Mismatch> PairRunner::run(const TensorMap& inputs, std::map<std::string, double>* worst) const {
  if (runs_ == 0) check_interpreter_memory(src_, tgt_, "concrete check");
  ++runs_;
  TensorMap s = interpret(src_, inputs), t = interpret(tgt_, inputs);
  return compare_outputs(checks_, s, t, worst);
}

}  // namespace fp::verify
