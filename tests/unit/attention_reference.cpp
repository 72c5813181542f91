// The independent float64 attention reference and shared test helpers (attention_reference.h).
#include "attention_reference.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/numerics.h"
#include "core/random_inputs.h"

namespace fp::testref {

namespace {

// The mask re-derived from its documentation (frontend/attention.h), not from the builder's code.
struct RefMask {
  std::string kind = "none";
  std::int64_t n = 0;
};

RefMask ref_mask(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) return {text, 0};
  return {text.substr(0, colon), std::stoll(text.substr(colon + 1))};
}

bool visible(const RefMask& m, std::int64_t s, std::int64_t t, std::int64_t sq, std::int64_t sk) {
  const bool causal = t <= s + (sk - sq);
  if (m.kind == "none") return true;
  if (m.kind == "causal") return causal;
  if (m.kind == "prefix") return t < m.n || causal;
  if (m.kind == "padding") return t < sk - m.n;
  if (m.kind == "banded") return s + (sk - sq) - m.n < t && causal;
  // The documented data of a random mask (core/random_inputs.h), as the inputs hold it.
  if (m.kind == "random") return random_mask_bit(static_cast<std::uint64_t>(m.n), s, t) == 1;
  throw std::invalid_argument("reference: unknown mask " + m.kind);
}

double fill_value(const std::string& f) {
  if (f == "-inf") return -std::numeric_limits<double>::infinity();
  if (f == "inf" || f == "+inf") return std::numeric_limits<double>::infinity();
  if (f == "nan") return std::numeric_limits<double>::quiet_NaN();
  return std::stod(f);
}

// max with NaN propagation, as composed softmax's max reduction behaves.
double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}

}  // namespace

AttentionReference attention_reference(const AttentionSpec& spec, const std::vector<double>& q,
                                       const std::vector<double>& k, const std::vector<double>& v,
                                       const std::vector<double>& dout, const std::vector<double>& u) {
  const std::int64_t B = spec.batch, H = spec.heads, SQ = spec.sq, SK = spec.sk, D = spec.d, E = spec.e;
  const double scale = spec.scale.value_or(1.0 / std::sqrt(static_cast<double>(D)));
  const double r = spec.dropout;
  const RefMask mask = ref_mask(spec.mask);
  const double fill = fill_value(spec.mask_fill);
  const bool backward = !dout.empty();
  auto Q = [&](auto b, auto s, auto h, auto d) { return q[((b * SQ + s) * H + h) * D + d]; };
  auto K = [&](auto b, auto t, auto h, auto d) { return k[((b * SK + t) * H + h) * D + d]; };
  auto V = [&](auto b, auto t, auto h, auto e) { return v[((b * SK + t) * H + h) * E + e]; };
  auto DO = [&](auto b, auto s, auto h, auto e) { return dout[((b * SQ + s) * H + h) * E + e]; };
  auto keep = [&](auto b, auto s, auto h, auto t) {
    if (r == 0) return 1.0;
    return (u[((b * SQ + s) * H + h) * SK + t] > r ? 1.0 : 0.0) / (1.0 - r);
  };

  AttentionReference out;
  out.o.assign(static_cast<std::size_t>(B * SQ * H * E), 0.0);
  if (backward) {
    out.dq.assign(q.size(), 0.0);
    out.dk.assign(k.size(), 0.0);
    out.dv.assign(v.size(), 0.0);
  }
  std::vector<double> x(SK), p(SK), pd(SK), dp(SK);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t s = 0; s < SQ; ++s) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t t = 0; t < SK; ++t) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += Q(b, s, h, d) * K(b, t, h, d);
          x[t] = visible(mask, s, t, SQ, SK) ? dot * scale : fill;
          m = nan_max(m, x[t]);
        }
        double l = 0;
        for (std::int64_t t = 0; t < SK; ++t) l += (p[t] = std::exp(x[t] - m));
        for (std::int64_t t = 0; t < SK; ++t) {
          p[t] /= l;
          pd[t] = p[t] * keep(b, s, h, t);
        }
        for (std::int64_t e = 0; e < E; ++e) {
          double acc = 0;
          for (std::int64_t t = 0; t < SK; ++t) acc += pd[t] * V(b, t, h, e);
          out.o[((b * SQ + s) * H + h) * E + e] = acc;
        }
        if (!backward) continue;
        double rowdot = 0;
        for (std::int64_t t = 0; t < SK; ++t) {
          double acc = 0;
          for (std::int64_t e = 0; e < E; ++e) acc += DO(b, s, h, e) * V(b, t, h, e);
          dp[t] = acc * keep(b, s, h, t);
          rowdot += p[t] * dp[t];
        }
        for (std::int64_t t = 0; t < SK; ++t) {
          const double ds = visible(mask, s, t, SQ, SK) ? scale * p[t] * (dp[t] - rowdot) : 0.0;
          for (std::int64_t d = 0; d < D; ++d) {
            out.dq[((b * SQ + s) * H + h) * D + d] += ds * K(b, t, h, d);
            out.dk[((b * SK + t) * H + h) * D + d] += ds * Q(b, s, h, d);
          }
          for (std::int64_t e = 0; e < E; ++e)
            out.dv[((b * SK + t) * H + h) * E + e] += pd[t] * DO(b, s, h, e);
        }
      }
  return out;
}

