// A campaign's findings (findings.h).
#include "fuzz/findings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "core/support/atomic_directory.h"
#include "core/support/executable_path.h"
#include "core/support/sha256.h"
#include "flashproof/version.h"
#include "fuzz/corpus.h"

namespace fp::fuzz {
namespace fs = std::filesystem;

namespace {

constexpr const char* kDirPrefix = "finding-";

std::string signature_tag(const std::string& signature) { return sha256_hex(signature).substr(0, 12); }

std::string replay_script(const std::string& target) {
  return fmt::format(
      "#!/bin/sh\n# flashproof {}\n# Replays this fuzzing finding: exit 1 while the input still fails the "
      "'{}' target's property, 0 once it is fixed.\n{}cd \"$(dirname \"$0\")\" || exit 66\nexec \"$FLASHPROOF\" "
      "fuzz {} case.txt \"$@\"\n",
      FLASHPROOF_VERSION, target, replay_script_preamble(), target);
}

}  // namespace

std::string prefix_folder(const std::string& prefix) {
  const auto slash = prefix.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : prefix.substr(0, slash);
}

std::string finding_dir(const std::string& prefix, const std::string& target, const std::string& signature) {
  return fmt::format("{}{}{}-{}", prefix, kDirPrefix, target, signature_tag(signature));
}

bool write_finding(const std::string& prefix, const FindingRecord& r) {
  const std::string dir = finding_dir(prefix, r.target, r.finding.signature());
  if (fs::exists(dir)) return false;
  const nlohmann::json j = {{"target", r.target},
                            {"signature", r.finding.signature()},
                            {"kind", r.finding.kind},
                            {"where", r.finding.where},
                            {"message", r.finding.message},
                            {"seed", r.seed},
                            {"execution", r.execution},
                            {"flashproof", FLASHPROOF_VERSION}};
  AtomicDirectory out(dir);
  out.write_file("case.txt", r.input);
  out.write_file("finding.json", j.dump(2) + "\n");
  std::set<std::string> folders;
  for (const auto& [name, text] : r.finding.files) {
    for (auto slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1))
      if (folders.insert(name.substr(0, slash)).second) out.make_subdirectory(name.substr(0, slash));
    out.write_file(name, text);
  }
  out.write_file("replay.sh", replay_script(r.target), 0777);
  out.commit();
  return true;
}

std::optional<FindingRecord> read_finding(const std::string& dir, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<FindingRecord> {
    if (why) *why = reason;
    return std::nullopt;
  };
  try {
    const nlohmann::json j = nlohmann::json::parse(read_case_file(dir + "/finding.json"));
    FindingRecord r;
    r.target = j.at("target").get<std::string>();
    r.finding.kind = j.at("kind").get<std::string>();
    r.finding.where = j.at("where").get<std::string>();
    r.finding.message = j.at("message").get<std::string>();
    r.seed = j.at("seed").get<std::uint64_t>();
    r.execution = j.at("execution").get<std::uint64_t>();
    if (j.at("signature").get<std::string>() != r.finding.signature())
      return fail("its signature is not its kind and location");
    if (!find_target(r.target)) return fail(fmt::format("unknown target '{}'", r.target));
    const std::string name = fs::path(dir).filename().string();
    if (name != fs::path(finding_dir("", r.target, r.finding.signature())).filename().string())
      return fail("its name is not the digest of its signature (renamed or edited)");
    r.input = read_case_file(dir + "/case.txt");
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      const std::string file = fs::relative(entry.path(), dir).string();
      if (file == "case.txt" || file == "finding.json" || file == "replay.sh" || !entry.is_regular_file()) continue;
      r.finding.files[file] = read_case_file(entry.path().string());
    }
    return r;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

std::vector<std::string> finding_dirs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind(kDirPrefix, 0) != 0) continue;
    std::string why;
    if (read_finding(entry.path().string(), &why))
      out.push_back(entry.path().string());
    else
      fuzz_warning(fmt::format("{}: skipped: not a finding ({})", entry.path().string(), why));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> adopt_raw_artifacts(const std::string& prefix, const std::string& target) {
  const std::string folder = prefix_folder(prefix);
  const std::string stem = prefix.substr(prefix.rfind('/') == std::string::npos ? 0 : prefix.rfind('/') + 1);
  std::vector<std::string> written;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.rfind(stem, 0) != 0) continue;
    const std::string rest = name.substr(stem.size());
    for (const char* kind : {"crash", "timeout"}) {
      const std::string head = fmt::format("{}-{}-", kind, target);
      if (rest.rfind(head, 0) != 0) continue;
      FindingRecord r;
      r.target = target;
      try {
        r.input = read_case_file(entry.path().string());
      } catch (const std::exception& e) {
        fuzz_warning(fmt::format("{}: skipped: {}", entry.path().string(), e.what()));
        continue;
      }
      r.finding.kind = kind;
      r.finding.where = input_digest(r.input).substr(0, 12);
      r.finding.message = std::string(kind) == "crash"
                              ? "an earlier campaign's process died on this input (a signal: see its log)"
                              : "an earlier campaign's process ran past -timeout on this input";
      if (write_finding(prefix, r)) written.push_back(finding_dir(prefix, target, r.finding.signature()));
      fs::remove(entry.path(), ec);
    }
  }
  return written;
}

}  // namespace fp::fuzz
