// Attention fuzzing cases (attention_case.h).
#include "fuzz/attention_case.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/diagnostic.h"
#include "core/numerics.h"
#include "fuzz/hostile_data.h"
#include "rewrites/config.h"
#include "rewrites/members.h"

namespace fp::fuzz {

namespace {

using Json = nlohmann::ordered_json;

const char* const kCaseKeys[] = {"spec",           "settings",  "lookalike",
                                 "lookalike_seed", "data_seed", "hostile_percent"};
const char* const kSpecKeys[] = {"batch",   "heads",     "sq",    "sk",   "d",
                                 "e",       "dmodel",    "scale", "mask", "mask_fill",
                                 "dropout", "precision", "train", "leaf", "layers"};

// Locates keys in the case's text for messages: nlohmann does not keep positions, so a key is
// found as its first quoted occurrence (a nested key after its parent's).
class CaseParser {
 public:
  CaseParser(const std::string& text, std::string source) : text_(text), source_(std::move(source)) {}

  AttentionCase parse() {
    Json j;
    try {
      j = Json::parse(text_);
    } catch (const Json::parse_error& e) {
      auto [line, col] = line_col(e.byte == 0 ? 0 : e.byte - 1);
      std::string what = e.what();
      if (auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
      throw UserError(kExitMalformed, source_, line, col, "malformed JSON: " + what);
    }
    if (!j.is_object()) fail(0, "expected an attention case: a JSON object");
    for (const auto& [key, _] : j.items())
      if (!known(kCaseKeys, key))
        fail(find_key(key, 0),
             fmt::format("unknown key '{}': expected spec, settings, lookalike, lookalike_seed, data_seed or "
                         "hostile_percent",
                         key));
    AttentionCase c;
    if (j.contains("spec")) c.spec = spec(j["spec"], find_key("spec", 0));
    if (j.contains("settings")) c.settings = settings(j["settings"], find_key("settings", 0));
    if (j.contains("lookalike")) {
      const std::size_t at = find_key("lookalike", 0);
      const std::string name = string(j["lookalike"], at, "lookalike");
      auto k = parse_lookalike(name);
      if (!k) {
        std::string names = "none";
        for (Lookalike l : lookalike_kinds()) names += std::string(", ") + lookalike_name(l);
        fail(at, fmt::format("lookalike '{}': expected one of {}", name, names));
      }
      c.lookalike = *k;
    }
    if (j.contains("lookalike_seed")) c.lookalike_seed = seed(j["lookalike_seed"], "lookalike_seed");
    if (j.contains("data_seed")) c.data_seed = seed(j["data_seed"], "data_seed");
    if (j.contains("hostile_percent")) {
      const std::size_t at = find_key("hostile_percent", 0);
      const std::int64_t v = integer(j["hostile_percent"], at, "hostile_percent");
      if (v < 0 || v > 100) fail(at, fmt::format("hostile_percent {}: expected 0 to 100", v));
      c.hostile_percent = static_cast<int>(v);
    }
    return c;
  }

 private:
  template <typename A>
  static bool known(const A& keys, const std::string& key) {
    for (const char* k : keys)
      if (key == k) return true;
    return false;
  }

  std::pair<int, int> line_col(std::size_t pos) const {
    int line = 1, col = 1;
    for (std::size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return {line, col};
  }

  std::size_t find_key(const std::string& key, std::size_t from) const {
    const std::size_t at = text_.find("\"" + key + "\"", from);
    return at == std::string::npos ? from : at;
  }

  [[noreturn]] void fail(std::size_t pos, const std::string& msg) const {
    auto [line, col] = line_col(pos);
    throw UserError(kExitMalformed, source_, line, col, msg);
  }

  std::int64_t integer(const Json& v, std::size_t at, const std::string& key) const {
    if (!v.is_number_integer()) fail(at, fmt::format("key '{}': expected an integer", key));
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      fail(at, fmt::format("key '{}': expected an integer below 2^63", key));
    return v.get<std::int64_t>();
  }
  std::uint64_t seed(const Json& v, const std::string& key) const {
    const std::size_t at = find_key(key, 0);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
      return static_cast<std::uint64_t>(v.get<std::int64_t>());
    fail(at, fmt::format("key '{}': expected a non-negative integer", key));
  }
  std::string string(const Json& v, std::size_t at, const std::string& key) const {
    if (!v.is_string()) fail(at, fmt::format("key '{}': expected a string", key));
    return v.get<std::string>();
  }
  bool boolean(const Json& v, std::size_t at, const std::string& key) const {
    if (!v.is_boolean()) fail(at, fmt::format("key '{}': expected true or false", key));
    return v.get<bool>();
  }
  double number(const Json& v, std::size_t at, const std::string& key) const {
    if (!v.is_number()) fail(at, fmt::format("key '{}': expected a number", key));
    return v.get<double>();
  }

  AttentionSpec spec(const Json& j, std::size_t spec_at) const {
    if (!j.is_object()) fail(spec_at, "key 'spec': expected an object of attention parameters");
    AttentionSpec s;
    for (const auto& [key, v] : j.items()) {
      const std::size_t at = find_key(key, spec_at);
      if (!known(kSpecKeys, key))
        fail(at,
             fmt::format("unknown spec key '{}': expected batch, heads, sq, sk, d, e, dmodel, scale, mask, "
                         "mask_fill, dropout, precision, train, leaf or layers",
                         key));
      if (key == "batch") s.batch = integer(v, at, key);
      if (key == "heads") s.heads = integer(v, at, key);
      if (key == "sq") s.sq = integer(v, at, key);
      if (key == "sk") s.sk = integer(v, at, key);
      if (key == "d") s.d = integer(v, at, key);
      if (key == "e") s.e = integer(v, at, key);
      if (key == "dmodel") s.dmodel = integer(v, at, key);
      if (key == "scale") {
        if (v.is_null())
          s.scale.reset();
        else
          s.scale = number(v, at, key);
      }
      if (key == "mask") s.mask = string(v, at, key);
      if (key == "mask_fill") s.mask_fill = string(v, at, key);
      if (key == "dropout") s.dropout = number(v, at, key);
      if (key == "precision") {
        auto p = parse_prec(string(v, at, key));
        if (!p) fail(at, "key 'precision': expected f64, f32, f16 or bf16");
        s.precision = *p;
      }
      if (key == "train") s.train = boolean(v, at, key);
      if (key == "leaf") s.leaf = boolean(v, at, key);
      if (key == "layers") {
        const std::int64_t l = integer(v, at, key);
        if (l < 1 || l > kMaxAttentionLayers)
          fail(at, fmt::format("layers {}: expected 1 to {}", l, kMaxAttentionLayers));
        s.layers = static_cast<int>(l);
      }
    }
    try {
      attention_program(s);  // the frontend's validation
    } catch (const UserError& e) {
      fail(spec_at, "invalid attention spec: " + e.message());
    }
    return s;
  }

  std::vector<std::string> settings(const Json& j, std::size_t at) const {
    if (!j.is_array()) fail(at, "key 'settings': expected an array of \"key=value\" strings");
    std::vector<std::string> out;
    for (const auto& v : j) {
      if (!v.is_string() || v.get<std::string>().find('=') == std::string::npos)
        fail(at, "key 'settings': expected an array of \"key=value\" strings");
      out.push_back(v.get<std::string>());
    }
    try {
      make_config("default", out, {});
    } catch (const UserError& e) {
      fail(at, "invalid setting: " + e.message());
    }
    return out;
  }

  const std::string& text_;
  std::string source_;
};

// ---- the generator's pieces

// Drawn by index so that it shrinks toward the first element (the simplest).
template <typename T>
T pick(const std::vector<T>& xs) {
  return xs[static_cast<std::size_t>(*rc::gen::inRange<std::size_t>(0, xs.size()))];
}
bool roll(int percent) {  // shrinks to false
  return *rc::gen::inRange(0, 100) >= 100 - percent;
}

std::string draw_mask(std::int64_t sq, std::int64_t sk) {
  switch (*rc::gen::inRange(0, 6)) {
    case 0:
      return "none";
    case 1:
      return "causal";
    case 2:
      return fmt::format("prefix:{}", *rc::gen::inRange<std::int64_t>(0, sk + 1));
    case 3:
      return fmt::format("padding:{}", *rc::gen::inRange<std::int64_t>(0, sk + 1));
    case 4:
      return fmt::format("banded:{}", *rc::gen::inRange<std::int64_t>(1, sq + sk + 1));
    default:
      return fmt::format("random:{}", *rc::gen::inRange<std::int64_t>(0, 1000));
  }
}

std::optional<double> draw_scale(Prec p) {
  if (!roll(40)) return std::nullopt;
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      return 0.0;
    case 1:
      return pick<double>({1.0, 0.5, 0.125, 2.0, 8.0, 1e-3});
    default: {
      // A normal number of p: 2^k·(1 + f), k below the top exponent so rounding stays finite.
      const int k = *rc::gen::inRange(min_normal_exponent(p), std::ilogb(max_finite(p)));
      const double f = *rc::gen::inRange(0, 1024) / 1024.0;
      const double sign = pick<double>({1.0, -1.0});
      return round_to(p, sign * std::ldexp(1.0 + f, k));
    }
  }
}

// One drawn value of a member's config key, as --set writes it ("": the key left unset).
std::string draw_value(ConfigType type) {
  switch (type) {
    case ConfigType::Bool:
      return pick<std::string>({"", "true", "false"});
    case ConfigType::Int:
      return pick<std::string>({"", "1", "2", "3", "4", "8", "0"});
    case ConfigType::IntOrAuto:
      return pick<std::string>({"", "1", "2", "3", "4", "8", "0", "auto"});
  }
  return "";
}

// Every registered member's config keys, each drawn (or left unset), in registry order.
std::vector<std::string> draw_settings() {
  std::vector<std::string> out;
  for (const Member& m : tier_members())
    for (const ConfigKeySpec& k : m.config_keys)
      if (std::string v = draw_value(k.type); !v.empty()) out.push_back(k.name + "=" + v);
  return out;
}

AttentionCase draw_case(const AttentionCaseOptions& o) {
  AttentionCase c;
  AttentionSpec& s = c.spec;
  const std::int64_t max_seq = std::max<std::int64_t>(1, o.max_seq);
  s.precision = pick<Prec>({Prec::F32, Prec::F64, Prec::F16, Prec::BF16});
  s.leaf = !roll(25);
  s.layers = *rc::gen::inRange(1, std::max(1, o.max_layers) + 1);
  s.batch = *rc::gen::inRange<std::int64_t>(1, 3);
  s.heads = *rc::gen::inRange<std::int64_t>(1, 3);
  s.sq = *rc::gen::inRange<std::int64_t>(1, max_seq + 1);
  s.sk = (!s.leaf || !roll(60)) ? s.sq : *rc::gen::inRange<std::int64_t>(1, max_seq + 1);
  s.d = *rc::gen::inRange<std::int64_t>(1, 5);
  s.e = (s.leaf && s.layers > 1) ? s.d : *rc::gen::inRange<std::int64_t>(1, 5);
  if (!s.leaf && roll(30)) s.dmodel = *rc::gen::inRange<std::int64_t>(1, 5);
  s.mask = draw_mask(s.sq, s.sk);
  s.mask_fill = pick<std::string>({"-inf", "-2", "0", "-1e4", "nan", "inf", "-1e30", "7.5"});
  s.scale = draw_scale(s.precision);
  s.train = o.allow_train && roll(40);
  if (roll(25)) s.dropout = pick<double>({0.5, 0.25, 0.1, 0.75, 0.9, 0.001});
  c.settings = draw_settings();
  if (o.allow_lookalikes && roll(30)) {
    c.lookalike = pick(lookalike_kinds());
    c.lookalike_seed = *rc::gen::inRange<std::uint64_t>(0, 1000000);
  }
  c.data_seed = *rc::gen::inRange<std::uint64_t>(1, 1000000);
  if (o.allow_hostile && roll(40)) c.hostile_percent = *rc::gen::inRange(1, 101);
  return c;
}

}  // namespace

std::string attention_case_text(const AttentionCase& c) {
  const AttentionSpec& s = c.spec;
  Json spec;
  spec["batch"] = s.batch;
  spec["heads"] = s.heads;
  spec["sq"] = s.sq;
  spec["sk"] = s.sk;
  spec["d"] = s.d;
  spec["e"] = s.e;
  spec["dmodel"] = s.dmodel;
  spec["scale"] = s.scale ? Json(*s.scale) : Json(nullptr);
  spec["mask"] = s.mask;
  spec["mask_fill"] = s.mask_fill;
  spec["dropout"] = s.dropout;
  spec["precision"] = prec_name(s.precision);
  spec["train"] = s.train;
  spec["leaf"] = s.leaf;
  spec["layers"] = s.layers;
  Json j;
  j["spec"] = spec;
  j["settings"] = c.settings;
  j["lookalike"] = lookalike_name(c.lookalike);
  j["lookalike_seed"] = c.lookalike_seed;
  j["data_seed"] = c.data_seed;
  j["hostile_percent"] = c.hostile_percent;
  return j.dump(2) + "\n";
}

AttentionCase parse_attention_case(const std::string& text, const std::string& source_name) {
  return CaseParser(text, source_name).parse();
}

Routine build_case_routine(const AttentionCase& c) {
  Routine plain = build_attention(c.spec);
  if (c.lookalike == Lookalike::None) return plain;
  std::optional<Routine> edited = make_lookalike(plain, c.lookalike, c.lookalike_seed);
  return edited ? std::move(*edited) : std::move(plain);
}

TensorMap case_inputs(const AttentionCase& c, const Routine& r) {
  return hostile_inputs(r, c.data_seed, c.hostile_percent);
}

rc::Gen<AttentionCase> gen_attention_case(AttentionCaseOptions opts) {
  return rc::gen::exec([opts] { return draw_case(opts); });
}

}  // namespace fp::fuzz
