// A campaign's corpus directory (corpus.h).
#include "fuzz/corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/diagnostic.h"
#include "core/support/input_file.h"
#include "core/support/atomic_file.h"
#include "core/support/sha256.h"

namespace fp::fuzz {
namespace fs = std::filesystem;

std::string read_case_file(const std::string& path) {
  // A regular file only: a FIFO planted in a campaign would hang it, a device never end
  // (core/support/input_file.h).
  // Nor a symbolic link: inside a campaign's directories a planted link would copy out whatever it
  // points at.
  return read_input_file(path, InputFileRules{kMaxCaseBytes, false, "one fuzzing input", false});
}

void fuzz_warning(const std::string& what) { std::fprintf(stderr, "flashproof fuzz: warning: %s\n", what.c_str()); }

std::string input_digest(const std::string& input) { return sha256_hex(input); }

Corpus::Corpus(std::string dir) : dir_(std::move(dir)) { create_output_directories(dir_); }

namespace {

bool is_digest_name(const std::string& name) {
  return name.size() == 64 &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

std::vector<std::string> Corpus::load() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;  // state files and temporaries
    if (!entry.is_regular_file()) continue;
    if (!is_digest_name(name)) {
      fuzz_warning(fmt::format("{}: skipped: a corpus file is named by the SHA-256 of its bytes", entry.path().string()));
      continue;
    }
    names.push_back(name);
  }
  if (ec) throw UserError(kExitMissingInput, dir_, 0, 0, fmt::format("cannot list the corpus ({})", ec.message()));
  std::sort(names.begin(), names.end());
  std::vector<std::string> inputs;
  for (const std::string& name : names) {
    const std::string path = dir_ + "/" + name;
    try {
      std::string input = read_case_file(path);
      if (input_digest(input) != name) {
        fuzz_warning(fmt::format("{}: skipped: its bytes do not hash to its name (changed since it was written)", path));
        continue;
      }
      inputs.push_back(std::move(input));
    } catch (const UserError& e) {
      fuzz_warning(fmt::format("{}: skipped: {}", path, e.message()));
    }
  }
  return inputs;
}

bool Corpus::add(const std::string& input) {
  const std::string path = dir_ + "/" + input_digest(input);
  if (fs::exists(path)) return false;
  write_file_atomically(path, input, 0644);
  return true;
}

std::string Corpus::state_path(const StreamState& s) const {
  // One file per target, seed and stream: two campaigns on one corpus keep their own positions.
  return fmt::format("{}/.fuzz-state-{}-{}-{}-of-{}.json", dir_, s.target, s.seed, s.stream, s.streams);
}

std::optional<Corpus::StreamState> Corpus::resume(const StreamState& key) const {
  const std::string path = state_path(key);
  if (!fs::exists(path)) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_case_file(path));
    StreamState s;
    s.target = j.at("target").get<std::string>();
    s.seed = j.at("seed").get<std::uint64_t>();
    s.stream = j.at("stream").get<std::int64_t>();
    s.streams = j.at("streams").get<std::int64_t>();
    s.next = j.at("next").get<std::uint64_t>();
    if (s.target != key.target || s.seed != key.seed || s.stream != key.stream || s.streams != key.streams)
      return std::nullopt;  // another campaign's stream: start this one afresh
    return s;
  } catch (const std::exception& e) {
    fuzz_warning(fmt::format("{}: ignored: not a stream state ({})", path, e.what()));
    return std::nullopt;
  }
}

void Corpus::save(const StreamState& s) const {
  const nlohmann::json j = {{"target", s.target}, {"seed", s.seed},     {"stream", s.stream},
                            {"streams", s.streams}, {"next", s.next}};
  write_file_atomically(state_path(s), j.dump(2) + "\n", 0644);
}

}  // namespace fp::fuzz
