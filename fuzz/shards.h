#pragma once
// Scale-out on the batch engines users already run (docs/fuzzing.md, fuzz/deploy/).
//
// A shard's index and count come from --shard-index/--shard-count when given, else from the
// environment of
//   - a Slurm job array: SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT;
//   - a Kubernetes Indexed Job: JOB_COMPLETION_INDEX, of FLASHPROOF_SHARD_COUNT (Kubernetes does
//     not export the job's completions; the manifest sets the variable to the same number);
// else shard 0 of 1. Values are checked (a number, index < count) and a bad one is a usage error
// naming the variable. Each shard then draws its own disjoint seed stream (fuzz/campaign.h).
//
// `flashproof fuzz merge OUT IN…` merges shards' outputs: each IN holds corpus/ and findings/ (or
// is a bare corpus); OUT gets corpus/ (the union, deduplicated by content digest) and findings/
// (deduplicated by signature, the smallest case kept).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fp::fuzz {

struct ShardChoice {
  std::int64_t index = 0, count = 1;
  std::string origin;  // "--shard-index/--shard-count", "Slurm job array", "Kubernetes Indexed Job", "default"
};

// `getenv` is injectable for tests.
ShardChoice choose_shard(std::optional<std::int64_t> index, std::optional<std::int64_t> count,
                         const char* (*getenv)(const char*) = nullptr);

struct MergeSummary {
  std::size_t inputs = 0, inputs_added = 0;
  std::size_t findings = 0, findings_added = 0;
};
MergeSummary merge_shards(const std::string& out, const std::vector<std::string>& ins);

}  // namespace fp::fuzz
