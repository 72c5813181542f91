// Shards from the batch engine's environment, and merging their outputs (shards.h).
#include "fuzz/shards.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "core/diagnostic.h"
#include "core/support/atomic_file.h"
#include "fuzz/corpus.h"
#include "fuzz/findings.h"

namespace fp::fuzz {
namespace fs = std::filesystem;
namespace {

std::int64_t env_number(const char* (*get)(const char*), const char* name, std::int64_t min) {
  const char* v = get(name);
  std::int64_t n = -1;
  const std::string_view text = v ? v : "";
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < min)
    throw UserError(kExitUsage, "", 0, 0,
                    fmt::format("${}='{}': expected an integer of at least {}", name, text, min));
  return n;
}

const char* real_getenv(const char* name) { return std::getenv(name); }

}  // namespace

ShardChoice choose_shard(std::optional<std::int64_t> index, std::optional<std::int64_t> count,
                         const char* (*get)(const char*)) {
  if (!get) get = real_getenv;
  ShardChoice c;
  if (index || count) {
    c = {index.value_or(0), count.value_or(1), "--shard-index/--shard-count"};
  } else if (get("SLURM_ARRAY_TASK_ID")) {
    const std::int64_t id = env_number(get, "SLURM_ARRAY_TASK_ID", 0);
    const std::int64_t min = get("SLURM_ARRAY_TASK_MIN") ? env_number(get, "SLURM_ARRAY_TASK_MIN", 0) : 0;
    c = {id - min, env_number(get, "SLURM_ARRAY_TASK_COUNT", 1), "Slurm job array"};
    if (id < min)
      throw UserError(kExitUsage, "", 0, 0,
                      fmt::format("$SLURM_ARRAY_TASK_ID={} is below $SLURM_ARRAY_TASK_MIN={}", id, min));
  } else if (get("JOB_COMPLETION_INDEX")) {
    if (!get("FLASHPROOF_SHARD_COUNT"))
      throw UserError(kExitUsage, "", 0, 0,
                      "$JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but $FLASHPROOF_SHARD_COUNT is not: set "
                      "it to the job's completions (fuzz/deploy/k8s-indexed-job.yaml), or pass --shard-count");
    c = {env_number(get, "JOB_COMPLETION_INDEX", 0), env_number(get, "FLASHPROOF_SHARD_COUNT", 1),
         "Kubernetes Indexed Job"};
  } else {
    c.origin = "default";
  }
  if (c.count < 1 || c.index < 0 || c.index >= c.count)
    throw UserError(kExitUsage, "", 0, 0,
                    fmt::format("shard {} of {} ({}): expected a count of at least 1 and an index from 0 to count - 1",
                                c.index, c.count, c.origin));
  return c;
}

MergeSummary merge_shards(const std::string& out, const std::vector<std::string>& ins) {
  MergeSummary s;
  Corpus merged(out + "/corpus");
  const std::string findings = out + "/findings/";
  create_output_directories(findings);
  for (const std::string& in : ins) {
    if (!fs::is_directory(in))
      throw UserError(kExitMissingInput, in, 0, 0, "not a directory: expected a shard's output (corpus/, findings/)");
    const bool layout = fs::is_directory(in + "/corpus") || fs::is_directory(in + "/findings");
    const std::string corpus_dir = layout ? in + "/corpus" : in;
    if (fs::is_directory(corpus_dir))
      for (const std::string& input : Corpus(corpus_dir).load()) {
        ++s.inputs;
        s.inputs_added += merged.add(input);
      }
    if (!layout || !fs::is_directory(in + "/findings")) continue;
    for (const std::string& dir : finding_dirs(in + "/findings")) {
      auto r = read_finding(dir);
      ++s.findings;
      const std::string target_dir = finding_dir(findings, r->target, r->finding.signature());
      if (auto existing = read_finding(target_dir)) {
        if (existing->input.size() <= r->input.size()) continue;  // keep the smallest case
        fs::remove_all(target_dir);
        --s.findings_added;
      }
      s.findings_added += write_finding(findings, *r);
    }
  }
  return s;
}

}  // namespace fp::fuzz
