// The JIT cache never makes flashproof load code it did not compile for the source at hand
// (exec/jit.h, core/support/private_cache.h). Each test names what broke before: another routine's .so
// copied over an entry was loaded (and `run` exited 0 with that routine's outputs); a link at an
// entry was followed; a FIFO at an entry blocked; a world-writable or foreign-owned cache
// directory was used silently; without HOME and XDG_CACHE_HOME the cache was the predictable
// /tmp/flashproof-jit-<uid>, which another user could create first.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "cache_test_support.h"
#include "core/diagnostic.h"
#include "core/support/private_directory.h"
#include "exec/jit.h"

namespace fp {
namespace {

namespace fs = std::filesystem;
using test::ScopedEnv;
using test::ScratchDir;

// Two routines with the same entry point and different answers.
constexpr const char* kSourceA = "int fp_test_which(void) { return 1; }\n";
constexpr const char* kSourceB = "int fp_test_which(void) { return 2; }\n";

JitOptions options(const std::string& dir) {
  JitOptions j;
  j.flags = "-O1 -fPIC -shared";
  j.flags_from_user = true;
  j.cache_dir = dir;
  return j;
}

int which(const JitResult& r) {
  auto f = reinterpret_cast<int (*)()>(r.object->symbol("fp_test_which"));
  return f ? f() : -1;
}

// Compiles A and B into `dir` and releases them (an object still loaded must not be overwritten in
// place). Returns the paths of their objects.
std::pair<std::string, std::string> compile_both(const std::string& dir) {
  JitResult a = jit_compile_c(kSourceA, options(dir));
  JitResult b = jit_compile_c(kSourceB, options(dir));
  EXPECT_EQ(which(a), 1);
  EXPECT_EQ(which(b), 2);
  return {dir + "/" + a.key + ".so", dir + "/" + b.key + ".so"};
}

void expect_recompiled_a(const std::string& dir) {
  JitResult a = jit_compile_c(kSourceA, options(dir));
  EXPECT_FALSE(a.cache_hit) << "a planted entry was loaded";
  EXPECT_EQ(which(a), 1);
  JitResult again = jit_compile_c(kSourceA, options(dir));
  EXPECT_TRUE(again.cache_hit) << "the recompiled entry was not stored";
  EXPECT_EQ(which(again), 1);
}

TEST(ExecJitCache, SecondCompileLoadsTheVerifiedEntry) {
  ScratchDir s;
  compile_both(s.path());
  JitResult a = jit_compile_c(kSourceA, options(s.path()));
  EXPECT_TRUE(a.cache_hit);
  EXPECT_EQ(which(a), 1);
  EXPECT_EQ(test::mode_of(s / (a.key + ".so")) & 022, 0u);
  EXPECT_EQ(test::mode_of(s / (a.key + ".so.seal")), 0600u);
}

TEST(ExecJitCache, AnotherRoutinesObjectCopiedOverAnEntryIsRecompiledNotLoaded) {
  ScratchDir s;
  auto [a_so, b_so] = compile_both(s.path());
  fs::copy_file(b_so, a_so, fs::copy_options::overwrite_existing);
  expect_recompiled_a(s.path());
  // The seal copied along with it does not help: it binds B's bytes to B's name.
  fs::copy_file(b_so + ".seal", a_so + ".seal", fs::copy_options::overwrite_existing);
  fs::copy_file(b_so, a_so, fs::copy_options::overwrite_existing);
  expect_recompiled_a(s.path());
}

TEST(ExecJitCache, DamagedEntryIsRecompiledNotReportedAsABug) {
  ScratchDir s;
  auto [a_so, b_so] = compile_both(s.path());
  fs::resize_file(a_so, 100);
  expect_recompiled_a(s.path());
  test::write_file(a_so + ".seal", "garbage\n");
  expect_recompiled_a(s.path());
}

TEST(ExecJitCache, SymlinkedEntryIsNotFollowed) {
  ScratchDir s;
  auto [a_so, b_so] = compile_both(s.path());
  fs::remove(a_so);
  fs::create_symlink(b_so, a_so);
  expect_recompiled_a(s.path());
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(a_so)));
}

TEST(ExecJitCache, FifoAtAnEntryDoesNotBlock) {
  ScratchDir s;
  auto [a_so, b_so] = compile_both(s.path());
  fs::remove(a_so);
  ASSERT_EQ(::mkfifo(a_so.c_str(), 0600), 0);
  ::alarm(120);  // blocking on the FIFO ends the test instead of hanging it
  expect_recompiled_a(s.path());
  fs::remove(a_so + ".seal");
  ASSERT_EQ(::mkfifo((a_so + ".seal").c_str(), 0600), 0);
  expect_recompiled_a(s.path());
  ::alarm(0);
}

TEST(ExecJitCache, WorldOrGroupWritableDirectoryIsRefusedWithTheReason) {
  ScratchDir s;
  for (mode_t mode : {0777, 0770}) {
    ::chmod(s.path().c_str(), mode);
    try {
      jit_compile_c(kSourceA, options(s.path()));
      ADD_FAILURE() << "a writable cache directory was used";
    } catch (const UserError& e) {
      EXPECT_EQ(e.code(), kExitCantCreate);
      EXPECT_NE(std::string(e.what()).find("refusing the JIT cache directory '" + s.path() + "'"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(mode == 0777 ? "writable by others" : "writable by its group"),
                std::string::npos)
          << e.what();
    }
  }
  ::chmod(s.path().c_str(), 0700);
  EXPECT_TRUE(fs::is_empty(s.path()));
}

TEST(ExecJitCache, ForeignOwnedDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the directory to another user (chown)";
  ScratchDir s;
  ASSERT_EQ(::chown(s.path().c_str(), 12345, 12345), 0);
  try {
    jit_compile_c(kSourceA, options(s.path()));
    ADD_FAILURE() << "a foreign-owned cache directory was used";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("owned by uid 12345"), std::string::npos) << e.what();
  }
}

