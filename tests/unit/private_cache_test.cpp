// The mechanism both caches share (core/support/private_cache.h, core/support/cache_auth_key.h,
// core/support/private_directory.h): the directory is created 0700 and refused unless private; entries are
// sealed under the per-user key, so an edited entry, one copied under another name or one sealed
// with another key is a miss; a link, FIFO or foreign file at an entry's name is never followed,
// never blocks and is removed; without a safe key the cache is off; stale temporaries are swept
// and the total size stays under the limit, least recently used entries first.

#include "core/support/private_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "cache_test_support.h"
#include "core/diagnostic.h"
#include "core/support/cache_auth_key.h"
#include "core/support/private_directory.h"
#include "core/support/sha256.h"

namespace fp {
namespace {

namespace fs = std::filesystem;
using test::ScopedEnv;
using test::ScratchDir;

constexpr const char* kName = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.bin";
constexpr const char* kOther = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.bin";

CacheSpec spec_at(const std::string& dir, std::uint64_t max_bytes = 1 << 20) {
  return CacheSpec{dir, "test cache", "test", max_bytes, 1 << 20};
}

// The key of the test binary (tests/unit/cache_test_key.cpp), in a scratch place of its own for
// the tests that break keys.
struct OwnKey {
  ScratchDir dir{"flashproof-key-test-"};
  ScopedEnv env{"FLASHPROOF_CACHE_KEY", dir / "keys/cache.key"};
  std::string path() const { return dir / "keys/cache.key"; }
};

std::string refusal(const std::string& dir) {
  try {
    PrivateCache c(spec_at(dir));
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), kExitCantCreate);
    return e.what();
  }
  return "";
}

void set_age(const std::string& path, int seconds) {
  struct timespec t[2];
  t[0].tv_sec = t[1].tv_sec = ::time(nullptr) - seconds;
  t[0].tv_nsec = t[1].tv_nsec = 0;
  ::utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW);
}

TEST(PrivateCache, DirectoryIsCreatedPrivateAtEveryComponent) {
  ScratchDir s;
  const std::string dir = s / "a/b/c";
  PrivateCache c(spec_at(dir));
  for (const char* p : {"a", "a/b", "a/b/c"}) EXPECT_EQ(test::mode_of(s / p), 0700u) << p;
}

