#pragma once
// The tier's configuration: keys, profiles, and how they are set (profile < environment <
// command line). Keys and profiles follow the specification (docs/online_softmax.md):
//
//   key                              default  approximate  reproducible
//   online_softmax                   false    true         false (pinned)
//   online_softmax_backward          false    true         false (pinned)
//   online_softmax_block             0        auto         0 (pinned)
//   virtualize_max_inline_reduction  16       16           16
//
// A pinned key cannot be changed while its profile is active: asking to is a usage error, so a
// CI job that selected `reproducible` can trust that no environment variable turned a numerics
// policy back on.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fp {

struct Config {
  std::string profile = "default";
  bool online_softmax = false;
  bool online_softmax_backward = false;
  // Block size of the FlashAttention fold: 0 = two-pass form; nullopt = "auto" (resolved by the
  // target through resolved_block()).
  std::optional<std::int64_t> online_softmax_block = 0;
  std::int64_t virtualize_max_inline_reduction = 16;

  // The block size for a target whose preferred automatic block is `auto_block`.
  std::int64_t resolved_block(std::int64_t auto_block) const {
    return online_softmax_block.value_or(auto_block);
  }
};

// Every key, in documentation order.
const std::vector<std::string>& config_keys();
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

// "online_softmax=true online_softmax_backward=false ..." for reports.
std::string describe_config(const Config& c);

}  // namespace fp
