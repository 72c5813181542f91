#include "rewrites/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "core/diagnostic.h"
#include "core/support/suggest.h"
#include "rewrites/members.h"

extern char** environ;

namespace fp {

namespace {

[[noreturn]] void usage(const std::string& msg) { throw UserError(kExitUsage, "", 0, 0, msg); }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool parse_bool(const std::string& key, const std::string& raw) {
  std::string v = lower(trim(raw));
  if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "off" || v == "no") return false;
  usage(fmt::format("config key {}: expected true or false, found '{}'", key, raw));
}

std::int64_t parse_int(const std::string& key, const std::string& raw) {
  std::string v = trim(raw);
  std::int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    usage(fmt::format("config key {}: expected an integer, found '{}'", key, raw));
  return out;
}

std::optional<std::int64_t> parse_int_or_auto(const std::string& key, const std::string& raw) {
  if (lower(trim(raw)) == "auto") return std::nullopt;
  std::int64_t b = parse_int(key, raw);
  if (b < 0) usage(fmt::format("config key {}: expected auto or an integer >= 0, found '{}'", key, raw));
  return b;
}

ConfigValue parse_value(const ConfigKeySpec& spec, const std::string& label, const std::string& raw) {
  switch (spec.type) {
    case ConfigType::Bool:
      return parse_bool(label, raw);
    case ConfigType::Int:
      return parse_int(label, raw);
    case ConfigType::IntOrAuto:
      return parse_int_or_auto(label, raw);
  }
  return false;
}

const ConfigKeySpec* find_spec(const std::string& key) {
  for (const auto& k : placement_config_keys())
    if (k.name == key) return &k;
  for (const auto& m : tier_members())
    for (const auto& k : m.config_keys)
      if (k.name == key) return &k;
  return nullptr;
}

const ConfigKeySpec& spec_of(const std::string& key) {
  const ConfigKeySpec* s = find_spec(key);
  FP_INTERNAL_CHECK(s != nullptr, "config key {} is not declared by the tier or any member", key);
  return *s;
}

template <class T>
T value_as(const ConfigValue& v, const std::string& key) {
  const T* x = std::get_if<T>(&v);
  FP_INTERNAL_CHECK(x != nullptr, "config key {} read as the wrong type", key);
  return *x;
}

bool pinned(const Config& c, const ConfigKeySpec& spec) {
  return c.profile == "reproducible" && spec.pinned_by_reproducible;
}

void apply_profile(Config& c, const std::string& name) {
  const auto& ps = config_profiles();
  if (std::find(ps.begin(), ps.end(), name) == ps.end())
    usage(fmt::format("unknown profile '{}' (expected one of: default, approximate, reproducible)", name));
  c = Config{};
  c.profile = name;
  for (const auto& spec : config_key_specs())
    if (auto it = spec.profile_values.find(name); it != spec.profile_values.end())
      c.set(spec.name, it->second);
}

void apply_setting(Config& c, const std::string& key, const std::string& value, const std::string& origin) {
  const ConfigKeySpec* spec = find_spec(key);
  if (!spec) {
    const std::optional<std::string> near = closest_match(key, config_keys());
    usage(fmt::format("{}: unknown config key '{}'{} (known: {})", origin, key,
                      near ? fmt::format("; did you mean '{}'?", *near) : "", fmt::join(config_keys(), ", ")));
  }
  if (pinned(c, *spec)) usage(fmt::format("{}: config key {} is pinned by profile {}", origin, key, c.profile));
  // Value errors name the key and, when it came from the environment, the variable.
  const std::string label = origin == "--set" ? key : fmt::format("{} (from {})", key, origin);
  c.set(key, value, label);
}

std::string env_name(const std::string& key) {
  std::string n = "FLASHPROOF_";
  for (char ch : key) n += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return n;
}

}  // namespace

ConfigValue Config::value(const ConfigKeySpec& spec) const {
  if (auto it = values_.find(spec.name); it != values_.end()) return it->second;
  return parse_value(spec, spec.name, spec.default_value);
}

bool Config::flag(const std::string& key) const {
  return value_as<bool>(value(spec_of(key)), key);
}

std::int64_t Config::integer(const std::string& key) const {
  return value_as<std::int64_t>(value(spec_of(key)), key);
}

std::optional<std::int64_t> Config::integer_or_auto(const std::string& key) const {
  return value_as<std::optional<std::int64_t>>(value(spec_of(key)), key);
}

std::int64_t Config::max_inline_reduction() const {
  return integer(kMaxInlineReductionKey);
}

Config& Config::set(const std::string& key, const std::string& text, const std::string& label) {
  return set_value(key, parse_value(spec_of(key), label.empty() ? key : label, text));
}

Config& Config::set_value(const std::string& key, ConfigValue v) {
  const ConfigKeySpec& spec = spec_of(key);
  const bool fits = (spec.type == ConfigType::Bool && std::holds_alternative<bool>(v)) ||
                    (spec.type == ConfigType::Int && std::holds_alternative<std::int64_t>(v)) ||
                    (spec.type == ConfigType::IntOrAuto && std::holds_alternative<std::optional<std::int64_t>>(v));
  FP_INTERNAL_CHECK(fits, "config key {} set to a value of the wrong type", key);
  values_[key] = std::move(v);
  return *this;
}

std::string Config::text(const std::string& key) const {
  const ConfigValue v = value(spec_of(key));
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  const auto& o = std::get<std::optional<std::int64_t>>(v);
  return o ? std::to_string(*o) : "auto";
}

const std::vector<ConfigKeySpec>& placement_config_keys() {
  static const std::vector<ConfigKeySpec> keys = {
      ConfigKeySpec{kMaxInlineReductionKey, ConfigType::Int, "16", {}, false,
                    "the largest reduction trip count the placement replays at each read instead of "
                    "storing (docs/placement.md)"},
  };
  return keys;
}

std::vector<ConfigKeySpec> config_key_specs() {
  std::vector<ConfigKeySpec> all;
  for (const auto& m : tier_members()) all.insert(all.end(), m.config_keys.begin(), m.config_keys.end());
  all.insert(all.end(), placement_config_keys().begin(), placement_config_keys().end());
  return all;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> names;
  for (const auto& k : config_key_specs()) names.push_back(k.name);
  return names;
}

const std::vector<std::string>& config_profiles() {
  static const std::vector<std::string> p = {"default", "approximate", "reproducible"};
  return p;
}

Config make_config(const std::string& profile, const std::vector<std::string>& settings,
                   const std::map<std::string, std::string>& env) {
  Config c;
  std::string chosen = profile;
  if (chosen.empty()) {
    auto it = env.find("FLASHPROOF_PROFILE");
    chosen = it == env.end() ? "default" : lower(trim(it->second));
  }
  apply_profile(c, chosen);
  // An environment variable that contradicts a pinned profile is an error too: a CI job that
  // asked for `reproducible` must not be overridden by a variable it does not see.
  for (const auto& key : config_keys()) {
    auto it = env.find(env_name(key));
    if (it != env.end()) apply_setting(c, key, it->second, "environment " + env_name(key));
  }
  for (const auto& s : settings) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) usage(fmt::format("--set expects key=value, found '{}'", s));
    apply_setting(c, trim(s.substr(0, eq)), s.substr(eq + 1), "--set");
  }
  return c;
}

std::map<std::string, std::string> flashproof_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    if (kv.rfind("FLASHPROOF_", 0) != 0) continue;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::string describe_config(const Config& c) {
  std::string out = "profile=" + c.profile;
  for (const auto& key : config_keys()) out += " " + key + "=" + c.text(key);
  return out;
}

}  // namespace fp
