#include "rewrites/tier.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "core/diagnostic.h"

namespace fp {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void validate_ids(const std::vector<Member>& members, const std::vector<std::string>& ids, const char* flag) {
  for (const auto& id : ids) {
    bool known = false;
    for (const auto& m : members) {
      if (m.id == id) known = true;
      for (const auto& s : m.shapes)
        if (s.id == id) known = true;
    }
    if (!known) {
      std::vector<std::string> all;
      for (const auto& m : members) {
        all.push_back(m.id);
        for (const auto& s : m.shapes) all.push_back(s.id);
      }
      throw UserError(kExitUsage, "", 0, 0,
                      fmt::format("{}: unknown rewrite '{}' (known: {})", flag, id, fmt::join(all, ", ")));
    }
  }
}

bool shape_selected(const Member& m, const std::string& shape_id, const TierOptions& o) {
  if (!o.only.empty() && !contains(o.only, m.id) && !contains(o.only, shape_id)) return false;
  return !contains(o.disable, m.id) && !contains(o.disable, shape_id);
}

bool member_selected(const Member& m, const TierOptions& o) {
  if (m.shapes.empty()) return shape_selected(m, m.id, o);
  for (const auto& s : m.shapes)
    if (shape_selected(m, s.id, o)) return true;
  return false;
}

}  // namespace

RewriteResult run_tier(const Routine& r, const Config& config, const TierOptions& options) {
  return run_tier(r, config, options, tier_members());
}

RewriteResult run_tier(const Routine& r, const Config& config, const TierOptions& options,
                       const std::vector<Member>& members) {
  validate_ids(members, options.only, "--only");
  validate_ids(members, options.disable, "--disable");

  RewriteResult result;
  result.routine = r;
  std::vector<const Member*> active;
  for (const auto& m : members) {
    if (!member_selected(m, options)) {
      result.notes.push_back(fmt::format("{}: not selected (--only/--disable)", m.id));
    } else if (!m.gate_on(config)) {
      result.notes.push_back(fmt::format("{}: gate {} is off", m.id, m.gate));
    } else {
      active.push_back(&m);
    }
  }
  if (active.empty()) return result;

  std::set<std::tuple<std::string, int, std::string, std::string>> seen_declines;
  std::string last_changer;
  for (int round = 1; round <= kMaxTierRounds; ++round) {
    result.rounds_run = round;
    bool changed = false;
    last_changer.clear();
    for (const Member* m : active) {
      MemberContext ctx;
      ctx.config = &config;
      ctx.round = round;
      ctx.shape_enabled = [m, &options](const std::string& shape_id) {
        return shape_selected(*m, shape_id, options);
      };
      MemberOutput out = m->apply(result.routine, ctx);
      bool member_changed = !equal(out.routine, result.routine);
      for (auto& a : out.applications) result.applications.push_back(std::move(a));
      for (auto& d : out.declines) {
        // Positions are stable across rounds for a candidate the member leaves alone only when
        // nothing before it changed; key on what the decline says, not where.
        auto key = std::make_tuple(d.shape, d.line, d.code, d.sentence);
        if (seen_declines.insert(key).second) result.declines.push_back(std::move(d));
      }
      result.rounds.push_back(RoundSnapshot{round, m->id, member_changed, out.routine});
      if (member_changed) {
        changed = true;
        if (last_changer.empty()) last_changer = m->id;
        result.routine = std::move(out.routine);
      }
    }
    if (!changed) return result;
  }
  throw TierDidNotConverge(
      last_changer, fmt::format("rewrite tier did not converge after {} rounds: member {} still changes "
                                "the routine (it is not idempotent or does not consume its pattern)",
                                kMaxTierRounds, last_changer));
}

std::vector<std::string> gated_off_selections(const Config& config, const TierOptions& options,
                                              const std::vector<Member>& members) {
  validate_ids(members, options.only, "--only");
  std::vector<std::string> out;
  for (const auto& id : options.only)
    for (const auto& m : members) {
      bool names_it = m.id == id;
      for (const auto& s : m.shapes) names_it = names_it || s.id == id;
      if (names_it && !m.gate_on(config))
        out.push_back(fmt::format(
            "--only {}: the gate {} of {} is off, so nothing will apply (--only selects among enabled "
            "rewrites); turn it on with --set {}=true",
            id, m.gate, m.id, m.gate));
    }
  return out;
}

std::string explain_text(const RewriteResult& result) {
  std::string out;
  for (const auto& n : result.notes) out += fmt::format("note: {}\n", n);
  for (const auto& a : result.applications) out += format_application(a);
  for (const auto& d : result.declines) out += format_decline(d);
  out += fmt::format("summary: {} applied, {} declined, {} round{}\n", result.applications.size(),
                     result.declines.size(), result.rounds_run, result.rounds_run == 1 ? "" : "s");
  return out;
}

namespace {

const char* config_type_name(ConfigType t) {
  switch (t) {
    case ConfigType::Bool:
      return "bool";
    case ConfigType::Int:
      return "integer";
    case ConfigType::IntOrAuto:
      return "auto or integer >= 0";
  }
  return "?";
}

// "  key NAME: TYPE, default D (P: V; pinned by reproducible)\n      HELP\n"
std::string key_text(const ConfigKeySpec& k) {
  std::string extra;
  for (const auto& [profile, value] : k.profile_values) extra += fmt::format("; {}: {}", profile, value);
  if (k.pinned_by_reproducible) extra += "; pinned by reproducible";
  return fmt::format("  key {}: {}, default {}{}\n      {}\n", k.name, config_type_name(k.type), k.default_value,
                     extra, k.help);
}

}  // namespace

std::string list_rewrites_text(const std::vector<Member>& members) {
  std::string out;
  for (const auto& m : members) {
    out += fmt::format("{}  gate: {}\n    {}\n", m.id, m.gate, m.description);
    for (const auto& k : m.config_keys) out += key_text(k);
    for (const auto& s : m.shapes) {
      out += fmt::format("  {}  claims: {}\n      {}\n", s.id, s.claim, s.description);
      for (const auto& c : s.claims)
        out += fmt::format("      claim {}: {}, checked by {}\n", c.id, obligation_kind_name(c.kind), c.checker);
    }
  }
  out += "tier\n";
  for (const auto& k : placement_config_keys()) out += key_text(k);
  return out;
}

const Routine& RewriteResult::round_input(const Routine& original, int round, const std::string& member) const {
  const Routine* current = &original;
  for (const auto& s : rounds) {
    if (s.round == round && s.member == member) return *current;
    if (s.changed) current = &s.routine;
  }
  FP_UNREACHABLE("no snapshot of member {} in round {}", member, round);
  return original;
}

}  // namespace fp
