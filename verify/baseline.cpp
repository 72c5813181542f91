// CI baselines (verify/baseline.h).

#include "verify/baseline.h"

#include <fmt/format.h>

#include <array>

#include "core/diagnostic.h"

namespace fp::verify {

using nlohmann::json;

namespace {

constexpr std::array<VerdictKind, 5> kVerdictKinds = {VerdictKind::Exact, VerdictKind::Bounded, VerdictKind::Refuted,
                                                      VerdictKind::Unknown, VerdictKind::Error};
constexpr std::array<FindingKind, 3> kFindingKinds = {FindingKind::Decline, FindingKind::NothingApplied,
                                                      FindingKind::Lost};

// How good a verdict is: proved 2, unknown 1, refuted or error 0.
int rank(VerdictKind k) {
  if (k == VerdictKind::Exact || k == VerdictKind::Bounded) return 2;
  return k == VerdictKind::Unknown ? 1 : 0;
}

std::optional<VerdictKind> verdict_kind_of(const std::string& name) {
  for (VerdictKind k : kVerdictKinds)
    if (name == verdict_kind_name(k)) return k;
  return std::nullopt;
}

[[noreturn]] void malformed(const std::string& path, const std::string& what) {
  throw UserError(kExitMalformed, path, 0, 0,
                  fmt::format("not a flashproof baseline: {} (write one with verify --write-baseline)", what));
}

const json& field(const json& object, const char* name, json::value_t type, const std::string& where,
                  const std::string& path) {
  auto it = object.find(name);
  if (it == object.end()) malformed(path, fmt::format("{} has no \"{}\"", where, name));
  const bool ok = type == json::value_t::number_integer ? it->is_number_integer() : it->type() == type;
  if (!ok) malformed(path, fmt::format("\"{}\" of {} is not of the expected type", name, where));
  return *it;
}

// The line of the byte offset `byte` in `text` (1-based).
int line_of(const std::string& text, std::size_t byte) {
  int line = 1;
  for (std::size_t i = 0; i < std::min(byte, text.size()); ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

bool fails_on_its_own(const Verdict& v, bool unknown_fails) {
  return v.kind == VerdictKind::Refuted || v.kind == VerdictKind::Error ||
         (v.kind == VerdictKind::Unknown && unknown_fails);
}

std::string obligation_key(const Verdict& v) {
  std::string covers;
  for (const auto& c : v.covers) covers += (covers.empty() ? "" : ",") + c.node;
  return fmt::format("{}|{}|{}|{}", v.file, v.rewrite.empty() ? "pair" : v.rewrite, covers, v.claim);
}

Baseline baseline_of(const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings) {
  Baseline b;
  for (const Verdict& v : verdicts)
    b.obligations[obligation_key(v)] = {v.file, verdict_kind_name(v.kind), v.proved() && v.scope.all_sizes};
  for (const Finding& f : findings)
    if (f.kind != FindingKind::Lost) b.findings[f.key] = {f.file, finding_kind_name(f.kind), f.code};
  return b;
}

std::string baseline_json(const Baseline& b) {
  json obligations = json::object(), findings = json::object();
  for (const auto& [key, o] : b.obligations)
    obligations[key] = {{"file", o.file}, {"verdict", o.verdict}, {"all_sizes", o.all_sizes}};
  for (const auto& [key, f] : b.findings) findings[key] = {{"file", f.file}, {"kind", f.kind}, {"code", f.code}};
  json j{{"schema", kBaselineSchema},
         {"version", kBaselineVersion},
         {"obligations", obligations},
         {"findings", findings}};
  return j.dump(2) + "\n";
}

Baseline parse_baseline(const std::string& text, const std::string& path) {
  if (text.size() > kMaxBaselineBytes)
    malformed(path, fmt::format("{} bytes, more than the {} a baseline may hold", text.size(), kMaxBaselineBytes));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw UserError(kExitMalformed, path, line_of(text, e.byte == 0 ? 0 : e.byte - 1), 0,
                    fmt::format("not a flashproof baseline: the JSON does not parse ({})", e.what()));
  }
  if (!j.is_object()) malformed(path, "the document is not a JSON object");
  if (field(j, "schema", json::value_t::string, "the document", path) != kBaselineSchema)
    malformed(path, fmt::format("\"schema\" is not \"{}\"", kBaselineSchema));
  if (field(j, "version", json::value_t::number_integer, "the document", path) != kBaselineVersion)
    malformed(path, fmt::format("\"version\" is {}, this flashproof reads version {}", j.at("version").dump(),
                                kBaselineVersion));
  Baseline b;
  for (const auto& [key, o] : field(j, "obligations", json::value_t::object, "the document", path).items()) {
    const std::string where = fmt::format("obligation \"{}\"", key);
    if (!o.is_object()) malformed(path, where + " is not an object");
    BaselineObligation r;
    r.file = field(o, "file", json::value_t::string, where, path);
    r.verdict = field(o, "verdict", json::value_t::string, where, path);
    r.all_sizes = field(o, "all_sizes", json::value_t::boolean, where, path);
    if (!verdict_kind_of(r.verdict)) malformed(path, fmt::format("{} has the unknown verdict \"{}\"", where, r.verdict));
    b.obligations[key] = r;
  }
  for (const auto& [key, f] : field(j, "findings", json::value_t::object, "the document", path).items()) {
    const std::string where = fmt::format("finding \"{}\"", key);
    if (!f.is_object()) malformed(path, where + " is not an object");
    BaselineFinding r;
    r.file = field(f, "file", json::value_t::string, where, path);
    r.kind = field(f, "kind", json::value_t::string, where, path);
    r.code = field(f, "code", json::value_t::string, where, path);
    bool known_kind = false;
    for (FindingKind k : kFindingKinds) known_kind = known_kind || r.kind == finding_kind_name(k);
    if (!known_kind) malformed(path, fmt::format("{} has the unknown kind \"{}\"", where, r.kind));
    b.findings[key] = r;
  }
  return b;
}

BaselineComparison compare_with_baseline(const Baseline& baseline, const std::string& path,
                                         const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings,
                                         const std::set<std::string>& files, bool unknown_fails) {
  BaselineComparison c;
  c.path = path;
  auto regress = [&](RegressionKind kind, const std::string& key, std::string sentence) {
    c.regressions.push_back({kind, key, std::move(sentence)});
    c.regressed.insert(key);
  };
  std::set<std::string> present;
  for (const Verdict& v : verdicts) {
    const std::string key = obligation_key(v);
    present.insert(key);
    auto it = baseline.obligations.find(key);
    if (it != baseline.obligations.end()) c.known.insert(key);
    const std::string name = fmt::format("{} in {} ({})", v.id, v.file, v.rewrite.empty() ? "pair" : v.rewrite);
    if (fails_on_its_own(v, unknown_fails)) {
      const auto before = it == baseline.obligations.end() ? std::nullopt : verdict_kind_of(it->second.verdict);
      if (!before || rank(*before) > rank(v.kind))
        regress(RegressionKind::Verdict, key,
                fmt::format("{}: {} ({})", name, verdict_kind_name(v.kind),
                            before ? fmt::format("the baseline has {}", verdict_kind_name(*before))
                                   : "not in the baseline"));
    } else if (v.proved() && it != baseline.obligations.end() && it->second.all_sizes && !v.scope.all_sizes) {
      regress(RegressionKind::Narrower, key,
              fmt::format("{}: proved for the sizes as given only (the baseline has all sizes)", name));
    }
  }
  for (const Finding& f : findings) {
    if (f.kind == FindingKind::Lost) continue;
    present.insert(f.key);
    if (baseline.findings.count(f.key)) {
      c.known.insert(f.key);
      continue;
    }
    regress(RegressionKind::Finding, f.key,
            fmt::format("{}: {} [{}] (not in the baseline)", finding_location(f),
                        f.kind == FindingKind::Decline ? "declined " + f.rule : "nothing applied", f.code));
  }
  for (const auto& [key, o] : baseline.obligations) {
    const auto kind = verdict_kind_of(o.verdict);
    if (present.count(key) || !files.count(o.file) || !kind || rank(*kind) < 2) continue;
    const std::string sentence =
        fmt::format("the baseline's {} obligation {} is gone: its rewrite no longer applies", o.verdict, key);
    regress(RegressionKind::Lost, key, sentence);
    Finding f;
    f.kind = FindingKind::Lost;
    f.file = o.file;
    f.rule = kBaselineRule;
    f.code = "lost-obligation";
    f.sentence = sentence;
    f.hint = "see the program's declines (rewrite --explain), or record the change with --write-baseline";
    f.key = key;
    c.lost.push_back(std::move(f));
  }
  return c;
}

}  // namespace fp::verify