namespace {
std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

TensorMap make_inputs(const Routine& r, std::uint64_t seed, double lo, double hi) {
  TensorMap out;
  std::uint64_t state = seed;
  for (const Node* n : r.inputs()) {
    if (n->name.rfind("mask_keep", 0) == 0) {  // a random mask's pattern is fixed by its seed
      out[n->name] = random_inputs(r, seed).at(n->name);
      continue;
    }
    const bool uniform01 = n->name.rfind("dropout_u", 0) == 0;
    Tensor t = Tensor::zeros(n->prec, n->dims);
    for (auto& x : t.data) {
      double unit = static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53;
      double v = uniform01 ? unit : lo + (hi - lo) * unit;
      x = round_to(n->prec, v);
      if (uniform01 && x >= 1.0) x = 0.0;  // rounding up to 1 would leave [0, 1)
    }
    out[n->name] = std::move(t);
  }
  return out;
}

::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& ref, double tol,
                                 const std::string& what) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure()
           << what << ": " << got.size() << " values, reference has " << ref.size();
  double sum = 0;
  std::size_t finite = 0;
  for (double r : ref)
    if (std::isfinite(r)) {
      sum += r * r;
      ++finite;
    }
  const double rms = finite ? std::sqrt(sum / static_cast<double>(finite)) : 0.0;
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i], r = ref[i];
    if (std::isnan(r) || std::isnan(g)) {
      if (std::isnan(r) != std::isnan(g))
        return ::testing::AssertionFailure()
               << what << "[" << i << "] = " << g << ", reference " << r << " (NaN mismatch)";
      continue;
    }
    if (std::isinf(r) || std::isinf(g)) {
      if (g != r)
        return ::testing::AssertionFailure() << what << "[" << i << "] = " << g << ", reference " << r;
      continue;
    }
    const double err = std::abs(g - r) / (std::abs(r) + rms);
    worst = std::max(worst, err);
    if (!(std::abs(g - r) <= tol * (std::abs(r) + rms)))
      return ::testing::AssertionFailure()
             << what << "[" << i << "] = " << g << ", reference " << r << ": error " << err
             << " (relative to |ref| + rms " << rms << ") above " << tol;
  }
  return ::testing::AssertionSuccess() << what << ": worst error " << worst;
}

std::vector<double> finite_difference(const TensorMap& inputs, const std::string& name, double h,
                                      const std::function<double(const TensorMap&)>& loss) {
  TensorMap work = inputs;
  std::vector<double> out;
  const std::size_t n = work.at(name).data.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double x = inputs.at(name).data[i];
    work[name].data[i] = x + h;
    const double up = loss(work);
    work[name].data[i] = x - h;
    const double down = loss(work);
    work[name].data[i] = x;
    out.push_back((up - down) / (2 * h));
  }
  return out;
}

double dot_loss(const TensorMap& outputs, const TensorMap& inputs,
                const std::vector<std::pair<std::string, std::string>>& terms) {
  double total = 0;
  for (const auto& [o, s] : terms) {
    const auto& a = outputs.at(o).data;
    const auto& b = inputs.at(s).data;
    for (std::size_t i = 0; i < a.size(); ++i) total += a[i] * b[i];
  }
  return total;
}

}  // namespace fp::testref
