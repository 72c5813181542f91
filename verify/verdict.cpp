#include "verify/verdict.h"

#include <fmt/format.h>

namespace fp::verify {

using nlohmann::json;

const char* verdict_kind_name(VerdictKind k) {
  switch (k) {
    case VerdictKind::Exact:
      return "exact";
    case VerdictKind::Bounded:
      return "bounded";
    case VerdictKind::Refuted:
      return "refuted";
    case VerdictKind::Unknown:
      return "unknown";
    case VerdictKind::Error:
      return "error";
  }
  return "error";
}

const char* unknown_reason_name(UnknownReason r) {
  switch (r) {
    case UnknownReason::None:
      return "";
    case UnknownReason::Timeout:
      return "timeout";
    case UnknownReason::ResourceLimit:
      return "resource limit";
    case UnknownReason::Unsupported:
      return "unsupported construct";
    case UnknownReason::Approximation:
      return "approximation in the way";
  }
  return "";
}

namespace {

VerdictKind kind_of(const std::string& s) {
  for (auto k : {VerdictKind::Exact, VerdictKind::Bounded, VerdictKind::Refuted, VerdictKind::Unknown,
                 VerdictKind::Error})
    if (s == verdict_kind_name(k)) return k;
  throw std::runtime_error("unknown verdict kind " + s);
}

UnknownReason reason_of(const std::string& s) {
  for (auto r : {UnknownReason::None, UnknownReason::Timeout, UnknownReason::ResourceLimit,
                 UnknownReason::Unsupported, UnknownReason::Approximation})
    if (s == unknown_reason_name(r)) return r;
  throw std::runtime_error("unknown reason " + s);
}

// JSON numbers cannot be inf/NaN: such values travel as strings.
json num(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}
double num_of(const json& j) {
  if (j.is_number()) return j.get<double>();
  std::string s = j.get<std::string>();
  if (s == "nan") return NAN;
  return s == "inf" ? INFINITY : -INFINITY;
}

}  // namespace

json to_json(const Limits& l) {
  return json{{"rlimit", l.rlimit},       {"timeout_s", l.timeout_s},
              {"max_terms", l.max_terms}, {"search_trials", l.search_trials},
              {"real_n", l.real_n},       {"real_timeout_s", l.real_timeout_s},
              {"mpfr_rows", l.mpfr_rows}, {"mpfr_bits", l.mpfr_bits},
              {"exp_ulp", l.exp_ulp},     {"seed", l.seed},
              {"budget_s", l.budget_s}};
}

static Limits limits_of(const json& j) {
  Limits l;
  l.rlimit = j.at("rlimit").get<std::uint64_t>();
  l.timeout_s = j.at("timeout_s").get<double>();
  l.max_terms = j.at("max_terms").get<std::uint64_t>();
  l.search_trials = j.at("search_trials").get<int>();
  l.real_n = j.at("real_n").get<int>();
  l.real_timeout_s = j.at("real_timeout_s").get<double>();
  l.mpfr_rows = j.at("mpfr_rows").get<int>();
  l.mpfr_bits = j.at("mpfr_bits").get<int>();
  l.exp_ulp = j.at("exp_ulp").get<double>();
  l.seed = j.at("seed").get<std::uint64_t>();
  l.budget_s = j.at("budget_s").get<double>();
  return l;
}

json to_json(const Verdict& v) {
  json covers = json::array();
  for (const auto& c : v.covers) covers.push_back({{"node", c.node}, {"cells", c.cells}});
  json j{{"id", v.id},
         {"member", v.member},
         {"rewrite", v.rewrite},
         {"claim", v.claim},
         {"claimed", obligation_kind_name(v.claimed)},
         {"description", v.description},
         {"covers", covers},
         {"location", {{"file", v.file}, {"line", v.line}}},
         {"verdict", verdict_kind_name(v.kind)},
         {"reason", v.reason == UnknownReason::None ? json(nullptr) : json(unknown_reason_name(v.reason))},
         {"message", v.message},
         {"scope", {{"all_sizes", v.scope.all_sizes}, {"text", v.scope.text}}},
         {"solver", {{"name", v.solver.name}, {"version", v.solver.version}}},
         {"limits", to_json(v.limits)},
         {"repro", v.repro},
         {"steps", v.steps},
         {"seconds", v.seconds},
         {"cached", v.cached}};
  if (v.bound) {
    const BoundInfo& b = *v.bound;
    json parts = json::array();
    for (const auto& p : b.parts)
      parts.push_back({{"name", p.name}, {"status", p.status}, {"detail", p.detail}});
    json down = json::array();
    for (const auto& d : b.downstream)
      down.push_back({{"node", d.node},
                      {"formula", d.formula},
                      {"value", num(d.value)},
                      {"relative_to", d.relative_to},
                      {"worst_observed", num(d.worst_observed)}});
    j["bound"] = {{"formula", b.formula},
                  {"instantiated", b.instantiated},
                  {"value", num(b.value)},
                  {"relative_to", b.relative_to},
                  {"n", b.n},
                  {"exp_assumption", b.exp_assumption},
                  {"worst_observed", num(b.worst_observed)},
                  {"tightness", num(b.tightness)},
                  {"downstream", down},
                  {"certificate", parts}};
  } else {
    j["bound"] = nullptr;
  }
  if (v.counterexample) {
    json extents = json::array();
    for (const auto& e : v.counterexample->extents)
      extents.push_back({{"original", e.original}, {"reduced", e.reduced}});
    j["counterexample"] = {{"dir", v.counterexample->dir},
                           {"replay", v.counterexample->replay},
                           {"summary", v.counterexample->summary},
                           {"inputs", v.counterexample->inputs},
                           {"extents", extents}};
  } else
    j["counterexample"] = nullptr;
  return j;
}

Verdict verdict_from_json(const json& j) {
  Verdict v;
  v.id = j.at("id");
  v.member = j.at("member");
  v.rewrite = j.at("rewrite");
  v.claim = j.at("claim");
  v.claimed = j.at("claimed") == "bounded" ? ObligationKind::Bounded : ObligationKind::Exact;
  v.description = j.at("description");
  for (const auto& c : j.at("covers")) v.covers.push_back(Cover{c.at("node"), c.at("cells")});
  v.file = j.at("location").at("file");
  v.line = j.at("location").at("line");
  v.kind = kind_of(j.at("verdict"));
  v.reason = j.at("reason").is_null() ? UnknownReason::None : reason_of(j.at("reason"));
  v.message = j.at("message");
  v.scope.all_sizes = j.at("scope").at("all_sizes");
  v.scope.text = j.at("scope").at("text");
  v.solver.name = j.at("solver").at("name");
  v.solver.version = j.at("solver").at("version");
  v.limits = limits_of(j.at("limits"));
  v.repro = j.at("repro");
  v.steps = j.at("steps").get<std::vector<std::string>>();
  v.seconds = j.at("seconds");
  v.cached = j.at("cached");
  if (!j.at("bound").is_null()) {
    const json& b = j.at("bound");
    BoundInfo bi;
    bi.formula = b.at("formula");
    bi.instantiated = b.at("instantiated");
    bi.value = num_of(b.at("value"));
    bi.relative_to = b.at("relative_to");
    bi.n = b.at("n");
    bi.exp_assumption = b.at("exp_assumption");
    bi.worst_observed = num_of(b.at("worst_observed"));
    bi.tightness = num_of(b.at("tightness"));
    for (const auto& d : b.at("downstream"))
      bi.downstream.push_back(DownstreamBound{d.at("node"), d.at("formula"), num_of(d.at("value")),
                                              d.at("relative_to"), num_of(d.at("worst_observed"))});
    for (const auto& p : b.at("certificate"))
      bi.parts.push_back(CertificatePart{p.at("name"), p.at("status"), p.at("detail")});
    v.bound = bi;
  }
  if (!j.at("counterexample").is_null()) {
    const json& c = j.at("counterexample");
    v.counterexample = Counterexample{c.at("dir"), c.at("replay"), c.at("summary"), {}, {}};
    if (c.contains("inputs"))
      for (const auto& line : c.at("inputs")) v.counterexample->inputs.push_back(line.get<std::string>());
    if (c.contains("extents"))  // absent in entries written before size reduction
      for (const auto& e : c.at("extents"))
        v.counterexample->extents.push_back(ExtentReduction{e.at("original"), e.at("reduced")});
  }
  return v;
}

std::string extents_text(const std::vector<ExtentReduction>& extents) {
  std::string s;
  for (const auto& e : extents) s += fmt::format("{}{}→{}", s.empty() ? "" : ", ", e.original, e.reduced);
  return s;
}

std::string verdict_headline(const Verdict& v) {
  std::string s = verdict_kind_name(v.kind);
  if (v.kind == VerdictKind::Unknown) s += fmt::format(" ({})", unknown_reason_name(v.reason));
  if (v.kind == VerdictKind::Bounded && v.bound) s += fmt::format(" (rel {:.3g})", v.bound->value);
  if (v.proved()) s += ", " + v.scope.text;
  return s;
}

}  // namespace fp::verify
