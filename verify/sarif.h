#pragma once
// SARIF 2.1.0, one writer for every report that offers it (verify's verdicts, diff's outputs): the
// caller turns its results into rules and results; the log around them is written here — one run
// of the tool "flashproof" with its rules (each named by its id, with its help text), the
// invocation when given, and each result's ruleIndex.
//
// Locations: a file under the source root (the working directory unless the caller names one) is
// a relative URI with uriBaseId "SRCROOT", declared in originalUriBaseIds as the root's file://
// URI; any other file is an absolute file:// URI. Paths are percent-encoded (RFC 3986). No rule
// or tool carries a help URI: flashproof has no web site, and its help is in the rule's text.
// The writer checks §3.27.10 (a kind other than "fail" takes level "none") as it writes.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fp::verify {

struct SarifRule {
  std::string id;
  std::string description;  // shortDescription
  std::string help;         // help.text: what the rule's results mean and what to do about them
};

struct SarifResult {
  std::string rule_id;  // one of the log's rules
  std::string level;    // "error", "warning" or "note"
  std::string kind;     // "pass", "fail" or "review" (none when empty)
  std::string message;
  std::string uri;            // the location's artifact (no location when empty)
  int line = 0;               // the location's start line (no region when 0)
  std::string baseline_state;  // "new", "unchanged", "updated" or "absent" (none when empty)
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
  std::string source_root;  // absolute directory; the working directory when empty
};

// The artifactLocation of `path` under `root` (an absolute directory): {"uri", "uriBaseId"} or
// {"uri": "file:///..."}.
nlohmann::json sarif_artifact_location(const std::string& path, const std::string& root);

std::string sarif_json(const SarifLog& log);

}  // namespace fp::verify
