// The campaign runner (fuzz/campaign.h) on toy targets whose failures are known in advance:
// streams are disjoint and reproducible, failures are minimized by RapidCheck shrinking to the
// smallest failing input and written once per signature, the corpus keeps what covers a new
// feature, a campaign resumes its stream, a crash or a hang is written by the crash guard and
// adopted by the next campaign, hostile corpus and finding files are skipped, and shard outputs
// merge.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "core/diagnostic.h"
#include "fuzz/campaign.h"
#include "fuzz/corpus.h"
#include "fuzz/crash_guard.h"
#include "fuzz/findings.h"
#include "fuzz/shards.h"
#include "fuzz/target.h"
#include "fuzz/libfuzzer_flags.h"

namespace fp::fuzz {
namespace {
namespace fs = std::filesystem;

std::string scratch(const std::string& tag) {
  const fs::path p = fs::temp_directory_path() / ("flashproof-fuzz-test-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// Inputs are decimal numbers in [0, 1000); a number above 500 fails ("big"), and a multiple of 7
// fails differently ("seven") when `sevens` — so two signatures exist. Features: the number's
// hundreds digit.
Target toy_target(bool sevens = false) {
  Target t;
  t.name = "parse";  // a registered name, so that finding directories read back as valid
  t.description = "toy";
  t.input_kind = "a number";
  t.generate = [](std::uint64_t seed) {
    return draw(rc::gen::map(rc::gen::inRange(0, 1000), [](int v) { return std::to_string(v); }), seed);
  };
  t.run = [sevens](const std::string& input, const std::string& name) {
    int v = 0;
    try {
      v = std::stoi(input);
    } catch (const std::exception&) {
      throw UserError(kExitMalformed, name, 1, 1, "expected a number");
    }
    Execution x;
    x.features.insert("hundreds:" + std::to_string(v / 100));
    if (v > 500) x.finding = Finding{"big", "toy", "above 500", {}};
    if (sevens && v > 0 && v % 7 == 0) x.finding = Finding{"seven", "toy", "a multiple of 7", {}};
    return x;
  };
  return t;
}

CampaignOptions options(const Target& t, const std::string& dir, std::int64_t runs) {
  CampaignOptions o;
  o.target = &t;
  o.corpus_dirs = {dir + "/corpus"};
  o.artifact_prefix = dir + "/findings/";
  o.runs = runs;
  o.seed = 7;
  o.quiet = true;
  return o;
}

TEST(FuzzCampaign, StreamsAreDisjointAndReproducible) {
  std::set<std::uint64_t> seen;
  for (std::int64_t shard = 0; shard < 4; ++shard)
    for (std::int64_t job = 0; job < 2; ++job) {
      const StreamLayout l{shard, 4, job, 2};
      for (std::uint64_t i = 0; i < 500; ++i) {
        EXPECT_TRUE(seen.insert(case_seed(11, l, i)).second) << "stream " << l.stream() << " execution " << i;
        EXPECT_EQ(case_seed(11, l, i), case_seed(11, l, i));
      }
    }
  EXPECT_NE(case_seed(11, {}, 0), case_seed(12, {}, 0));
}

TEST(FuzzCampaign, FailuresAreShrunkToTheSmallestFailingInputAndWrittenOncePerSignature) {
  const std::string dir = scratch("shrink");
  const Target t = toy_target();
  const CampaignStats s = run_campaign(options(t, dir, 200));
  EXPECT_EQ(s.executions, 200u);
  ASSERT_EQ(s.findings.size(), 1u);  // one signature, however many inputs fail
  EXPECT_GT(s.known_findings, 0u);
  const auto r = read_finding(s.findings[0]);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->input, "501");  // RapidCheck shrinks inRange toward its lower bound
  EXPECT_EQ(r->finding.signature(), "big:toy");
  EXPECT_TRUE(fs::exists(s.findings[0] + "/replay.sh"));
  // Every hundreds digit is a feature; the corpus kept one input per new feature.
  EXPECT_EQ(s.features.size(), 10u);
  EXPECT_EQ(Corpus(dir + "/corpus").load().size(), 10u);
  EXPECT_EQ(s.corpus_size, 10u);
  // Replaying the finding's case fails; a passing case does not.
  EXPECT_EQ(replay_files(t, {s.findings[0] + "/case.txt"}), 1);
  fs::remove_all(dir);
}

TEST(FuzzCampaign, ResumesItsStreamAndKnowsItsFindings) {
  const std::string dir = scratch("resume");
  const Target t = toy_target(true);
  const CampaignStats first = run_campaign(options(t, dir, 30));
  EXPECT_EQ(first.first_execution, 0u);
  const CampaignStats second = run_campaign(options(t, dir, 30));
  EXPECT_EQ(second.first_execution, 30u);   // where the first stopped
  EXPECT_EQ(second.corpus_replays, first.corpus_size);
  for (const std::string& f : second.findings)  // nothing found twice
    EXPECT_EQ(std::count(first.findings.begin(), first.findings.end(), f), 0);
  // A different seed is another stream: it starts at 0.
  CampaignOptions o = options(t, dir, 5);
  o.seed = 8;
  EXPECT_EQ(run_campaign(o).first_execution, 0u);
  fs::remove_all(dir);
}

TEST(FuzzCampaign, HostileCorpusAndFindingFilesAreSkipped) {
  const std::string dir = scratch("hostile");
  Corpus c(dir + "/corpus");
  EXPECT_TRUE(c.add("12"));
  EXPECT_FALSE(c.add("12"));
  std::ofstream(dir + "/corpus/not-a-digest") << "99";
  std::ofstream(dir + "/corpus/" + input_digest("13")) << "14";  // edited after it was written
  EXPECT_EQ(c.load(), std::vector<std::string>{"12"});
  // A state file that does not parse is ignored.
  std::ofstream(dir + "/corpus/.fuzz-state-parse-7-0-of-1.json") << "{ nonsense";
  EXPECT_FALSE(c.resume({"parse", 7, 0, 1, 0}));
  c.save({"parse", 7, 0, 1, 42});
  ASSERT_TRUE(c.resume({"parse", 7, 0, 1, 0}));
  EXPECT_EQ(c.resume({"parse", 7, 0, 1, 0})->next, 42u);
  EXPECT_FALSE(c.resume({"exec", 7, 0, 1, 0}));
  // Another seed on the same corpus keeps its own position (one state file per seed and stream).
  c.save({"parse", 8, 0, 1, 5});
  EXPECT_EQ(c.resume({"parse", 7, 0, 1, 0})->next, 42u);
  EXPECT_EQ(c.resume({"parse", 8, 0, 1, 0})->next, 5u);
  // A finding whose finding.json was edited to another signature no longer claims its directory.
  FindingRecord r{"parse", Finding{"big", "toy", "m", {{"counterexample/inputs/q.npy", "bytes"}, {"a.fp", "x"}}}, "600", 1, 2};
  ASSERT_TRUE(write_finding(dir + "/f/", r));
  EXPECT_FALSE(write_finding(dir + "/f/", r));
  EXPECT_EQ(finding_dirs(dir + "/f").size(), 1u);
  {
    auto back = read_finding(finding_dir(dir + "/f/", "parse", "big:toy"));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->finding.files, r.finding.files);  // nested files too
    EXPECT_EQ(back->input, "600");
  }
  const std::string d = finding_dir(dir + "/f/", "parse", "big:toy");
  std::string json;
  {
    std::ifstream in(d + "/finding.json");
    json.assign(std::istreambuf_iterator<char>(in), {});
  }
  json.replace(json.find("\"toy\""), 5, "\"elsewhere\"");
  std::ofstream(d + "/finding.json") << json;
  std::string why;
  EXPECT_FALSE(read_finding(d, &why));
  EXPECT_NE(why.find("signature"), std::string::npos) << why;
  EXPECT_TRUE(finding_dirs(dir + "/f").empty());
  // A case file over the size limit is malformed input.
  std::ofstream(dir + "/huge").write(std::string(kMaxCaseBytes + 1, 'x').data(), kMaxCaseBytes + 1);
  try {
    read_case_file(dir + "/huge");
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitMalformed);
  }
  fs::remove_all(dir);
}

// A target that crashes on one input and hangs on another, run in child processes: the crash
// guard writes the input in hand, and the next campaign adopts it as a finding.
TEST(FuzzCampaign, ACrashOrAHangIsWrittenAndAdoptedAsAFinding) {
  const std::string dir = scratch("crash");
  const std::string prefix = dir + "/";
  for (const char* what : {"crash", "hang"}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      CrashGuard guard(prefix, "parse", 0.3);
      const std::string input = what;
      guard.begin(input);
      if (input == "crash") std::abort();
      std::this_thread::sleep_for(std::chrono::seconds(30));
      std::_Exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (std::string(what) == "crash")
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    else
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kTimeoutExitCode);
  }
  EXPECT_TRUE(fs::exists(prefix + "crash-parse-" + input_digest("crash")));
  EXPECT_TRUE(fs::exists(prefix + "timeout-parse-" + input_digest("hang")));
  const std::vector<std::string> adopted = adopt_raw_artifacts(prefix, "parse");
  ASSERT_EQ(adopted.size(), 2u);
  std::set<std::string> kinds;
  for (const auto& d : adopted) {
    auto r = read_finding(d);
    ASSERT_TRUE(r) << d;
    kinds.insert(r->finding.kind);
    EXPECT_TRUE(r->input == "crash" || r->input == "hang");
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"crash", "timeout"}));
  EXPECT_FALSE(fs::exists(prefix + "crash-parse-" + input_digest("crash")));  // adopted once
  fs::remove_all(dir);
}

