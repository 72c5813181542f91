#include "rewrites/application.h"

#include <fmt/format.h>

namespace fp {

const char* obligation_kind_name(ObligationKind k) {
  return k == ObligationKind::Exact ? "exact" : "bounded";
}

namespace {
std::string where(int statement, int line) {
  if (line > 0) return fmt::format("statement {} (line {})", statement, line);
  return fmt::format("statement {}", statement);
}
}  // namespace

std::string matched_node(const Application& a, const std::string& role) {
  for (const auto& [r, node] : a.matched)
    if (r == role) return node;
  return "";
}

std::string format_application(const Application& a) {
  std::string out = fmt::format(
      "round {}: applied {} at {}\n", a.round, a.shape,
      where(a.statements.empty() ? 0 : a.statements.front(), a.lines.empty() ? 0 : a.lines.front()));
  std::string matched;
  for (const auto& [role, node] : a.matched)
    matched += fmt::format("{}{}={}", matched.empty() ? "" : " ", role, node);
  out += fmt::format("  matched: {}\n", matched);
  std::string stmts;
  for (std::size_t i = 0; i < a.statements.size(); ++i) {
    stmts += fmt::format("{}{}", i ? ", " : "", a.statements[i]);
    if (i < a.lines.size() && a.lines[i] > 0) stmts += fmt::format(" (line {})", a.lines[i]);
  }
  out += fmt::format("  statements: {}\n", stmts);
  out += fmt::format("  emitted: {}\n", a.emitted);
  for (const auto& o : a.obligations) {
    std::string covers;
    for (const auto& c : o.covers) covers += fmt::format("{}{}", covers.empty() ? "" : "; ", c.cells);
    out += fmt::format("  claim {} {}: {}\n", obligation_kind_name(o.kind), o.claim, o.description);
    out += fmt::format("    covers: {}\n", covers);
    if (o.bound) out += fmt::format("    bound terms: {}\n", o.bound->text());
  }
  return out;
}

std::string format_decline(const Decline& d) {
  std::string out = fmt::format("round {}: declined {} at {} [{}]: {}\n", d.round, d.shape,
                                where(d.statement, d.line), d.code, d.sentence);
  if (!d.hint.empty()) out += "  hint: " + d.hint + "\n";
  return out;
}

}  // namespace fp
