#pragma once
// The tier's configuration: keys, profiles, and how they are set (profile < environment <
// command line). The profiles are docs/rewrites.md's.
//
// Keys are declared, not listed here: the tier declares its own (placement_config_keys(), e.g.
// virtualize_max_inline_reduction) and every member declares its gate and options beside its
// rewrite (rewrites/member.h, ConfigKeySpec: type, default, profile values, help). config_keys()
// is the tier's keys after every registered member's, in registration order. Profiles are the
// tier's: `default`, `approximate` and `reproducible` (docs/rewrites.md has the table).
//
// A pinned key cannot be changed while its profile is active: asking to is a usage error, so a CI
// job that selected `reproducible` can trust that no environment variable turned a numerics
// policy back on.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace fp {

enum class ConfigType : std::uint8_t {
  Bool,       // true | false (also 1/0, on/off, yes/no)
  Int,        // an integer
  IntOrAuto,  // auto, or an integer >= 0
};

// One config key and everything the configuration needs to know about it.
struct ConfigKeySpec {
  std::string name;  // snake_case; its environment variable is FLASHPROOF_<NAME>
  ConfigType type = ConfigType::Bool;
  std::string default_value;                          // as written on a command line
  std::map<std::string, std::string> profile_values;  // where a profile differs from the default
  bool pinned_by_reproducible = true;  // a numerics policy the reproducible profile pins
  std::string help;                    // one line
};

// A key's value: Bool -> bool, Int -> int64, IntOrAuto -> optional<int64> (nullopt = auto).
using ConfigValue = std::variant<bool, std::int64_t, std::optional<std::int64_t>>;

class Config {
 public:
  std::string profile = "default";

  // The value of a declared key (its default unless set); an undeclared key, or a key read as
  // the wrong type, is an internal error.
  bool flag(const std::string& key) const;
  std::int64_t integer(const std::string& key) const;
  std::optional<std::int64_t> integer_or_auto(const std::string& key) const;

  // Sets a declared key from its text form (UserError 64 for a malformed value, naming `label`),
  // or from a value of its type.
  Config& set(const std::string& key, const std::string& text, const std::string& label = "");
  Config& set_value(const std::string& key, ConfigValue value);
  // "true", "16", "auto": the key's value as a command line would write it.
  std::string text(const std::string& key) const;

  // The placement's recompute cap (virtualize_max_inline_reduction).
  std::int64_t max_inline_reduction() const;

 private:
  ConfigValue value(const ConfigKeySpec& spec) const;
  std::map<std::string, ConfigValue> values_;
};

inline constexpr const char* kMaxInlineReductionKey = "virtualize_max_inline_reduction";

// The tier's own keys (placement), declared here; members declare theirs.
const std::vector<ConfigKeySpec>& placement_config_keys();
// Every key: every registered member's, in tier order, then the tier's own.
std::vector<ConfigKeySpec> config_key_specs();
std::vector<std::string> config_keys();
const std::vector<std::string>& config_profiles();

// Builds a configuration. `env` maps variable names to values (pass the process environment);
// FLASHPROOF_PROFILE and FLASHPROOF_<KEY in upper case> are read from it. `profile` (empty: from
// the environment, else "default") and then `settings` ("key=value") are applied in order.
// Throws UserError(kExitUsage) naming the key for an unknown key or profile, a bad value, or a
// change to a key the profile pins.
Config make_config(const std::string& profile, const std::vector<std::string>& settings,
                   const std::map<std::string, std::string>& env);

// The process environment's FLASHPROOF_* variables.
std::map<std::string, std::string> flashproof_environment();

// "profile=default my_member=false ..." for reports: the profile, then every key.
std::string describe_config(const Config& c);

}  // namespace fp
