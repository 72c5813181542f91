#pragma once
// The --profile and --set options shared by every subcommand that runs the tier or placement.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "rewrites/config.h"

namespace fp::cli {

struct ConfigOptions {
  std::string profile;
  std::vector<std::string> settings;
  // Profile, then environment (FLASHPROOF_*), then --set. Throws UserError(64).
  Config resolve() const { return make_config(profile, settings, flashproof_environment()); }
};

inline void add_config_options(CLI::App& sub, ConfigOptions& o) {
  sub.add_option("--profile", o.profile, "Configuration profile: default, approximate or reproducible");
  sub.add_option("--set", o.settings, "Set a config key: key=value (repeatable), list-rewrites lists the keys");
}

}  // namespace fp::cli
