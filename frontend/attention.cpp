// The standard attention programs (attention.h).
#include "frontend/attention.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/diagnostic.h"
#include "frontend/autodiff.h"
#include "frontend/lower.h"
#include "core/numerics.h"
#include "core/random_inputs.h"

namespace fp {

namespace {

using namespace fp::fe;

[[noreturn]] void usage(const std::string& msg) {
  throw UserError(kExitUsage, "", 0, 0, msg);
}

struct Mask {
  enum Kind { None, Causal, Prefix, Padding, Banded, Random } kind = None;
  std::int64_t n = 0;  // prefix and padding: keys; banded: the window; random: the seed
};

Mask parse_mask(const std::string& text, std::int64_t sk) {
  if (text == "none") return {};
  if (text == "causal") return {Mask::Causal, 0};
  for (auto [prefix, kind] : {std::pair{"prefix:", Mask::Prefix}, std::pair{"padding:", Mask::Padding},
                              std::pair{"banded:", Mask::Banded}, std::pair{"random:", Mask::Random}}) {
    std::string_view p(prefix);
    if (text.rfind(p, 0) != 0) continue;
    std::string_view num = std::string_view(text).substr(p.size());
    std::int64_t n = -1;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (num.empty() || ec != std::errc() || end != num.data() + num.size() || n < 0)
      usage(fmt::format("mask '{}': expected a non-negative integer after '{}'", text, p));
    if ((kind == Mask::Prefix || kind == Mask::Padding) && n > sk)
      usage(fmt::format("mask '{}': {} is more than the {} keys", text, n, sk));
    if (kind == Mask::Banded && (n < 1 || n > kMaxAttentionSize))
      usage(fmt::format("mask '{}': expected a window width from 1 to {}", text, kMaxAttentionSize));
    return {kind, n};
  }
  usage(fmt::format("unknown mask '{}': expected none, causal, prefix:N, padding:N, banded:W or random:SEED",
                    text));
}

double parse_fill(const std::string& text) {
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  if (text == "inf" || text == "+inf") return std::numeric_limits<double>::infinity();
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    usage(fmt::format("mask fill '{}': expected -inf, inf, nan or a finite number", text));
  return v;
}

// The scale is a constant of the program's precision: it must survive rounding to it as a normal
// number. One that overflows (f32 1e39 -> inf), vanishes (1e-50 -> 0) or lands among the
// subnormals (where it keeps only a few bits) would silently compute something else than asked.
void check_scale(double scale, Prec p) {
  const std::string name(prec_name(p));
  if (!std::isfinite(scale)) usage(fmt::format("--scale {}: expected a finite number", scale));
  if (scale == 0) return;  // exactly zero is representable and means what it says
  const double rounded = round_to(p, scale);
  const double mag = std::fabs(rounded);
  if (std::isfinite(rounded) && mag >= min_normal(p)) return;
  const std::string became = !std::isfinite(rounded) ? fmt::format("it rounds to {}", rounded)
                             : rounded == 0          ? "it rounds to 0"
                                                     : fmt::format("it rounds to the subnormal {}", rounded);
  usage(fmt::format(
      "--scale {}: not representable at {} ({}); expected 0 or a magnitude from 2^{} ({}) to {}, the normal "
      "{} numbers",
      scale, name, became, min_normal_exponent(p), min_normal(p), max_finite(p), name));
}

void validate(const AttentionSpec& s) {
  auto size = [](const char* what, std::int64_t v) {
    if (v < 1 || v > kMaxAttentionSize)
      usage(fmt::format("--{} {}: expected 1 to {}", what, v, kMaxAttentionSize));
  };
  size("batch", s.batch);
  size("heads", s.heads);
  size("sq", s.sq);
  size("sk", s.sk);
  size("d", s.d);
  size("e", s.e);
  if (s.dmodel != 0) size("dmodel", s.dmodel);
  if (s.layers < 1 || s.layers > kMaxAttentionLayers)
    usage(fmt::format("--layers {}: expected 1 to {}", s.layers, kMaxAttentionLayers));
  if (!is_float(s.precision)) usage("attention needs a float precision (f64, f32, f16 or bf16)");
  if (s.scale) check_scale(*s.scale, s.precision);
  if (!(s.dropout >= 0 && s.dropout < 1))
    usage(fmt::format("--dropout {}: expected a rate in [0, 1)", s.dropout));
  parse_mask(s.mask, s.sk);
  parse_fill(s.mask_fill);
  if (!s.leaf && s.sq != s.sk) usage("non-leaf attention is self-attention: it needs --sq equal to --sk");
  if (s.leaf && s.layers > 1 && s.d != s.e)
    usage(
        "stacked leaf layers feed each layer's output in as the next layer's queries: they need --d equal to "
        "--e");
  // Every node shape the program declares (long double: products of sizes up to 2^20 overflow
  // int64).
  using LD = long double;
  const LD b = s.batch, sq = s.sq, sk = s.sk, h = s.heads, d = s.d, e = s.e;
  const LD c = s.dmodel == 0 ? h * d : LD(s.dmodel);
  LD cells = std::max({b * sq * h * sk, b * sq * h * d, b * sk * h * d, b * sq * h * e, b * sk * h * e});
  if (!s.leaf) cells = std::max({cells, b * sq * c, c * h * d, c * h * e});
  if (cells > static_cast<LD>(fe::kMaxCells)) usage("the sizes give a node of more than 2^40 cells");
}

// Builds one layer's attention core reading Q[b,s,h,d], K[b,t,h,d], V[b,t,h,e] into O[b,s,h,e].
class LayerBuilder {
 public:
  LayerBuilder(ProgramBuilder& b, const AttentionSpec& s, std::string sfx)
      : b_(b), s_(s), sfx_(std::move(sfx)) {}

