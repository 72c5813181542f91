#pragma once
// A campaign's findings: one case directory per distinct failure (deduplicated by the finding's
// signature), written the moment it is found so that a killed campaign loses none.
//
//   <artifact_prefix>finding-<target>-<12 hex of SHA-256(signature)>/
//     case.txt      the minimized input
//     finding.json  target, signature, kind, where, message, seed, execution, flashproof version
//     replay.sh     `flashproof fuzz TARGET case.txt` (exit 1 while it still fails)
//     …             the target's extra files (both routines of a rewrite finding, …)
//
// As libFuzzer does, the prefix is prepended as text ("out/" gives out/finding-…, "x-" gives
// x-finding-…). A process killed by a signal or a -timeout writes its input as a raw
// crash-<sha256> or timeout-<sha256> file under the same prefix (fuzz/crash_guard.h); the next
// campaign adopts each such file as a finding directory.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/target.h"

namespace fp::fuzz {

struct FindingRecord {
  std::string target;
  Finding finding;
  std::string input;
  std::uint64_t seed = 0;       // the case seed the input was drawn from (0: from a file)
  std::uint64_t execution = 0;  // its index in the stream
};

// The folder an artifact prefix writes into ("out/x-" -> "out"; "x-" -> ".").
std::string prefix_folder(const std::string& prefix);

// The case directory a finding with this signature gets.
std::string finding_dir(const std::string& prefix, const std::string& target, const std::string& signature);

// Writes the case directory atomically. Returns false (writing nothing) when a finding with the
// same signature is already there.
bool write_finding(const std::string& prefix, const FindingRecord& record);

// Reads a finding directory back, checking that it is what its name claims (its finding.json
// parses, names a target and a signature whose digest is the directory's, and its case.txt is
// there): nullopt, with the reason in `why`, otherwise.
std::optional<FindingRecord> read_finding(const std::string& dir, std::string* why = nullptr);

// Every valid finding directory directly under `dir` (invalid ones are reported on stderr).
std::vector<std::string> finding_dirs(const std::string& dir);

// Turns the raw crash-*/timeout-* files under `prefix` into finding directories of `target`,
// removing each raw file once its directory is committed. Returns the directories written.
std::vector<std::string> adopt_raw_artifacts(const std::string& prefix, const std::string& target);

}  // namespace fp::fuzz
