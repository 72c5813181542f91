// Findings of a verify run besides its verdicts (verify/findings.h).

#include "verify/findings.h"

#include <fmt/format.h>

#include "core/access_census.h"

namespace fp::verify {

const char* finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::Decline:
      return "decline";
    case FindingKind::NothingApplied:
      return "nothing-applied";
    case FindingKind::Lost:
      return "lost";
  }
  return "decline";
}

namespace {

// The first node the top-level statement at `position` (1-based) writes; "" when it writes none.
std::string anchor_node(const Routine& r, int position) {
  if (position < 1) return "";
  AccessCensus census(r);
  if (static_cast<std::size_t>(position) > census.top_level().size()) return "";
  for (const Access* a : census.at(static_cast<std::size_t>(position - 1)))
    if (a->is_write()) return a->node;
  return "";
}

}  // namespace

std::vector<Finding> decline_findings(const RewriteResult& result, const Routine& original, const std::string& file) {
  std::vector<Finding> out;
  for (const Decline& d : result.declines) {
    Finding f;
    f.kind = FindingKind::Decline;
    f.file = file;
    f.line = d.line;
    f.rule = d.shape;
    f.code = d.code;
    f.anchor = anchor_node(result.round_input(original, d.round, d.member), d.statement);
    f.sentence = d.sentence;
    f.hint = d.hint;
    f.key = fmt::format("{}|{}|{}", file, d.shape, f.anchor.empty() ? fmt::format("#{}", d.statement) : f.anchor);
    out.push_back(std::move(f));
  }
  return out;
}

Finding nothing_applied(const std::string& file, const std::string& why, const std::string& hint) {
  Finding f;
  f.kind = FindingKind::NothingApplied;
  f.file = file;
  f.rule = kNothingAppliedRule;
  f.code = kNothingAppliedRule;
  f.sentence = fmt::format("the tier applied no rewrite to {}: no obligations, nothing proved ({})", file, why);
  f.hint = hint;
  f.key = fmt::format("{}|{}", file, kNothingAppliedRule);
  return f;
}

FindingCounts count_findings(const std::vector<Finding>& findings) {
  FindingCounts c;
  for (const Finding& f : findings) {
    c.declines += f.kind == FindingKind::Decline;
    c.nothing_applied += f.kind == FindingKind::NothingApplied;
    c.lost += f.kind == FindingKind::Lost;
  }
  return c;
}

std::string location_text(const std::string& file, int line) {
  return line > 0 ? fmt::format("{}:{}", file, line) : file;
}

}  // namespace fp::verify