  void core(const std::string& Q, const std::string& K, const std::string& V, const std::string& O) {
    const Prec p = s_.precision;
    const std::vector<std::string> bsht{"b", "s", "h", "t"}, bsh{"b", "s", "h"};
    auto r = [](const std::string& n, std::vector<std::string> axes) { return read(n, std::move(axes)); };
    const double scale = s_.scale.value_or(1.0 / std::sqrt(static_cast<double>(s_.d)));

    b_.assign(n("scores"), bsht, p, r(Q, {"b", "s", "h", "d"}) * r(K, {"b", "t", "h", "d"}));
    b_.assign(n("scaled"), bsht, p, r(n("scores"), bsht) * cst(scale));
    std::string x = n("scaled");
    const Mask mask = parse_mask(s_.mask, s_.sk);
    if (mask.kind != Mask::None) {
      b_.assign(n("masked"), bsht, p, where(visible(mask), r(x, bsht), cst(parse_fill(s_.mask_fill))));
      x = n("masked");
    }
    b_.assign(n("row_max"), bsh, p, r(x, bsht), Reduce::Max, {"t"});
    b_.assign(n("shifted"), bsht, p, r(x, bsht) - r(n("row_max"), bsh));
    b_.assign(n("exps"), bsht, p, exp(r(n("shifted"), bsht)));
    b_.assign(n("row_sum"), bsh, p, r(n("exps"), bsht), Reduce::Sum, {"t"});
    b_.assign(n("probs"), bsht, p, r(n("exps"), bsht) / r(n("row_sum"), bsh));
    std::string probs = n("probs");
    if (s_.dropout > 0) {
      Te keep = lt(cst(s_.dropout), r(n("dropout_u"), bsht));
      b_.assign(n("dropped"), bsht, p, r(probs, bsht) * keep / cst(1.0 - s_.dropout));
      probs = n("dropped");
    }
    b_.assign(O, {"b", "s", "h", "e"}, p, r(probs, bsht) * r(V, {"b", "t", "h", "e"}));
  }

  std::string n(const std::string& base) const { return base + sfx_; }

 private:
  Te visible(const Mask& m) const {
    const std::int64_t off = s_.sk - s_.sq;
    Te causal = le(ix("t"), ix(fp::Index{{{1, "s"}}, off}));
    switch (m.kind) {
      case Mask::Causal:
        return causal;
      case Mask::Prefix:
        return or_(lt(ix("t"), ix(fp::Index::fixed(m.n))), causal);
      case Mask::Padding:
        return lt(ix("t"), ix(fp::Index::fixed(s_.sk - m.n)));
      case Mask::Banded:
        return and_(lt(ix(fp::Index{{{1, "s"}}, off - m.n}), ix("t")), causal);
      case Mask::Random:
        // A per-cell pattern is not affine in (s, t): it is data, drawn by core/random_inputs.h.
        return lt(cst(0.5), read(n("mask_keep"), {"b", "s", "h", "t"}));
      case Mask::None:
        break;
    }
    FP_UNREACHABLE("no condition for mask none");
  }

