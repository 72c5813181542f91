// Reporting rejected command lines (tools/cli_errors.h).
#include "tools/cli_errors.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/diagnostic.h"
#include "core/diagnostic_render.h"
#include "tools/shared_options.h"
#include "core/support/suggest.h"

namespace fp::cli {

namespace {

// The innermost subcommand the parser entered, or nullptr.
CLI::App* selected_subcommand(CLI::App& app) {
  CLI::App* at = nullptr;
  for (CLI::App* cur = &app;;) {
    std::vector<CLI::App*> parsed = cur->get_subcommands();
    if (parsed.empty()) return at;
    at = cur = parsed.front();
  }
}

// "cache info" for a nested subcommand: the words a user types after "flashproof".
std::string command_path(const CLI::App& sub) {
  std::string path = sub.get_name();
  for (const CLI::App* p = sub.get_parent(); p && p->get_parent(); p = p->get_parent())
    path = p->get_name() + " " + path;
  return path;
}

bool looks_like_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

bool looks_like_option(const std::string& s) {
  return s.size() > 1 && s[0] == '-' && !looks_like_number(s);
}

// The options to suggest: a hidden one or a deprecated spelling (tools/shared_options.h) is never
// offered, only its replacement.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty() || o->get_group() == kDeprecatedGroup) continue;
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::vector<std::string> subcommand_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands([](CLI::App*) { return true; }))
    names.push_back(s->get_name());
  return names;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const auto m = closest_match(word, candidates);
  return m ? fmt::format("; did you mean '{}'?", *m) : std::string();
}

// The message for arguments nobody took: an unknown subcommand or option gets a suggestion;
// otherwise CLI11's own words.
std::string unexpected_arguments(CLI::App& app, CLI::App* sub, const std::string& fallback) {
  const std::vector<std::string> extras = app.remaining(true);
  if (!sub) {
    for (const auto& word : extras)
      if (!looks_like_option(word))
        return fmt::format("unknown command '{}'{}", word, did_you_mean(word, subcommand_names(app)));
    if (extras.empty()) return fallback;
    const std::string name = extras.front().substr(0, extras.front().find('='));
    return fmt::format("unknown option '{}'{}", name, did_you_mean(name, option_names(app)));
  }
  for (const auto& word : extras) {
    if (!looks_like_option(word)) continue;
    const std::string name = word.substr(0, word.find('='));
    return fmt::format("unknown option '{}' for '{}'{}", name, command_path(*sub),
                       did_you_mean(name, option_names(*sub)));
  }
  return fmt::format("unexpected argument{} for '{}': {}", extras.size() == 1 ? "" : "s", command_path(*sub),
                     CLI::detail::join(extras, " "));
}

}  // namespace

int report_parse_error(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  CLI::App* sub = selected_subcommand(app);
  std::string message = e.what();
  // (CLI11 puts the app's name, not the error's kind, in get_name(): classify by type.)
  const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
  const bool no_command = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !sub;
  if (extras || (no_command && !app.remaining(true).empty()))
    message = unexpected_arguments(app, sub, message);
  else if (no_command)
    message = fmt::format("no command given; one of: {}", CLI::detail::join(subcommand_names(app), ", "));
  print_diagnostic(DiagnosticText{Severity::Error, "", 0, 0, message});
  const std::string help =
      sub ? fmt::format("flashproof {} --help", command_path(*sub)) : "flashproof --help";
  print_diagnostic(DiagnosticText{Severity::Note, "", 0, 0,
                                  fmt::format("run '{}' for the {}", help, sub ? "options" : "commands")});
  return kExitUsage;
}

}  // namespace fp::cli
