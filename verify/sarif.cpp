#include "verify/sarif.h"

#include "core/diagnostic.h"
#include "flashproof/version.h"

namespace fp::verify {

using nlohmann::json;

std::string sarif_json(const SarifLog& log) {
  json rules = json::array();
  for (const auto& r : log.rules) {
    json rule{{"id", r.id}, {"name", r.id}, {"shortDescription", {{"text", r.description}}}};
    if (!r.help_uri.empty()) rule["helpUri"] = r.help_uri;
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
    if (!r.properties.is_null()) j["properties"] = r.properties;
    if (!r.uri.empty()) {
      json phys{{"artifactLocation", {{"uri", r.uri}}}};
      if (r.line > 0) phys["region"] = {{"startLine", r.line}};
      j["locations"] = json::array({{{"physicalLocation", phys}}});
    }
    results.push_back(j);
  }
  json run{{"tool",
            {{"driver",
              {{"name", "flashproof"},
               {"version", FLASHPROOF_VERSION},
               {"informationUri", "https://flashproof.dev"},
               {"rules", rules}}}}},
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
