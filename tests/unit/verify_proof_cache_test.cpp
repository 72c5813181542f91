// The proof cache never reports a verdict it was not asked for (verify/proof_cache.h). Each test
// names what broke before: an edited entry's verdict was reported as `exact (cached)`; a genuine
// entry of another pair copied under a task's key answered for it; with HOME unset the cache was
// ./.cache in the working directory (a file committed to a checkout could flip a CI gate); a run
// could not be told to ignore the cache; a build with a fixed bug reused the old build's verdicts.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "cache_test_support.h"
#include "core/diagnostic.h"
#include "core/support/build_identity.h"
#include "core/support/sha256.h"
#include "core/text_parser.h"
#include "exec/jit.h"
#include "verify/engine.h"
#include "verify/proof_cache.h"
#include "verify/verdict_cache.h"

namespace fp::verify {
namespace {

namespace fs = std::filesystem;
using test::ScopedEnv;
using test::ScratchDir;

Routine load_pair_routine(const std::string& name) {
  const std::string path = std::string(FLASHPROOF_SOURCE_DIR) + "/tests/lit/verify/pairs/" + name;
  return parse_routine(test::read_file(path), path);
}

// nan-max claims exact and is refuted (max differs from compare-and-select on NaN); max-commutes
// claims exact and is exact. Both have the same inputs and outputs.
Task refuted_pair() {
  return pair_task(load_pair_routine("nan-max.src.fp"), load_pair_routine("nan-max.tgt.fp"), "exact",
                   "tgt.fp", "repro");
}
Task exact_pair() {
  return pair_task(load_pair_routine("max-commutes.src.fp"), load_pair_routine("max-commutes.tgt.fp"),
                   "exact", "tgt.fp", "repro");
}

struct CacheRun {
  ScratchDir dir{"flashproof-proof-cache-test-"};
  EngineOptions options() const {
    EngineOptions o;
    o.cache_dir = dir / "proofs";
    o.cex_dir = dir / "cex";
    o.limits.search_trials = 200;
    return o;
  }
  Verdict verify(const Task& t, const EngineOptions& o) const { return verify_tasks({t}, o)[0]; }
  Verdict verify(const Task& t) const { return verify(t, options()); }
  std::string entry_of(const Task& t) const {
    const std::string key = cache_key(t, options().limits);
    return dir / ("proofs/" + key.substr(0, 2) + "/" + key.substr(2) + ".json");
  }
};

TEST(ProofCache, EditedVerdictIsNotUsed) {
  CacheRun run;
  const Task a = refuted_pair();
  ASSERT_EQ(run.verify(a).kind, VerdictKind::Refuted);
  std::string entry = test::read_file(run.entry_of(a));
  ASSERT_NE(entry.find("\"refuted\""), std::string::npos);
  entry = std::regex_replace(entry, std::regex("\"refuted\""), "\"exact\"");
  test::write_file(run.entry_of(a), entry);
  Verdict again = run.verify(a);
  EXPECT_EQ(again.kind, VerdictKind::Refuted);
  EXPECT_FALSE(again.cached) << "an edited entry was used";
  // The recomputed verdict was written back, genuine again.
  Verdict third = run.verify(a);
  EXPECT_TRUE(third.cached);
  EXPECT_EQ(third.kind, VerdictKind::Refuted);
}

TEST(ProofCache, GenuineEntryOfAnotherPairUnderThisKeyIsNotUsed) {
  CacheRun run;
  const Task a = refuted_pair(), b = exact_pair();
  ASSERT_EQ(run.verify(a).kind, VerdictKind::Refuted);
  ASSERT_EQ(run.verify(b).kind, VerdictKind::Exact);
  fs::copy_file(run.entry_of(b), run.entry_of(a), fs::copy_options::overwrite_existing);
  Verdict v = run.verify(a);
  EXPECT_EQ(v.kind, VerdictKind::Refuted) << "the copied exact verdict answered for a refuted pair";
  EXPECT_FALSE(v.cached);
}

// Only the seal's HMAC stands between a forged entry and a cached verdict: an edited entry with the
// digest and size of its new bytes recomputed (what anyone without the key can do) is not used.
TEST(ProofCache, EntryWhoseSealOnlyLacksTheKeyIsNotUsed) {
  CacheRun run;
  const Task a = refuted_pair();
  ASSERT_EQ(run.verify(a).kind, VerdictKind::Refuted);
  const std::string entry = test::read_file(run.entry_of(a));
  const std::size_t nl = entry.find('\n');
  ASSERT_NE(nl, std::string::npos);
  std::string payload = entry.substr(nl + 1);
  ASSERT_NE(payload.find("\"refuted\""), std::string::npos);
  payload = std::regex_replace(payload, std::regex("\"refuted\""), "\"exact\"");
  const std::string forged_seal = fmt::format("flashproof-seal 1 {} {} {}\n", sha256_hex(payload), payload.size(),
                                              std::string(64, '0'));
  ASSERT_EQ(entry.substr(0, 18), forged_seal.substr(0, 18));  // the seal's format is what this forges
  test::write_file(run.entry_of(a), forged_seal + payload);
  EXPECT_FALSE(ProofCache(run.options().cache_dir).get(task_identity(a, run.options().limits)));
  const Verdict v = run.verify(a);
  EXPECT_EQ(v.kind, VerdictKind::Refuted) << "a forged entry's exact verdict was used";
  EXPECT_FALSE(v.cached);
}

TEST(ProofCache, AuthenticEntryRecordingAnotherIdentityIsNotUsed) {
  // Even an entry sealed with the user's key answers only the identity it records.
  CacheRun run;
  const Task a = refuted_pair(), b = exact_pair();
  const EngineOptions o = run.options();
  const Verdict vb = run.verify(b);
  ASSERT_EQ(vb.kind, VerdictKind::Exact);
  const nlohmann::json entry{{"format", "flashproof-proof-cache 2"},
                             {"identity", task_identity(b, o.limits)},
                             {"value", to_json(vb)}};
  const std::string key = cache_key(a, o.limits);
  PrivateCache(ProofCache::spec(o.cache_dir))
      .write_sealed(key.substr(0, 2) + "/" + key.substr(2) + ".json", entry.dump(1) + "\n");
  EXPECT_FALSE(ProofCache(o.cache_dir).get(task_identity(a, o.limits)));
  Verdict v = run.verify(a);
  EXPECT_EQ(v.kind, VerdictKind::Refuted);
  EXPECT_FALSE(v.cached);
}

TEST(ProofCache, IdentityRecordsTheTaskAndTheBuild) {
  const Task a = refuted_pair(), b = exact_pair();
  const Limits l;
  const nlohmann::json id = task_identity(a, l);
  EXPECT_EQ(id.at("build"), build_identity());
  EXPECT_EQ(id.at("claim"), "exact");
  EXPECT_EQ(id.at("src_sha256").get<std::string>().size(), 64u);
  EXPECT_NE(id.at("tgt_sha256"), task_identity(b, l).at("tgt_sha256"));
  EXPECT_EQ(cache_key(a, l), ProofCache::key_of(id));
}

TEST(ProofCache, EntryOfAnotherBuildMisses) {
  CacheRun run;
  const Task a = exact_pair();
  const EngineOptions o = run.options();
  nlohmann::json other_build = task_identity(a, o.limits);
  other_build["build"] = "gnu-build-id:00000000000000000000000000000000deadbeef";
  EngineOptions uncached = o;
  uncached.use_cache = false;
  const ProofCache cache(o.cache_dir);
  cache.put(other_build, to_json(run.verify(a, uncached)));
  EXPECT_TRUE(cache.get(other_build)) << "the entry itself is genuine";
  EXPECT_NE(ProofCache::key_of(other_build), cache_key(a, o.limits));
  EXPECT_FALSE(cache.get(task_identity(a, o.limits)));
  EXPECT_FALSE(run.verify(a).cached) << "another build's verdict was reused";
}

TEST(ProofCache, BuildIdentityIsTheExecutablesGnuBuildId) {
  const std::string& id = build_identity();
  ASSERT_EQ(id.rfind("gnu-build-id:", 0), 0u) << id;
  std::string out;
  // readelf's own /proc/self/exe would be readelf: name this executable by its path.
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  if (run_program({"readelf", "-n", exe}, out) != 0) GTEST_SKIP() << "no readelf";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("Build ID: ([0-9a-f]+)"))) << out;
  EXPECT_EQ(id, "gnu-build-id:" + m[1].str());
}

