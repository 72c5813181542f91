#pragma once
// A campaign's corpus directory: one file per input, named by the SHA-256 of its bytes (so the
// same input is never stored twice and a file whose name does not match its bytes is noticed),
// plus one state file per seed stream recording how far that stream got, so that a campaign
// killed at any moment resumes where it was. Every file is written to a temporary and renamed.
//
// The directory is read back as hostile: files over kMaxCaseBytes, names that are not a digest,
// digests that do not match, and state files that do not parse are skipped with a warning,
// never trusted.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp::fuzz {

// The largest input a campaign reads back (a case file, a corpus file).
inline constexpr std::size_t kMaxCaseBytes = std::size_t{4} << 20;

// Reads a case file: UserError 66 when it cannot be read, 65 when it is larger than kMaxCaseBytes.
std::string read_case_file(const std::string& path);

// "flashproof fuzz: warning: <what>" on standard error (a skipped file, an ignored state).
void fuzz_warning(const std::string& what);

// The 64-hex SHA-256 of an input: its corpus file name.
std::string input_digest(const std::string& input);

class Corpus {
 public:
  // Creates the directory (and its parents) when missing.
  explicit Corpus(std::string dir);
  const std::string& dir() const { return dir_; }
  // Every input stored, in name order (deterministic). Skipped files are reported on stderr.
  std::vector<std::string> load() const;
  // Stores an input; false when it was already there.
  bool add(const std::string& input);

  // Where a stream of a campaign resumes: the execution index it reached.
  struct StreamState {
    std::string target;
    std::uint64_t seed = 0;
    std::int64_t stream = 0, streams = 1;
    std::uint64_t next = 0;
  };
  // The saved state of this stream, when one matches target, seed and stream layout.
  std::optional<StreamState> resume(const StreamState& key) const;
  void save(const StreamState& s) const;

 private:
  std::string state_path(const StreamState& s) const;
  std::string dir_;
};

}  // namespace fp::fuzz