TEST(FuzzCampaign, ShardOutputsMergeDeduplicated) {
  const std::string dir = scratch("merge");
  const Target t = toy_target(true);
  for (int shard = 0; shard < 4; ++shard) {
    CampaignOptions o = options(t, dir + "/shard-" + std::to_string(shard), 60);
    o.layout = {shard, 4, 0, 1};
    run_campaign(o);
  }
  std::vector<std::string> ins;
  for (int shard = 0; shard < 4; ++shard) ins.push_back(dir + "/shard-" + std::to_string(shard));
  const MergeSummary m = merge_shards(dir + "/merged", ins);
  EXPECT_EQ(m.inputs, 40u);                   // 10 per shard: one per feature, different numbers
  EXPECT_EQ(m.inputs_added, 40u);             // distinct contents are all kept (-merge=1 minimizes)
  EXPECT_EQ(m.findings_added, 2u);            // big and seven, found by several shards
  EXPECT_GE(m.findings, 4u);
  EXPECT_EQ(finding_dirs(dir + "/merged/findings").size(), 2u);
  // Merging again adds nothing.
  const MergeSummary again = merge_shards(dir + "/merged", ins);
  EXPECT_EQ(again.inputs_added, 0u);
  EXPECT_EQ(again.findings_added, 0u);
  // -merge=1 keeps only inputs that add coverage.
  EXPECT_EQ(merge_into(t, dir + "/min", {dir + "/merged/corpus"}), 10u);
  fs::remove_all(dir);
}