TEST(ProofCache, WithoutHomeNothingIsWrittenToTheWorkingDirectory) {
  ScratchDir s;
  const fs::path cwd = fs::current_path();
  fs::current_path(s.path());
  {
    ScopedEnv home("HOME", std::nullopt), xdg("XDG_CACHE_HOME", std::nullopt),
        relative("XDG_CONFIG_HOME", std::nullopt);
    EXPECT_EQ(ProofCache::default_dir(), "");
    ScopedEnv relative_cache("XDG_CACHE_HOME", std::string(".cache"));
    EXPECT_EQ(ProofCache::default_dir(), "") << "a relative XDG_CACHE_HOME puts the cache in the checkout";
    EngineOptions o;
    o.cex_dir = s / "cex";
    const Task a = exact_pair();
    EXPECT_EQ(verify_tasks({a}, o)[0].kind, VerdictKind::Exact);
    EXPECT_FALSE(verify_tasks({a}, o)[0].cached);
  }
  EXPECT_FALSE(fs::exists(s / ".cache")) << "the proof cache landed in the working directory";
  fs::current_path(cwd);
}

TEST(ProofCache, CacheOffIgnoresAValidEntryAndRefreshRewritesIt) {
  CacheRun run;
  const Task a = exact_pair();
  ASSERT_FALSE(run.verify(a).cached);
  ASSERT_TRUE(run.verify(a).cached);
  EngineOptions off = run.options();
  off.use_cache = false;
  EXPECT_FALSE(run.verify(a, off).cached);
  EngineOptions refresh = run.options();
  refresh.refresh_cache = true;
  fs::remove(run.entry_of(a));
  EXPECT_FALSE(run.verify(a, refresh).cached);
  EXPECT_TRUE(fs::exists(run.entry_of(a))) << "refresh did not store the recomputed verdict";
  EXPECT_TRUE(run.verify(a).cached);
}