TEST(PrivateCache, GroupOrWorldWritableDirectoryIsRefusedWithTheReason) {
  ScratchDir s;
  fs::create_directory(s / "open");
  ::chmod((s / "open").c_str(), 0777);
  std::string msg = refusal(s / "open");
  EXPECT_NE(msg.find("refusing the test cache directory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("writable by others (mode 0777)"), std::string::npos) << msg;
  ::chmod((s / "open").c_str(), 0770);
  msg = refusal(s / "open");
  EXPECT_NE(msg.find("writable by its group"), std::string::npos) << msg;
}

TEST(PrivateCache, SymlinkedDirectoryIsRefused) {
  ScratchDir s;
  fs::create_directory(s / "real");
  ::chmod((s / "real").c_str(), 0700);
  fs::create_directory_symlink(s / "real", s / "link");
  const std::string msg = refusal(s / "link");
  EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
  EXPECT_NE(refusal(s / "link/"), "") << "a trailing slash must not follow the link";
}

TEST(PrivateCache, ForeignOwnedDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user (chown)";
  ScratchDir s;
  fs::create_directory(s / "theirs");
  ::chmod((s / "theirs").c_str(), 0700);
  ASSERT_EQ(::chown((s / "theirs").c_str(), 12345, 12345), 0);
  const std::string msg = refusal(s / "theirs");
  EXPECT_NE(msg.find("owned by uid 12345"), std::string::npos) << msg;
}

TEST(PrivateCache, SealedEntryRoundTripsAndIsPrivate) {
  ScratchDir s;
  PrivateCache c(spec_at(s.path()));
  ASSERT_TRUE(c.enabled());
  EXPECT_FALSE(c.read_sealed(kName));
  c.write_sealed(kName, "payload");
  EXPECT_EQ(c.read_sealed(kName).value_or("miss"), "payload");
  EXPECT_EQ(test::mode_of(c.path_of(kName)), 0600u);
}

TEST(PrivateCache, EditedEntryIsAMiss) {
  ScratchDir s;
  PrivateCache c(spec_at(s.path()));
  c.write_sealed(kName, "verdict: refuted");
  std::string bytes = test::read_file(c.path_of(kName));
  bytes.replace(bytes.find("refuted"), 7, "exact!!");
  test::write_file(c.path_of(kName), bytes);
  EXPECT_FALSE(c.read_sealed(kName));
}

TEST(PrivateCache, EntryCopiedUnderAnotherNameIsAMiss) {
  ScratchDir s;
  PrivateCache c(spec_at(s.path()));
  c.write_sealed(kOther, "another entry's answer");
  fs::copy_file(c.path_of(kOther), c.path_of(kName));
  EXPECT_FALSE(c.read_sealed(kName));
  EXPECT_TRUE(c.read_sealed(kOther));
}

TEST(PrivateCache, EntrySealedWithAnotherKeyIsAMiss) {
  ScratchDir s;
  {
    OwnKey other;
    PrivateCache c(spec_at(s.path()));
    c.write_sealed(kName, "sealed by someone else");
    EXPECT_TRUE(c.read_sealed(kName));
  }
  PrivateCache c(spec_at(s.path()));
  EXPECT_FALSE(c.read_sealed(kName));
}

// Each cache's seals verify in that cache only: a proof cache entry never answers as a JIT object
// of the same name, nor the other way round, though both are sealed under the same key.
TEST(PrivateCache, EntrySealedByAnotherCacheOfTheSameKeyIsAMiss) {
  ScratchDir s;
  PrivateCache jit(CacheSpec{s.path(), "test jit", "jit", 1 << 20, 1 << 20});
  PrivateCache proofs(CacheSpec{s.path(), "test proofs", "proofs", 1 << 20, 1 << 20});
  jit.write_sealed(kName, "an object");
  EXPECT_TRUE(jit.read_sealed(kName));
  EXPECT_FALSE(proofs.read_sealed(kName));
  proofs.write_seal(kOther, "object bytes");
  test::write_file(proofs.path_of(kOther), "object bytes");
  ::chmod(proofs.path_of(kOther).c_str(), 0600);
  EXPECT_TRUE(proofs.open_verified(kOther));
  EXPECT_FALSE(jit.open_verified(kOther));
}

TEST(PrivateCache, SymlinkAtAnEntryIsNotFollowed) {
  ScratchDir s;
  PrivateCache c(spec_at(s.path()));
  c.write_sealed(kOther, "genuine");
  fs::create_symlink(c.path_of(kOther), c.path_of(kName));
  // The link's target is a genuine entry, but not this one: never read through the link.
  EXPECT_FALSE(c.read_sealed(kName));
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(c.path_of(kName)))) << "the link was not removed";
  // Same for the object-and-seal form.
  c.write_seal(kOther, "object bytes");
  test::write_file(c.path_of(kOther), "object bytes");
  EXPECT_TRUE(c.open_verified(kOther));
  fs::create_symlink(c.path_of(kOther), c.path_of(kName));
  fs::create_symlink(c.path_of(std::string(kOther) + ".seal"), c.path_of(std::string(kName) + ".seal"));
  EXPECT_FALSE(c.open_verified(kName));
}