// -minimize_crash=1 on a case file: lines are deleted while the same failure remains; a case that
// does not fail is left alone.
TEST(FuzzCampaign, MinimizeCrashDeletesLinesWhileTheFailureStays) {
  const std::string dir = scratch("minimize");
  Target t = toy_target();
  t.run = [](const std::string& input, const std::string&) {
    Execution x;
    if (input.find("BUG") != std::string::npos) x.finding = Finding{"bug", "toy", "contains BUG", {}};
    return x;
  };
  std::ofstream(dir + "/case.txt") << "alpha\nbeta\nBUG here\ngamma\ndelta\n";
  const auto written = minimize_case_file(t, dir + "/case.txt", dir + "/out/", 10);
  ASSERT_TRUE(written);
  const auto r = read_finding(*written);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->input, "BUG here\n");
  std::ofstream(dir + "/fine.txt") << "alpha\n";
  EXPECT_FALSE(minimize_case_file(t, dir + "/fine.txt", dir + "/out/", 10));
  fs::remove_all(dir);
}

TEST(FuzzCampaign, ShardsComeFromSlurmOrKubernetes) {
  static std::map<std::string, std::string> env;
  auto get = [](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  env = {};
  EXPECT_EQ(choose_shard(std::nullopt, std::nullopt, get).origin, "default");
  env = {{"SLURM_ARRAY_TASK_ID", "12"}, {"SLURM_ARRAY_TASK_MIN", "10"}, {"SLURM_ARRAY_TASK_COUNT", "4"}};
  ShardChoice c = choose_shard(std::nullopt, std::nullopt, get);
  EXPECT_EQ(c.index, 2);
  EXPECT_EQ(c.count, 4);
  env = {{"JOB_COMPLETION_INDEX", "3"}, {"FLASHPROOF_SHARD_COUNT", "8"}};
  c = choose_shard(std::nullopt, std::nullopt, get);
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.count, 8);
  // Flags win over the environment.
  c = choose_shard(1, 2, get);
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.origin, "--shard-index/--shard-count");
  for (auto bad : std::vector<std::map<std::string, std::string>>{
           {{"JOB_COMPLETION_INDEX", "3"}},  // no count
           {{"JOB_COMPLETION_INDEX", "8"}, {"FLASHPROOF_SHARD_COUNT", "8"}},
           {{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
           {{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_MIN", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}}) {
    env = bad;
    try {
      choose_shard(std::nullopt, std::nullopt, get);
      ADD_FAILURE() << "accepted " << bad.begin()->first << "=" << bad.begin()->second;
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitUsage);
    }
  }
}

TEST(FuzzCampaign, LibFuzzerFlagsAreRespelledOnlyUnderFuzz) {
  auto respell = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return respell_libfuzzer_flags(static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_EQ(respell({"flashproof", "fuzz", "parse", "-runs=10", "-max_total_time=5", "-q", "--seed=3"}),
            (std::vector<std::string>{"flashproof", "fuzz", "parse", "--runs=10", "--max_total_time=5", "-q", "--seed=3"}));
  EXPECT_EQ(respell({"flashproof", "verify", "-runs=10"}),
            (std::vector<std::string>{"flashproof", "verify", "-runs=10"}));
}

}  // namespace
}  // namespace fp::fuzz