TEST(ProofCache, CacheModeFromTheFlagElseTheEnvironment) {
  ScopedEnv unset("FLASHPROOF_PROOF_CACHE", std::nullopt);
  EXPECT_EQ(resolve_cache_mode("", false), CacheMode::Use);
  EXPECT_EQ(resolve_cache_mode("", true), CacheMode::Off);
  EXPECT_EQ(resolve_cache_mode("refresh", false), CacheMode::Refresh);
  EXPECT_EQ(resolve_cache_mode("off", true), CacheMode::Off);
  EXPECT_THROW(resolve_cache_mode("use", true), UserError);
  EXPECT_THROW(resolve_cache_mode("sometimes", false), UserError);
  {
    ScopedEnv env("FLASHPROOF_PROOF_CACHE", std::string("off"));
    EXPECT_EQ(resolve_cache_mode("", false), CacheMode::Off);
    EXPECT_EQ(resolve_cache_mode("use", false), CacheMode::Use) << "the flag wins";
  }
  ScopedEnv bad("FLASHPROOF_PROOF_CACHE", std::string("of"));
  try {
    resolve_cache_mode("", false);
    ADD_FAILURE() << "a misspelt FLASHPROOF_PROOF_CACHE was ignored";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    EXPECT_NE(std::string(e.what()).find("FLASHPROOF_PROOF_CACHE"), std::string::npos);
  }
}

TEST(ProofCache, WritableCacheDirectoryIsRefused) {
  CacheRun run;
  const EngineOptions o = run.options();
  fs::create_directories(o.cache_dir);
  ::chmod(o.cache_dir.c_str(), 0777);
  try {
    verify_tasks({exact_pair()}, o);
    ADD_FAILURE() << "a world-writable proof cache was used";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitCantCreate);
    EXPECT_NE(std::string(e.what()).find("refusing the proof cache directory"), std::string::npos)
        << e.what();
  }
}

TEST(ProofCache, WithoutAKeyNothingIsStoredOrRead) {
  CacheRun run;
  ScopedEnv key("FLASHPROOF_CACHE_KEY", std::nullopt), home("HOME", std::nullopt),
      config("XDG_CONFIG_HOME", std::nullopt);
  const Task a = exact_pair();
  EXPECT_FALSE(run.verify(a).cached);
  EXPECT_FALSE(run.verify(a).cached);
  EXPECT_FALSE(fs::exists(run.entry_of(a)));
}

}  // namespace
}  // namespace fp::verify