TEST(PrivateCache, FifoAtAnEntryDoesNotBlock) {
  ScratchDir s;
  PrivateCache c(spec_at(s.path()));
  ASSERT_EQ(::mkfifo(c.path_of(kName).c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(c.path_of(std::string(kOther) + ".seal").c_str(), 0600), 0);
  ::alarm(60);  // a read that blocks on the FIFO ends the test instead of hanging it
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(c.read_sealed(kName));
  EXPECT_FALSE(c.open_verified(kOther));
  ::alarm(0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_FALSE(fs::exists(fs::symlink_status(c.path_of(kName)))) << "the FIFO was not removed";
  c.write_sealed(kName, "now a file");
  EXPECT_EQ(c.read_sealed(kName).value_or("miss"), "now a file");
}

TEST(PrivateCache, GroupWritableOrForeignEntryIsAMiss) {
  ScratchDir s;
  PrivateCache c(spec_at(s.path()));
  c.write_sealed(kName, "payload");
  ::chmod(c.path_of(kName).c_str(), 0620);
  EXPECT_FALSE(c.read_sealed(kName));
  if (::geteuid() == 0) {
    c.write_sealed(kName, "payload");
    ASSERT_EQ(::chown(c.path_of(kName).c_str(), 12345, 12345), 0);
    EXPECT_FALSE(c.read_sealed(kName));
  }
}

TEST(PrivateCache, ObjectIsVerifiedAgainstItsSealBeforeUse) {
  ScratchDir s;
  PrivateCache c(spec_at(s.path()));
  c.write_seal(kName, "compiled bytes");
  test::write_file(c.path_of(kName), "compiled bytes");
  ::chmod(c.path_of(kName).c_str(), 0600);
  std::optional<VerifiedFile> f = c.open_verified(kName);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->size(), 14u);
  EXPECT_EQ(read_open_file(f->fd()).value_or(""), "compiled bytes");
  test::write_file(c.path_of(kName), "planted bytes!");
  EXPECT_FALSE(c.open_verified(kName));
  ::unlink(c.path_of(std::string(kName) + ".seal").c_str());
  test::write_file(c.path_of(kName), "compiled bytes");
  EXPECT_FALSE(c.open_verified(kName)) << "an object without its seal was trusted";
}

TEST(PrivateCache, WithoutHomeOrConfigHomeTheCacheIsOff) {
  ScratchDir s;
  ScopedEnv key("FLASHPROOF_CACHE_KEY", std::nullopt), home("HOME", std::nullopt),
      config("XDG_CONFIG_HOME", std::nullopt);
  EXPECT_EQ(cache_auth_key_path(), "");
  PrivateCache c(spec_at(s.path()));
  EXPECT_FALSE(c.enabled());
  c.write_sealed(kName, "payload");
  EXPECT_FALSE(c.read_sealed(kName));
  EXPECT_TRUE(fs::is_empty(s.path())) << "a cache without a key wrote something";
}

TEST(PrivateCache, KeyIsCreatedPrivateAndKeptOutsideTheCache) {
  ScratchDir s;
  ScopedEnv key("FLASHPROOF_CACHE_KEY", std::nullopt), config("XDG_CONFIG_HOME", s / "config");
  EXPECT_EQ(cache_auth_key_path(), s / "config/flashproof/cache.key");
  const CacheAuthKey k = load_cache_auth_key();
  ASSERT_TRUE(k.available()) << k.problem;
  EXPECT_EQ(k.bytes.size(), kCacheAuthKeyBytes);
  EXPECT_EQ(test::mode_of(k.path), 0600u);
  EXPECT_EQ(test::mode_of(s / "config/flashproof"), 0700u);
  EXPECT_EQ(load_cache_auth_key().bytes, k.bytes) << "the key changed between loads";
  ScopedEnv home("HOME", s / "home"), no_config("XDG_CONFIG_HOME", std::nullopt);
  EXPECT_EQ(cache_auth_key_path(), s / "home/.config/flashproof/cache.key");
  ScopedEnv relative("HOME", std::string("relative/home"));
  EXPECT_EQ(cache_auth_key_path(), "") << "a relative HOME puts the key in the working directory";
}

TEST(PrivateCache, RelativeKeyPathIsRefusedNotCreatedHere) {
  ScratchDir s;
  const fs::path before = fs::current_path();
  fs::current_path(s.path());
  ScopedEnv secret("FLASHPROOF_CACHE_SECRET", std::nullopt), key("FLASHPROOF_CACHE_KEY", std::string("keys/cache.key"));
  const CacheAuthKey k = load_cache_auth_key();
  fs::current_path(before);
  EXPECT_FALSE(k.available());
  EXPECT_NE(k.problem.find("must be absolute"), std::string::npos) << k.problem;
  EXPECT_TRUE(fs::is_empty(s.path())) << "a relative key path created a key in the working directory";
}

TEST(PrivateCache, UnsafeKeyTurnsTheCacheOff) {
  OwnKey own;
  ASSERT_TRUE(load_cache_auth_key().available());
  ::chmod(own.path().c_str(), 0644);
  CacheAuthKey k = load_cache_auth_key();
  EXPECT_FALSE(k.available());
  EXPECT_NE(k.problem.find("mode 0644"), std::string::npos) << k.problem;
  ::chmod(own.path().c_str(), 0600);
  ::chmod((own.dir / "keys").c_str(), 0777);
  k = load_cache_auth_key();
  EXPECT_FALSE(k.available());
  EXPECT_NE(k.problem.find("writable by others"), std::string::npos) << k.problem;
  ::chmod((own.dir / "keys").c_str(), 0700);
  ASSERT_TRUE(load_cache_auth_key().available());
  // A key that is a link to a file of the right shape is still refused.
  fs::rename(own.path(), own.dir / "keys/real.key");
  fs::create_symlink(own.dir / "keys/real.key", own.path());
  k = load_cache_auth_key();
  EXPECT_FALSE(k.available());
  EXPECT_NE(k.problem.find("symbolic link"), std::string::npos) << k.problem;
  ScratchDir cache;
  PrivateCache c(spec_at(cache.path()));
  EXPECT_FALSE(c.enabled());
  if (::geteuid() == 0) {
    fs::remove(own.path());
    fs::rename(own.dir / "keys/real.key", own.path());
    ASSERT_TRUE(load_cache_auth_key().available());
    ASSERT_EQ(::chown(own.path().c_str(), 12345, 12345), 0);
    k = load_cache_auth_key();
    EXPECT_NE(k.problem.find("owned by uid 12345"), std::string::npos) << k.problem;
  }
}

// FLASHPROOF_CACHE_SECRET (a CI secret, held as contents): the key is derived from it, wins over
// FLASHPROOF_CACHE_KEY, is never written to disk, and a short secret turns the caches off.
constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
constexpr const char* kOtherSecret = "fedcba9876543210fedcba9876543210";

TEST(PrivateCache, SecretGivesAKeyDerivedFromItAndNothingOnDisk) {
  ScratchDir s;
  ScopedEnv file("FLASHPROOF_CACHE_KEY", s / "keys/cache.key"), secret("FLASHPROOF_CACHE_SECRET", kSecret);
  const CacheAuthKey k = load_cache_auth_key();
  ASSERT_TRUE(k.available()) << k.problem;
  EXPECT_EQ(k.bytes.size(), kCacheAuthKeyBytes);
  EXPECT_EQ(k.path, "$FLASHPROOF_CACHE_SECRET");
  EXPECT_EQ(k.problem, "");
  EXPECT_FALSE(k.absent);
  EXPECT_EQ(load_cache_auth_key(false).bytes, k.bytes) << "equal secrets gave different keys";
  const Sha256Digest bare = sha256(kSecret);
  EXPECT_NE(k.bytes, std::string(reinterpret_cast<const char*>(bare.data()), bare.size()))
      << "the key is the secret's SHA-256 without the domain-separation prefix";
  EXPECT_FALSE(fs::exists(fs::symlink_status(s / "keys"))) << "the key file (or its directory) was created";
  EXPECT_EQ(cache_auth_key_path(), s / "keys/cache.key") << "the key file's path is still the file's";
  ScopedEnv other("FLASHPROOF_CACHE_SECRET", kOtherSecret);
  const CacheAuthKey o = load_cache_auth_key();
  ASSERT_TRUE(o.available()) << o.problem;
  EXPECT_NE(o.bytes, k.bytes) << "different secrets gave the same key";
}

TEST(PrivateCache, SecretWinsOverTheKeyFile) {
  OwnKey own;
  const CacheAuthKey from_file = load_cache_auth_key();
  ASSERT_TRUE(from_file.available()) << from_file.problem;
  EXPECT_EQ(from_file.path, own.path());
  ScopedEnv secret("FLASHPROOF_CACHE_SECRET", kSecret);
  const CacheAuthKey k = load_cache_auth_key();
  ASSERT_TRUE(k.available()) << k.problem;
  EXPECT_EQ(k.path, "$FLASHPROOF_CACHE_SECRET");
  EXPECT_NE(k.bytes, from_file.bytes);
  {
    ScopedEnv empty("FLASHPROOF_CACHE_SECRET", std::string());
    EXPECT_EQ(load_cache_auth_key().bytes, from_file.bytes) << "an empty secret is not a source";
  }
}

TEST(PrivateCache, ShortSecretTurnsTheCacheOff) {
  ScratchDir s, keys;
  ScopedEnv file("FLASHPROOF_CACHE_KEY", keys / "keys/cache.key"),
      secret("FLASHPROOF_CACHE_SECRET", std::string(15, 'x'));
  const CacheAuthKey k = load_cache_auth_key();
  EXPECT_FALSE(k.available());
  EXPECT_FALSE(k.absent);
  EXPECT_EQ(k.path, "$FLASHPROOF_CACHE_SECRET");
  EXPECT_NE(k.problem.find("FLASHPROOF_CACHE_SECRET holds 15 bytes; at least 16 are needed"),
            std::string::npos)
      << k.problem;
  EXPECT_FALSE(fs::exists(fs::symlink_status(keys / "keys"))) << "a short secret fell back to the key file";
  PrivateCache c(spec_at(s.path()));
  EXPECT_FALSE(c.enabled());
  c.write_sealed(kName, "payload");
  EXPECT_FALSE(c.read_sealed(kName));
  EXPECT_TRUE(fs::is_empty(s.path())) << "a cache without a key wrote something";
  ScopedEnv sixteen("FLASHPROOF_CACHE_SECRET", std::string(16, 'x'));
  EXPECT_TRUE(load_cache_auth_key().available()) << "a 16-byte secret was refused";
}

TEST(PrivateCache, EntrySealedUnderAnotherSecretIsAMiss) {
  ScratchDir s;
  {
    ScopedEnv secret("FLASHPROOF_CACHE_SECRET", kSecret);
    PrivateCache c(spec_at(s.path()));
    ASSERT_TRUE(c.enabled());
    c.write_sealed(kName, "sealed under one secret");
    EXPECT_TRUE(c.read_sealed(kName));
  }
  {
    ScopedEnv secret("FLASHPROOF_CACHE_SECRET", kSecret);
    PrivateCache c(spec_at(s.path()));
    EXPECT_EQ(c.read_sealed(kName).value_or("miss"), "sealed under one secret")
        << "the same secret in another run did not trust its own entry";
  }
  {
    ScopedEnv secret("FLASHPROOF_CACHE_SECRET", kOtherSecret);
    PrivateCache c(spec_at(s.path()));
    ASSERT_TRUE(c.enabled());
    EXPECT_FALSE(c.read_sealed(kName));
  }
}

TEST(PrivateCache, StaleTemporariesAreRemoved) {
  ScratchDir s;
  const std::string old_tmp = s / ".tmp-0123-killed.so", fresh_tmp = s / ".tmp-0123-running.so";
  const std::string old_atomic = s / "ab/.cdef.json.tmp-77-00ff";
  const std::string foreign = s / "notes.txt";
  fs::create_directory(s / "ab");
  ::chmod((s / "ab").c_str(), 0700);
  for (const auto& p : {old_tmp, fresh_tmp, old_atomic, foreign}) test::write_file(p, "x");
  set_age(old_tmp, 2 * kStaleTemporarySeconds);
  set_age(old_atomic, 2 * kStaleTemporarySeconds);
  set_age(foreign, 2 * kStaleTemporarySeconds);
  PrivateCache c(spec_at(s.path()));  // the first open in this process sweeps
  EXPECT_FALSE(fs::exists(old_tmp));
  EXPECT_FALSE(fs::exists(old_atomic));
  EXPECT_TRUE(fs::exists(fresh_tmp)) << "a running compile's temporary was removed";
  EXPECT_TRUE(fs::exists(foreign)) << "a file that is not the cache's was removed";
}

TEST(PrivateCache, EvictionKeepsTheTotalUnderTheLimitLeastRecentlyUsedFirst) {
  ScratchDir s;
  const std::uint64_t limit = 16 * 1024;
  PrivateCache c(spec_at(s.path(), limit));
  const std::string kilobyte(1000, 'x');
  auto name = [](int i) { return fmt::format("{:064x}.bin", i + 1); };
  for (int i = 0; i < 10; ++i) {
    c.write_sealed(name(i), kilobyte);
    set_age(c.path_of(name(i)), 1000 - i);  // older first
  }
  ASSERT_TRUE(c.read_sealed(name(0)));  // the oldest is used again: now the most recent of the ten
  // Six more take the total (16 entries of ~1.2 KB) over the limit: the least recently used go.
  for (int i = 10; i < 16; ++i) c.write_sealed(name(i), kilobyte);
  EXPECT_LE(measure_cache(s.path()).bytes, limit);
  EXPECT_TRUE(c.read_sealed(name(0))) << "the recently used entry was evicted";
  EXPECT_FALSE(c.read_sealed(name(1))) << "the least recently used entry survived";
  for (int i = 16; i < 60; ++i) c.write_sealed(name(i), kilobyte);
  const CacheUsage u = measure_cache(s.path());
  EXPECT_LE(u.bytes, limit);
  EXPECT_GT(u.entries, 5u);
}

TEST(PrivateCache, CleanRemovesEntriesAndStaleTemporariesOnly) {
  ScratchDir s;
  PrivateCache c(spec_at(s.path()));
  c.write_sealed(kName, "a");
  c.write_seal(kOther, "b");
  test::write_file(s / ".tmp-old", "x");
  set_age(s / ".tmp-old", 2 * kStaleTemporarySeconds);
  test::write_file(s / "keep.txt", "mine");
  const CacheUsage removed = clean_cache(s.path(), "test cache");
  EXPECT_EQ(removed.entries, 2u);
  EXPECT_EQ(removed.temporaries, 1u);
  EXPECT_EQ(measure_cache(s.path()).entries, 0u);
  EXPECT_TRUE(fs::exists(s / "keep.txt"));
  ::chmod(s.path().c_str(), 0777);
  EXPECT_THROW(clean_cache(s.path(), "test cache"), UserError);
  ::chmod(s.path().c_str(), 0700);
}

TEST(PrivateCache, SizeLimitFromTheEnvironment) {
  {
    ScopedEnv e("FP_TEST_LIMIT", std::nullopt);
    EXPECT_EQ(cache_size_limit("FP_TEST_LIMIT", 7), 7u);
  }
  for (const auto& [text, bytes] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"1000", 1000}, {"4K", 4096}, {"512M", 512ull << 20}, {"2GiB", 2ull << 30}, {"1t", 1ull << 40}}) {
    ScopedEnv e("FP_TEST_LIMIT", text);
    EXPECT_EQ(cache_size_limit("FP_TEST_LIMIT", 7), bytes) << text;
  }
  for (const char* bad : {"0", "-1", "1.5G", "lots", "12Q", "99999999999999999999"}) {
    ScopedEnv e("FP_TEST_LIMIT", std::string(bad));
    EXPECT_THROW(cache_size_limit("FP_TEST_LIMIT", 7), UserError) << bad;
  }
}

}  // namespace
}  // namespace fp