TEST(ExecJitCache, WithoutHomeTheCacheIsAFreshPrivateDirectoryNotAPredictableOne) {
  const std::string predictable = fmt::format("/tmp/flashproof-jit-{}", ::getuid());
  ScopedEnv jit("FLASHPROOF_JIT_CACHE", std::nullopt), xdg("XDG_CACHE_HOME", std::nullopt),
      home("HOME", std::nullopt);
  EXPECT_EQ(configured_cache_dir(), "");
  const std::string dir = default_cache_dir();
  EXPECT_NE(dir, predictable);
  EXPECT_EQ(private_directory_problem(dir), "");
  EXPECT_EQ(test::mode_of(dir), 0700u);
  const std::string base = fs::path(dir).filename().string();
  EXPECT_EQ(base.rfind("flashproof-jit-", 0), 0u) << dir;
  EXPECT_EQ(base.size(), std::string("flashproof-jit-XXXXXX").size()) << dir;
  JitOptions j = options("");
  JitResult a = jit_compile_c(kSourceA, j);
  EXPECT_EQ(which(a), 1);
  EXPECT_TRUE(fs::exists(dir + "/" + a.key + ".so"));
  EXPECT_TRUE(jit_compile_c(kSourceA, j).cache_hit);
}

TEST(ExecJitCache, UncachedCompileWritesNothingToTheCache) {
  ScratchDir s;
  JitOptions j = options(s.path());
  j.use_cache = false;
  EXPECT_EQ(which(jit_compile_c(kSourceA, j)), 1);
  EXPECT_FALSE(fs::exists(s.path()) && !fs::is_empty(s.path()));
}

TEST(ExecJitCache, StaleTemporariesOfAKilledCompileAreRemoved) {
  ScratchDir s;
  const std::string dir = s / "jit";
  ASSERT_EQ(make_private_directory(dir), "");
  const std::string killed = dir + "/.tmp-" + std::string(64, 'a') + "-123-00ff.so";
  const std::string legacy = dir + "/" + std::string(64, 'b') + ".so.tmp-123-00ff";
  for (const auto& p : {killed, legacy}) {
    test::write_file(p, "half an object");
    struct timespec t[2] = {{::time(nullptr) - 2 * kStaleTemporarySeconds, 0},
                            {::time(nullptr) - 2 * kStaleTemporarySeconds, 0}};
    ::utimensat(AT_FDCWD, p.c_str(), t, 0);
  }
  EXPECT_EQ(which(jit_compile_c(kSourceA, options(dir))), 1);
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_FALSE(fs::exists(legacy));
}

TEST(ExecJitCache, SizeLimitEvictsOldObjects) {
  ScratchDir s;
  ScopedEnv limit("FLASHPROOF_JIT_CACHE_MAX", std::string("1"));
  EXPECT_EQ(jit_cache_limit(), 1u);
  // Over the limit, everything but what is loaded goes; the loaded object keeps working.
  JitResult a = jit_compile_c(kSourceA, options(s.path()));
  JitResult b = jit_compile_c(kSourceB, options(s.path()));
  EXPECT_EQ(which(a), 1);
  EXPECT_EQ(which(b), 2);
  EXPECT_LE(measure_cache(s.path()).bytes, 1u);
}

std::set<std::string> objects_in(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".so") out.insert(e.path().string());
  return out;
}

int run_tool(const std::vector<std::string>& args, const std::string& jit_dir, std::string& out) {
  std::vector<std::string> argv{"env", "FLASHPROOF_JIT_CACHE=" + jit_dir, FLASHPROOF_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, out);
}

TEST(ExecJitCache, RunWithAnotherRoutinesObjectPlantedStillWritesItsOwnOutputs) {
  ScratchDir s;
  const std::string jit = s / "jit";
  test::write_file(s / "a.fp",
                   "routine a { node x : f32[2] materialized input node o : f32[2] materialized output "
                   "for i in 0..1 { o[i] = add.f32(x[i], x[i]) } }\n");
  test::write_file(s / "b.fp",
                   "routine b { node x : f32[2] materialized input node o : f32[2] materialized output "
                   "for i in 0..1 { o[i] = mul.f32(x[i], x[i]) } }\n");
  std::string out;
  auto run = [&](const std::string& fp, const std::string& dir) {
    return run_tool({"run", s / fp, "--executor", "c", "--seed", "3", "--output-dir", s / dir, "-q"}, jit,
                    out);
  };
  ASSERT_EQ(run("a.fp", "a1"), 0) << out;
  const std::set<std::string> only_a = objects_in(jit);
  ASSERT_EQ(run("b.fp", "b1"), 0) << out;
  std::set<std::string> only_b = objects_in(jit);
  ASSERT_EQ(only_a.size(), 1u);
  only_b.erase(*only_a.begin());
  ASSERT_EQ(only_b.size(), 1u);
  const std::string a_so = *only_a.begin(), b_so = *only_b.begin();
  ASSERT_NE(test::read_file(s / "a1/o.npy"), test::read_file(s / "b1/o.npy"));
  fs::copy_file(b_so, a_so, fs::copy_options::overwrite_existing);
  fs::copy_file(b_so + ".seal", a_so + ".seal", fs::copy_options::overwrite_existing);
  ASSERT_EQ(run("a.fp", "a2"), 0) << out;
  EXPECT_EQ(test::read_file(s / "a2/o.npy"), test::read_file(s / "a1/o.npy"))
      << "run used the planted routine's object";
}

}  // namespace
}  // namespace fp
