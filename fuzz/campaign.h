#pragma once
// The campaign runner behind `flashproof fuzz` (docs/fuzzing.md): draws inputs from a target's
// generator on a deterministic seed stream, runs each, keeps in the corpus the inputs that cover a
// new feature, minimizes every failure by walking its RapidCheck shrinks (keeping only shrinks
// that fail with the same signature) and writes it as a finding the moment it is found.
//
// Seed streams: a campaign of K shards with J jobs each has S = K·J streams; job j of shard k is
// stream s = k·J + j, and the i-th execution of stream s draws the case seed
// splitmix64(seed, g = i·S + s). Distinct (s, i) give distinct g, and the case seed is a bijection
// of g for a fixed seed: the streams are disjoint and each is reproducible on its own.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/target.h"

namespace fp::fuzz {

struct StreamLayout {
  std::int64_t shard_index = 0, shard_count = 1;
  std::int64_t job_index = 0, jobs = 1;
  std::int64_t stream() const { return shard_index * jobs + job_index; }
  std::int64_t streams() const { return shard_count * jobs; }
};

// The case seed of execution `i` of the stream (see above).
std::uint64_t case_seed(std::uint64_t seed, const StreamLayout& layout, std::uint64_t i);

struct CampaignOptions {
  const Target* target = nullptr;
  std::vector<std::string> corpus_dirs;  // the first one receives new inputs
  std::int64_t runs = -1;                // -1: until max_total_time (or a signal)
  double max_total_time = 0;             // seconds; 0: no limit
  std::uint64_t seed = 1;
  StreamLayout layout;
  std::string artifact_prefix = "./";
  double timeout_s = 0;                // per input; 0: none
  double minimize_budget_s = 60;       // per finding
  bool print_final_stats = false;
  bool quiet = false;  // no progress at all; else a \r progress line on a terminal, lines otherwise
};

struct CampaignStats {
  std::uint64_t executions = 0;  // generated inputs run (corpus replays not counted)
  std::uint64_t corpus_replays = 0;
  double seconds = 0;
  std::size_t corpus_size = 0;
  std::vector<std::string> findings;  // case directories written by this campaign
  std::size_t known_findings = 0;     // failures whose signature was already on disk
  std::map<std::string, std::uint64_t> features;  // feature -> executions that hit it
  std::uint64_t first_execution = 0;  // where this campaign resumed its stream
};

// Runs a campaign. Stops after `runs` executions, after `max_total_time`, or on SIGINT/SIGTERM
// (finishing the input in hand and saving the stream state).
CampaignStats run_campaign(const CampaignOptions& options);

// Runs each file once (libFuzzer's file arguments): prints each outcome; returns the number that
// fail. A file that is not an input of the target is UserError 65 (thrown).
int replay_files(const Target& target, const std::vector<std::string>& files);

// -minimize_crash=1: shrinks a failing case file further by deleting lines and bytes while it
// fails with the same signature, writing the result as a finding. Returns its directory, or
// nullopt when the file does not fail.
std::optional<std::string> minimize_case_file(const Target& target, const std::string& file,
                                              const std::string& artifact_prefix, double budget_s);

// -merge=1: runs every input of `inputs` (corpus dirs) and adds to `out` those that cover a
// feature `out`'s own inputs do not. Returns how many were added.
std::size_t merge_into(const Target& target, const std::string& out, const std::vector<std::string>& inputs);

// The final stats, as libFuzzer's -print_final_stats=1 prints them ("stat::name: value" lines),
// plus the features by class.
std::string final_stats_text(const Target& target, const CampaignStats& stats);

}  // namespace fp::fuzz
