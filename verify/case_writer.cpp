#include "verify/case_writer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/npy.h"
#include "core/text_printer.h"

namespace fp::verify {

namespace {
void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

std::string sh_quote(const std::string& s) {
  bool safe = !s.empty();
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string_view("-_./=:,+%@").find(c) != std::string_view::npos))
      safe = false;
  if (safe) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

std::string sanitize_id(const std::string& id) {
  std::string s;
  for (char c : id)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return s.empty() ? "case" : s;
}

Counterexample write_case(const std::string& dir, const Routine& src, const Routine& tgt,
                          const TensorMap& inputs, const NodeCheck& check, const Mismatch& mismatch,
                          const std::string& origin, const std::vector<ExtentReduction>& extents) {
  namespace fs = std::filesystem;
  fs::path d = fs::absolute(dir);
  fs::create_directories(d);
  Routine s = with_outputs(src, {check.node}, false), t = with_outputs(tgt, {check.node}, false);
  const std::string sizes =
      extents.empty() ? ""
                      : "sizes reduced: " + extents_text(extents) + " (extents substituted in both routines)";
  FileHeader h{origin + "  (counterexample case" + (sizes.empty() ? "" : "; " + sizes) + ")", std::nullopt};
  write_file(d / "src.fp", print_routine_file(s, h));
  write_file(d / "tgt.fp", print_routine_file(t, h));
  for (const auto& [name, tensor] : inputs) write_npy((d / (name + ".npy")).string(), tensor);
  std::string claim =
      check.kind == NodeCheck::Kind::Bitwise ? "exact" : fmt::format("bounded:{:.17g}", check.rel);
  std::string replay = fmt::format("flashproof verify --src {} --tgt {} --claim {} --inputs {}",
                                   sh_quote((d / "src.fp").string()), sh_quote((d / "tgt.fp").string()),
                                   claim, sh_quote(d.string()));
  write_file(d / "replay.sh",
             "#!/bin/sh\n# Replays the counterexample: exit 1 when the claim fails on these inputs.\n" +
                 replay + "\n");
  fs::permissions(d / "replay.sh", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  std::string note;
  if (check.kind == NodeCheck::Kind::Scaled)
    note =
        "\nNote: the violated bound is relative to the sum of |w·v| over the reduction, which a bounded:REL "
        "replay (relative to the cell) does not express; the replay compares relative to the cell.\n";
  std::string inputs_list;
  for (const auto& [name, tensor] : inputs) inputs_list += " " + name + ".npy";
  write_file(
      d / "README.txt",
      fmt::format("Counterexample from: {}\n\n{}\n{}\nFiles: src.fp tgt.fp{} replay.sh\nReplay:\n  {}\n{}",
                  origin, mismatch.text(),
                  extents.empty()
                      ? ""
                      : "\nSizes: " + extents_text(extents) +
                            " from the obligation's routines (extents substituted in both "
                            "routines); the verdict was decided at the original sizes, and the pair "
                            "still fails at these.\n",
                  inputs_list, replay, note));
  return Counterexample{d.string(), replay, mismatch.text(), extents};
}

}  // namespace fp::verify
