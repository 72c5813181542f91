#pragma once
// SARIF 2.1.0, one writer for every report that offers it (verify's verdicts, diff's outputs): the
// caller turns its results into rules and results; the log around them is written here — one run
// of the tool "flashproof" with its rules (each named by its id), the invocation when given, and
// each result's ruleIndex.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fp::verify {

struct SarifRule {
  std::string id;
  std::string description;  // shortDescription
  std::string help_uri;     // helpUri (none when empty)
};

struct SarifResult {
  std::string rule_id;  // one of the log's rules
  std::string level;    // "error", "warning" or "note"
  std::string kind;     // "pass", "fail" or "review" (none when empty)
  std::string message;
  std::string uri;            // the location's artifact (no location when empty)
  int line = 0;               // the location's start line (no region when 0)
  nlohmann::json properties;  // none when null
};

struct SarifInvocation {
  std::string command_line;
  int exit_code = 0;
};

struct SarifLog {
  std::vector<SarifRule> rules;
  std::vector<SarifResult> results;
  std::optional<SarifInvocation> invocation;
};

std::string sarif_json(const SarifLog& log);

}  // namespace fp::verify
