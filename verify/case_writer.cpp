#include "verify/case_writer.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "core/npy.h"
#include "core/support/atomic_directory.h"
#include "core/support/executable_path.h"
#include "core/text_printer.h"

namespace fp::verify {

namespace {

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
// Values shown inline per input; the rest stay in the .npy.
constexpr std::size_t kInlineValues = 16;

std::string value_text(double x, Prec p) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  return p == Prec::F64 ? fmt::format("{:.17g}", x) : fmt::format("{:.9g}", x);
}

// "q f32[2, 1] = [0.5, -inf]", cut after kInlineValues values.
std::string inline_input(const std::string& name, const Tensor& t) {
  std::string dims;
  for (auto d : t.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  std::string values;
  const std::size_t shown = std::min(t.data.size(), kInlineValues);
  for (std::size_t i = 0; i < shown; ++i) values += (i ? ", " : "") + value_text(t.data[i], t.prec);
  if (shown < t.data.size()) values += fmt::format(", … ({} more in {}.npy)", t.data.size() - shown, name);
  return fmt::format("{} {}[{}] = [{}]", name, prec_name(t.prec), dims, values);
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
  // Every file goes into a staging directory renamed onto `d` at the end: a case is complete or
  // absent, never a src.fp without its inputs.
  AtomicDirectory out(d.string());
  Routine s = with_outputs(src, {check.node}, false), t = with_outputs(tgt, {check.node}, false);
  const std::string sizes =
      extents.empty() ? ""
                      : "sizes reduced: " + extents_text(extents) + " (extents substituted in both routines)";
  FileHeader h{origin + "  (counterexample case" + (sizes.empty() ? "" : "; " + sizes) + ")", std::nullopt};
  out.write_file("src.fp", print_routine_file(s, h));
  out.write_file("tgt.fp", print_routine_file(t, h));
  for (const auto& [name, tensor] : inputs) {
    std::unique_ptr<AtomicFile> f = out.open(name + ".npy");
    write_npy(*f, tensor);
    f->commit();
  }
  std::string claim =
      check.kind == NodeCheck::Kind::Bitwise ? "exact" : fmt::format("bounded:{:.17g}", check.rel);
  const std::string args =
      fmt::format("verify --src {} --tgt {} --claim {} --inputs {}", sh_quote((d / "src.fp").string()),
                  sh_quote((d / "tgt.fp").string()), claim, sh_quote(d.string()));
  std::string replay = "flashproof " + args;
  out.write_file("replay.sh",
                 "#!/bin/sh\n# Replays the counterexample: exit 1 when the claim fails on these inputs.\n" +
                     replay_script_preamble() + "exec \"$FLASHPROOF\" " + args + "\n",
                 0777);
  std::string note;
  if (check.kind == NodeCheck::Kind::Scaled)
    note =
        "\nNote: the violated bound is relative to the sum of |w·v| over the reduction, which a bounded:REL "
        "replay (relative to the cell) does not express; the replay compares relative to the cell.\n";
  std::string inputs_list;
  for (const auto& [name, tensor] : inputs) inputs_list += " " + name + ".npy";
  out.write_file(
      "README.txt",
      fmt::format("Counterexample from: {}\n\n{}\n{}\nFiles: src.fp tgt.fp{} replay.sh\nReplay:\n  {}\n{}",
                  origin, mismatch.text(),
                  extents.empty()
                      ? ""
                      : "\nSizes: " + extents_text(extents) +
                            " from the obligation's routines (extents substituted in both "
                            "routines); the verdict was decided at the original sizes, and the pair "
                            "still fails at these.\n",
                  inputs_list, replay, note));
  out.commit();
  std::vector<std::string> shown;
  for (const auto& [name, tensor] : inputs) shown.push_back(inline_input(name, tensor));
  return Counterexample{d.string(), replay, mismatch.text(), extents, shown};
}

}  // namespace fp::verify
