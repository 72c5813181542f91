#include "verify/sarif.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>

#include "core/diagnostic.h"
#include "flashproof/version.h"

namespace fp::verify {

using nlohmann::json;

namespace {

constexpr const char* kSourceRootId = "SRCROOT";

// RFC 3986 percent-encoding of a path: unreserved characters and '/' stay.
std::string percent_encoded(const std::string& path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::filesystem::path root_or_cwd(const std::string& root) {
  std::error_code ec;
  std::filesystem::path r = root.empty() ? std::filesystem::current_path(ec) : std::filesystem::path(root);
  if (ec) r = "/";
  return std::filesystem::absolute(r, ec).lexically_normal();
}

std::string directory_uri(const std::filesystem::path& dir) {
  std::string s = dir.generic_string();
  if (s.empty() || s.back() != '/') s += '/';
  return "file://" + percent_encoded(s);
}

}  // namespace

json sarif_artifact_location(const std::string& path, const std::string& root) {
  const std::filesystem::path base = root_or_cwd(root);
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
  const std::filesystem::path rel = abs.lexically_relative(base);
  const std::string r = rel.generic_string();
  if (!ec && !r.empty() && r != "." && r.rfind("..", 0) != 0)
    return {{"uri", percent_encoded(r)}, {"uriBaseId", kSourceRootId}};
  return {{"uri", "file://" + percent_encoded(abs.generic_string())}};
}

std::string sarif_json(const SarifLog& log) {
  json rules = json::array();
  for (const auto& r : log.rules) {
    json rule{{"id", r.id},
              {"name", r.id},
              {"shortDescription", {{"text", r.description}}},
              {"help", {{"text", r.help.empty() ? r.description : r.help}}}};
    rules.push_back(rule);
  }
  auto rule_index = [&](const std::string& id) {
    for (std::size_t i = 0; i < log.rules.size(); ++i)
      if (log.rules[i].id == id) return static_cast<int>(i);
    FP_UNREACHABLE("SARIF result for the undeclared rule {}", id);
    return -1;
  };
  json results = json::array();
  for (const auto& r : log.results) {
    // §3.27.10: level "none" exactly when kind is given and is not "fail" (an absent kind is "fail").
    const bool failing = r.kind.empty() || r.kind == "fail";
    FP_INTERNAL_CHECK(failing ? r.level != "none" : r.level == "none",
                      "SARIF result of rule {} has kind '{}' with level '{}' (SARIF 2.1.0 §3.27.10)", r.rule_id, r.kind,
                      r.level);
    json j{{"ruleId", r.rule_id},
           {"ruleIndex", rule_index(r.rule_id)},
           {"level", r.level},
           {"message", {{"text", r.message}}}};
    if (!r.kind.empty()) j["kind"] = r.kind;
    if (!r.baseline_state.empty()) j["baselineState"] = r.baseline_state;
    if (!r.properties.is_null()) j["properties"] = r.properties;
    if (!r.uri.empty()) {
      json phys{{"artifactLocation", sarif_artifact_location(r.uri, log.source_root)}};
      if (r.line > 0) phys["region"] = {{"startLine", r.line}};
      j["locations"] = json::array({{{"physicalLocation", phys}}});
    }
    results.push_back(j);
  }
  json run{{"tool",
            {{"driver",
              {{"name", "flashproof"}, {"version", FLASHPROOF_VERSION}, {"rules", rules}}}}},
           {"originalUriBaseIds", {{kSourceRootId, {{"uri", directory_uri(root_or_cwd(log.source_root))}}}}},
           {"results", results}};
  if (log.invocation)
    run["invocations"] = json::array({{{"commandLine", log.invocation->command_line},
                                       {"executionSuccessful", true},
                                       {"exitCode", log.invocation->exit_code}}});
  json sarif{{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
             {"version", "2.1.0"},
             {"runs", json::array({run})}};
  return sarif.dump(2) + "\n";
}

}  // namespace fp::verify