  ProgramBuilder& b_;
  const AttentionSpec& s_;
  std::string sfx_;
};

std::string suffix(const AttentionSpec& s, int layer) {
  return s.layers > 1 ? fmt::format("_{}", layer) : "";
}

void declare_inputs(ProgramBuilder& b, const AttentionSpec& s) {
  const Prec p = s.precision;
  if (s.leaf)
    b.input("q", {"b", "s", "h", "d"}, p);
  else
    b.input("x", {"b", "s", "c"}, p);
  for (int l = 1; l <= s.layers; ++l) {
    const std::string sfx = suffix(s, l);
    if (s.leaf) {
      b.input("k" + sfx, {"b", "t", "h", "d"}, p);
      b.input("v" + sfx, {"b", "t", "h", "e"}, p);
    } else {
      b.input("w_q" + sfx, {"c", "h", "d"}, p);
      b.input("w_k" + sfx, {"c", "h", "d"}, p);
      b.input("w_v" + sfx, {"c", "h", "e"}, p);
      b.input("w_o" + sfx, {"h", "e", "c"}, p);
    }
    if (s.dropout > 0) b.input("dropout_u" + sfx, {"b", "s", "h", "t"}, p);
    if (parse_mask(s.mask, s.sk).kind == Mask::Random) b.input("mask_keep" + sfx, {"b", "s", "h", "t"}, p);
  }
  if (s.train) {
    if (s.leaf)
      b.input("dout", {"b", "s", "h", "e"}, p);
    else
      b.input("dout", {"b", "s", "c"}, p);
  }
}

}  // namespace

fe::Program attention_program(const AttentionSpec& s) {
  validate(s);
  ProgramBuilder b(s.train ? "attention_train" : "attention_forward");
  b.attr("seq_q", s.sq);
  b.attr("seq_k", s.sk);
  if (const Mask m = parse_mask(s.mask, s.sk); m.kind == Mask::Random) b.attr(kMaskSeedAttr, m.n);
  b.axis("b", s.batch);
  b.axis("s", s.sq);
  b.axis("t", s.sk);
  b.axis("h", s.heads);
  b.axis("d", s.d);
  b.axis("e", s.e);
  if (!s.leaf) b.axis("c", s.dmodel == 0 ? s.heads * s.d : s.dmodel);
  declare_inputs(b, s);

  const Prec p = s.precision;
  std::string prev = s.leaf ? "q" : "x";  // what the next layer reads as queries (leaf) or x
  for (int l = 1; l <= s.layers; ++l) {
    const std::string sfx = suffix(s, l);
    const bool last = l == s.layers;
    LayerBuilder layer(b, s, sfx);
    if (s.leaf) {
      const std::string o = last ? "o" : "o" + sfx;
      layer.core(prev, "k" + sfx, "v" + sfx, o);
      prev = o;
      continue;
    }
    b.assign("q" + sfx, {"b", "s", "h", "d"}, p,
             read(prev, {"b", "s", "c"}) * read("w_q" + sfx, {"c", "h", "d"}));
    b.assign("k" + sfx, {"b", "t", "h", "d"}, p,
             read(prev, {"b", "t", "c"}) * read("w_k" + sfx, {"c", "h", "d"}));
    b.assign("v" + sfx, {"b", "t", "h", "e"}, p,
             read(prev, {"b", "t", "c"}) * read("w_v" + sfx, {"c", "h", "e"}));
    layer.core("q" + sfx, "k" + sfx, "v" + sfx, "o" + sfx);
    const std::string y = last ? "y" : "y" + sfx;
    b.assign(y, {"b", "s", "c"}, p,
             read("o" + sfx, {"b", "s", "h", "e"}) * read("w_o" + sfx, {"h", "e", "c"}));
    prev = y;
  }
  b.output(prev);
  return b.finish();
}

Routine build_attention(const AttentionSpec& s) {
  fe::Program prog = attention_program(s);
  if (!s.train) return fe::lower(prog);
  // The leaves, in declaration order; the dropout draws and the seed are data, not parameters.
  fe::GradRequest req;
  req.wrt.push_back(s.leaf ? "q" : "x");
  for (int l = 1; l <= s.layers; ++l) {
    const std::string sfx = suffix(s, l);
    const auto names =
        s.leaf ? std::vector<std::string>{"k", "v"} : std::vector<std::string>{"w_q", "w_k", "w_v", "w_o"};
    for (const auto& n : names) req.wrt.push_back(n + sfx);
  }
  req.loss.push_back({s.leaf ? "o" : "y", "dout"});
  return fe::lower_training_step(prog, req, "", prog.name);
}

}  // namespace fp
