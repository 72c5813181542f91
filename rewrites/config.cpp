#include "rewrites/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "core/diagnostic.h"

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

std::optional<std::int64_t> parse_block(const std::string& key, const std::string& raw) {
  if (lower(trim(raw)) == "auto") return std::nullopt;
  std::int64_t b = parse_int(key, raw);
  if (b < 0) usage(fmt::format("config key {}: expected auto or an integer >= 0, found '{}'", key, raw));
  return b;
}

bool pinned(const Config& c, const std::string& key) {
  return c.profile == "reproducible" && key != "virtualize_max_inline_reduction";
}

void apply_profile(Config& c, const std::string& name) {
  const auto& ps = config_profiles();
  if (std::find(ps.begin(), ps.end(), name) == ps.end())
    usage(fmt::format("unknown profile '{}' (expected one of: default, approximate, reproducible)", name));
  c = Config{};
  c.profile = name;
  if (name == "approximate") {
    c.online_softmax = true;
    c.online_softmax_backward = true;
    c.online_softmax_block = std::nullopt;
  }
}

void apply_setting(Config& c, const std::string& key, const std::string& value, const std::string& origin) {
  const auto& ks = config_keys();
  if (std::find(ks.begin(), ks.end(), key) == ks.end())
    usage(fmt::format("{}: unknown config key '{}' (known: {})", origin, key, fmt::join(ks, ", ")));
  if (pinned(c, key))
    usage(fmt::format("{}: config key {} is pinned by profile {}", origin, key, c.profile));
  // Value errors name the key and, when it came from the environment, the variable.
  const std::string label = origin == "--set" ? key : fmt::format("{} (from {})", key, origin);
  if (key == "online_softmax") c.online_softmax = parse_bool(label, value);
  else if (key == "online_softmax_backward") c.online_softmax_backward = parse_bool(label, value);
  else if (key == "online_softmax_block") c.online_softmax_block = parse_block(label, value);
  else c.virtualize_max_inline_reduction = parse_int(label, value);
}

std::string env_name(const std::string& key) {
  std::string n = "FLASHPROOF_";
  for (char ch : key) n += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return n;
}

}  // namespace

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> k = {"online_softmax", "online_softmax_backward",
                                             "online_softmax_block", "virtualize_max_inline_reduction"};
  return k;
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
  return fmt::format("profile={} online_softmax={} online_softmax_backward={} online_softmax_block={} "
                     "virtualize_max_inline_reduction={}",
                     c.profile, c.online_softmax, c.online_softmax_backward,
                     c.online_softmax_block ? std::to_string(*c.online_softmax_block) : "auto",
                     c.virtualize_max_inline_reduction);
}

}  // namespace fp
