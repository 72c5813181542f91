// `flashproof fuzz TARGET [CORPUS_DIR|FILE…]`, `flashproof fuzz merge OUT IN…`, `flashproof fuzz
// list`: fuzzing campaigns against the rewrites (docs/fuzzing.md; the runner is fuzz/campaign.h).
// libFuzzer's flags keep libFuzzer's meanings and spelling (-runs=N; fuzz/libfuzzer_flags.h).
// Exit: 0 nothing failed, 1 a finding (new, or a known one seen again), 64 usage, 65 a case file
// that is not an input of the target, 66 an unreadable one.
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include "core/diagnostic.h"
#include "core/support/executable_path.h"
#include "fuzz/campaign.h"
#include "fuzz/shards.h"
#include "fuzz/target.h"
#include "tools/command.h"
#include "tools/option_checks.h"

extern char** environ;

namespace fp::cli {
namespace {
namespace fs = std::filesystem;

struct FuzzOptions {
  std::vector<std::string> args;  // TARGET then corpus dirs and files; or merge OUT IN…; or list
  std::int64_t runs = -1;
  double max_total_time = 0;
  std::uint64_t seed = 0;
  int jobs = 0;
  int workers = 0;
  std::int64_t job_index = -1;
  std::string artifact_prefix = "./";
  int merge = 0;
  int minimize_crash = 0;
  int print_final_stats = 0;
  double timeout = 1200;
  std::optional<std::int64_t> shard_index, shard_count;
  double minimize_budget = 60;
  bool quiet = false;
};

std::string target_names() {
  std::vector<std::string> names;
  for (const auto& t : fuzz::targets()) names.push_back(t.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

const fuzz::Target& target_named(const std::string& name) {
  if (const fuzz::Target* t = fuzz::find_target(name)) return *t;
  throw UserError(kExitUsage, "", 0, 0,
                  fmt::format("unknown fuzzing target '{}': expected one of {}, or `merge`, `list`", name, target_names()));
}

void list_targets() {
  for (const auto& t : fuzz::targets()) fmt::print("{:<8} {}\n         input: {}\n", t.name, t.description, t.input_kind);
}

void run_merge(const std::vector<std::string>& args) {
  if (args.size() < 3) throw UserError(kExitUsage, "", 0, 0, "fuzz merge: expected OUT_DIR and at least one IN_DIR");
  const fuzz::MergeSummary s = fuzz::merge_shards(args[1], {args.begin() + 2, args.end()});
  fmt::print("merged {} shard outputs into {}: corpus {} inputs read, {} new; findings {} read, {} distinct new\n",
             args.size() - 2, args[1], s.inputs, s.inputs_added, s.findings, s.findings_added);
}

std::uint64_t campaign_seed(std::uint64_t requested) {
  return requested != 0 ? requested
                        : static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
}

// This command line for job `job`: every job draws from the one campaign seed (resolved by the
// parent when it comes from the clock), so the jobs' streams are the disjoint streams of one campaign.
std::vector<std::string> job_arguments(const std::string& self, std::uint64_t seed, int job) {
  std::vector<std::string> argv = {self};
  const std::vector<std::string>& given = command_arguments();
  for (std::size_t i = 0; i < given.size(); ++i) {
    if (given[i] == "--seed" || given[i] == "-seed") {
      ++i;  // and its value
      continue;
    }
    if (given[i].rfind("--seed=", 0) != 0 && given[i].rfind("-seed=", 0) != 0) argv.push_back(given[i]);
  }
  argv.push_back(fmt::format("--seed={}", seed));
  argv.push_back(fmt::format("--job-index={}", job));
  return argv;
}

// Starts one job with its standard output and error in fuzz-<job>.log.
pid_t spawn_job(const std::string& self, std::vector<std::string> argv, int job) {
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = fmt::format("fuzz-{}.log", job);
  // O_NOFOLLOW: a planted link at fuzz-<job>.log is not followed (its target would be truncated).
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, self.c_str(), &actions, nullptr, ptrs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    // Most often the log cannot be created (a directory or a link in the way, no permission).
    struct stat st {};
    if (::lstat(log.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw UserError(kExitCantCreate, log, 0, 0,
                      fmt::format("cannot create job {}'s log: it is {} (not followed, not replaced)", job,
                                  S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file"));
    throw UserError(kExitCantCreate, log, 0, 0, fmt::format("cannot start job {}: {}", job, std::strerror(err)));
  }
  fmt::print(stderr, "job {} started (pid {}), log {}\n", job, pid, log);
  return pid;
}

// The variable through which a parent tells its workers its pid (a worker checks it is still its
// parent, and dies with it: stop_with_parent).
constexpr const char* kParentVariable = "FLASHPROOF_FUZZ_PARENT";

// A worker stops when its parent dies, whatever kills it (SIGTERM, SIGKILL): the kernel sends it
// SIGTERM (PR_SET_PDEATHSIG), which stops a campaign as SIGTERM always does (its state saved). A
// parent that died before the worker got here is caught by the pid check.
void stop_with_parent() {
  const char* v = std::getenv(kParentVariable);
  if (v == nullptr || *v == '\0') return;
  const long parent = std::strtol(v, nullptr, 10);
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
    throw std::runtime_error(fmt::format("cannot tie the worker to its parent: {}", std::strerror(errno)));
  if (static_cast<long>(::getppid()) != parent) {
    fmt::print(stderr, "flashproof fuzz: the parent (pid {}) is gone; this worker stops\n", parent);
    std::exit(kExitInternal);
  }
}

// -jobs=N: N campaigns in worker processes (at most -workers at a time), each one stream, its
// output in fuzz-<job>.log, as libFuzzer does. Returns the worst exit status.
int run_jobs(const FuzzOptions& o) {
  const std::uint64_t seed = campaign_seed(o.seed);
  fmt::print(stderr, "flashproof fuzz: {} jobs, seed {}\n", o.jobs, seed);
  const int workers = o.workers > 0 ? o.workers : std::max(1, std::min<int>(o.jobs, std::thread::hardware_concurrency() / 2));
  const std::string self = flashproof_executable().empty() ? "/proc/self/exe" : flashproof_executable();
  ::setenv(kParentVariable, std::to_string(::getpid()).c_str(), 1);
  std::map<pid_t, int> running;  // pid -> job
  int next = 0, worst = 0;
  while (next < o.jobs || !running.empty()) {
    for (; next < o.jobs && static_cast<int>(running.size()) < workers; ++next)
      running[spawn_job(self, job_arguments(self, seed, next), next)] = next;
    int status = 0;
    const auto it = running.find(::wait(&status));
    if (it == running.end()) continue;
    const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fmt::print(stderr, "job {} exited with {} (log fuzz-{}.log)\n", it->second, rc, it->second);
    worst = std::max(worst, rc);
    running.erase(it);
  }
  return worst;
}

int run_fuzz_target(const FuzzOptions& o) {
  const fuzz::Target& t = target_named(o.args[0]);
  std::vector<std::string> dirs, files;
  // An existing file is a case to replay; anything else is a corpus directory (created if missing).
  for (auto it = o.args.begin() + 1; it != o.args.end(); ++it)
    (fs::exists(*it) && !fs::is_directory(*it) ? files : dirs).push_back(*it);
  if (o.merge) {
    if (dirs.size() < 2 || !files.empty())
      throw UserError(kExitUsage, "", 0, 0, "-merge=1: expected OUT_CORPUS_DIR and at least one IN_CORPUS_DIR");
    const std::size_t added = fuzz::merge_into(t, dirs[0], {dirs.begin() + 1, dirs.end()});
    fmt::print("merge: {} inputs added to {}\n", added, dirs[0]);
    return kExitOk;
  }
  if (o.minimize_crash) {
    if (files.size() != 1) throw UserError(kExitUsage, "", 0, 0, "-minimize_crash=1: expected one case file");
    auto dir = fuzz::minimize_case_file(t, files[0], o.artifact_prefix, o.max_total_time > 0 ? o.max_total_time : 60);
    if (!dir) {
      fmt::print("{}: does not fail: nothing to minimize\n", files[0]);
      return kExitOk;
    }
    fmt::print("minimized: {}/case.txt (replay: {}/replay.sh)\n", *dir, *dir);
    return kExitRefuted;
  }
  if (!files.empty()) {
    if (!dirs.empty()) throw UserError(kExitUsage, "", 0, 0, "give either case files to replay or corpus directories");
    return fuzz::replay_files(t, files) > 0 ? kExitRefuted : kExitOk;
  }
  if (o.jobs > 1 && o.job_index < 0) return run_jobs(o);
  if (o.job_index >= 0) stop_with_parent();
  const fuzz::ShardChoice shard = fuzz::choose_shard(o.shard_index, o.shard_count);
  fuzz::CampaignOptions c;
  c.target = &t;
  c.corpus_dirs = dirs;
  c.runs = o.runs;
  c.max_total_time = o.max_total_time;
  c.seed = campaign_seed(o.seed);
  c.layout = {shard.index, shard.count, std::max<std::int64_t>(0, o.job_index), std::max(1, o.jobs)};
  c.artifact_prefix = o.artifact_prefix;
  c.timeout_s = o.timeout;
  c.minimize_budget_s = o.minimize_budget;
  c.quiet = o.quiet;
  if (!o.quiet)
    fmt::print(stderr, "flashproof fuzz {}: seed {}, stream {} of {} (shard {} of {}: {}), findings under {}\n", t.name,
               c.seed, c.layout.stream(), c.layout.streams(), shard.index, shard.count, shard.origin,
               o.artifact_prefix);
  const fuzz::CampaignStats stats = fuzz::run_campaign(c);
  if (o.print_final_stats) fmt::print("{}", fuzz::final_stats_text(t, stats));
  fmt::print("{}: {} executions in {:.1f} s ({:.1f}/s), corpus {}, features {}, findings: {} new, {} known seen again\n",
             t.name, stats.executions, stats.seconds, stats.seconds > 0 ? stats.executions / stats.seconds : 0.0,
             stats.corpus_size, stats.features.size(), stats.findings.size(), stats.known_findings);
  for (const std::string& dir : stats.findings) fmt::print("finding: {}  (replay: {}/replay.sh)\n", dir, dir);
  return stats.findings.empty() && stats.known_findings == 0 ? kExitOk : kExitRefuted;
}

void setup_fuzz(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "fuzz",
      "Fuzzing campaigns against the rewrites: `fuzz TARGET [CORPUS_DIR|FILE...]`, `fuzz merge OUT IN...`, "
      "`fuzz list`; libFuzzer's flags (-runs=N, -max_total_time=S, ...) with libFuzzer's meanings");
  auto o = std::make_shared<FuzzOptions>();
  sub->add_option("args", o->args,
                  fmt::format("TARGET ({}) then corpus directories (the first receives new inputs) or case files to "
                              "replay; or `merge OUT_DIR IN_DIR...`; or `list`",
                              target_names()))
      ->required();
  sub->add_option("--runs", o->runs, "Executions to run (-1: until -max_total_time or a signal)")
      ->transform(signed_in(-1, std::numeric_limits<std::int64_t>::max()))
      ->capture_default_str();
  sub->add_option("--max_total_time,--max-total-time", o->max_total_time, "Seconds to run (0: no limit)")
      ->transform(finite_in(0, kMaxSeconds));
  sub->add_option("--seed", o->seed, "Seed of the campaign's streams (0: from the clock, printed)")
      ->transform(any_integer<std::uint64_t>());
  sub->add_option("--jobs", o->jobs,
                  "Independent jobs, each in a worker process (log fuzz-<job>.log); 1 to max(256, 4 x cores); the "
                  "workers stop with this process, whatever stops it")
      ->transform(thread_count());
  sub->add_option("--workers", o->workers, "Jobs running at a time (default: min(jobs, cores / 2))")
      ->transform(thread_count());
  sub->add_option("--job-index", o->job_index, "(internal) this worker's job")
      ->transform(signed_in(0, 4095))
      ->group("");
  sub->add_option("--artifact_prefix,--artifact-prefix", o->artifact_prefix,
                  "Prefix of the findings' case directories (default ./; 'out/' gives out/finding-...)");
  sub->add_option("--merge", o->merge, "1: merge the inputs of the other corpus dirs that add coverage into the first")
      ->transform(integer_in(0, 1));
  sub->add_option("--minimize_crash,--minimize-crash", o->minimize_crash, "1: minimize one failing case file")
      ->transform(integer_in(0, 1));
  sub->add_option("--print_final_stats,--print-final-stats", o->print_final_stats, "1: print the final statistics")
      ->transform(integer_in(0, 1));
  sub->add_option("--timeout", o->timeout, "Seconds one input may run before it is a finding (0: none)")
      ->transform(finite_in(0, kMaxSeconds))
      ->capture_default_str();
  sub->add_option("--shard-index", o->shard_index,
                  "This shard (default: $SLURM_ARRAY_TASK_ID - $SLURM_ARRAY_TASK_MIN, or $JOB_COMPLETION_INDEX)")
      ->transform(signed_in(0, 1 << 20));
  sub->add_option("--shard-count", o->shard_count,
                  "Shards in all (default: $SLURM_ARRAY_TASK_COUNT, or $FLASHPROOF_SHARD_COUNT)")
      ->transform(signed_in(1, 1 << 20));
  sub->add_option("--minimize-budget", o->minimize_budget, "Seconds spent minimizing each finding")
      ->transform(finite_in(0, kMaxSeconds))
      ->capture_default_str();
  sub->add_flag("-q,--quiet", o->quiet, "No progress line");
  sub->callback([o] {
    const std::string& first = o->args[0];
    if (first == "list") return list_targets();
    if (first == "merge") return run_merge(o->args);
    set_exit_code(run_fuzz_target(*o));
  });
}

}  // namespace
FP_REGISTER_COMMAND("fuzz", setup_fuzz);
}  // namespace fp::cli
