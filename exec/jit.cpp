// The C JIT (exec/jit.h): content-hashed, sealed object cache; compiler via posix_spawnp; dlopen
// through the verified descriptor.

#include "exec/jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>

#include "core/diagnostic.h"
#include "core/support/atomic_file.h"
#include "core/support/private_directory.h"
#include "core/support/sha256.h"
#include "exec/executor.h"

extern char** environ;

namespace fp {

namespace {

// The host CPU's model and feature flags (what -march=native compiles for).
const std::string& cpu_identity() {
  static const std::string id = [] {
    std::ifstream f("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(f, line)) {
      if (model.empty() && line.rfind("model name", 0) == 0) model = line;
      if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0)) flags = line;
      if (!model.empty() && !flags.empty()) break;
    }
    return model + "\n" + flags;
  }();
  return id;
}

// `cc --version`, memoized per compiler.
std::string compiler_version(const std::string& cc) {
  static std::mutex mu;
  static std::map<std::string, std::string> memo;
  std::lock_guard<std::mutex> lock(mu);
  auto it = memo.find(cc);
  if (it != memo.end()) return it->second;
  std::string out;
  const int rc = run_program({cc, "--version"}, out);
  if (rc != 0)
    throw ExecError(fmt::format("cannot run the C compiler '{}' (set FLASHPROOF_CC to a C compiler): {}", cc,
                                rc < 0 ? std::string("not found") : out));
  return memo[cc] = out;
}

std::string unique_suffix() {
  static std::mutex mu;
  static std::mt19937_64 rng(
      std::random_device{}() ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::lock_guard<std::mutex> lock(mu);
  return fmt::format("{}-{:016x}", getpid(), rng());
}

// A shared object larger than this is not one flashproof generated: never read from the cache.
constexpr std::uint64_t kMaxObjectBytes = std::uint64_t{1} << 30;

// ---- this process's private directory ---------------------------------------------------------

// Set when a failed compile's source was kept there for the user to read.
std::atomic<bool> g_keep_process_dir{false};

const std::string& process_dir();

void remove_process_dir() {
  std::error_code ec;
  if (!g_keep_process_dir) std::filesystem::remove_all(process_dir(), ec);
}

// Where to compile when no cache may be written, and the cache itself when there is no HOME and
// no XDG_CACHE_HOME: a fresh mkdtemp directory, so nobody can create it first. Never destroyed
// (the exit handler that removes it needs the name after static destructors ran).
const std::string& process_dir() {
  static const std::string* dir = [] {
    auto* d = new std::string(make_fresh_private_directory("flashproof-jit-"));
    std::atexit(remove_process_dir);
    return d;
  }();
  return *dir;
}

// ---- compiling ---------------------------------------------------------------------------------

// A fresh object: its temporaries in the directory it was compiled in, and its bytes, read
// through `fd`, which stays open so they can be loaded as they were read.
struct CompiledObject {
  std::string src, so;
  int fd = -1;
  std::string bytes;
};

[[noreturn]] void compile_failed(const JitOptions& opts, const std::vector<std::string>& argv, int rc,
                                 const std::string& kept, const std::string& out) {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  const std::string msg =
      fmt::format("compiling generated C failed (exit {}): {}\n  source: {}\n{}", rc, cmd, kept, out);
  if (opts.flags_from_user || rc < 0 || rc == 127) throw ExecError(msg);
  internal_failure(__FILE__, __LINE__, "generated C compiles", msg);
}

CompiledObject compile_object(const std::string& source, const JitOptions& opts, const std::string& dir,
                              const std::string& key) {
  CompiledObject obj;
  const std::string tag = unique_suffix();
  obj.src = fmt::format("{}/.tmp-{}-{}.c", dir, key, tag);
  obj.so = fmt::format("{}/.tmp-{}-{}.so", dir, key, tag);
  write_file_atomically(obj.src, source, 0600);
  std::vector<std::string> argv{opts.cc, "-x", "c"};
  for (auto& f : split_flags(opts.flags)) argv.push_back(std::move(f));
  argv.insert(argv.end(), {"-o", obj.so, obj.src, "-lm"});
  std::string out;
  const int rc = run_program(argv, out);
  if (rc != 0) {
    std::remove(obj.so.c_str());
    const std::string kept = dir + "/" + key + ".c";
    std::rename(obj.src.c_str(), kept.c_str());
    if (dir == process_dir()) g_keep_process_dir = true;
    compile_failed(opts, argv, rc, kept, out);
  }
  obj.fd = ::open(obj.so.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  std::optional<std::string> bytes = obj.fd >= 0 ? read_open_file(obj.fd) : std::nullopt;
  if (!bytes) {
    if (obj.fd >= 0) ::close(obj.fd);
    std::remove(obj.so.c_str());
    std::remove(obj.src.c_str());
    throw ExecError(fmt::format("the C compiler '{}' exited 0 but '{}' cannot be read", opts.cc, obj.so));
  }
  obj.bytes = std::move(*bytes);
  return obj;
}

// ---- loading -----------------------------------------------------------------------------------

std::string proc_fd_path(int fd) {
  return fmt::format("/proc/self/fd/{}", fd);
}

// Objects this process loaded, by file identity: one loaded file is one SharedObject, loaded under
// one descriptor's name (the loader would otherwise add a second name to the same object).
std::mutex g_loaded_mutex;
std::map<std::pair<dev_t, ino_t>, std::weak_ptr<SharedObject>> g_loaded;

// Loads the file `f` (whose bytes were verified, or just compiled, through this descriptor) by its
// descriptor, never by a name that could meanwhile point elsewhere. nullptr with `error` set when
// the loader refuses it.
std::shared_ptr<SharedObject> load_verified(VerifiedFile f, const std::string& shown, std::string& error) {
  struct stat st {};
  if (::fstat(f.fd(), &st) != 0) {
    error = std::strerror(errno);
    return nullptr;
  }
  const auto id = std::make_pair(st.st_dev, st.st_ino);
  std::lock_guard<std::mutex> lock(g_loaded_mutex);
  if (auto it = g_loaded.find(id); it != g_loaded.end())
    if (std::shared_ptr<SharedObject> live = it->second.lock()) return live;
  void* h = dlopen(proc_fd_path(f.fd()).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    error = e ? e : "unknown error";
    return nullptr;
  }
  // The OpenMP runtime the object pulled in keeps worker threads parked inside it: unloading it
  // with the last object would pull the code from under them. Pin it for the process's lifetime.
  for (const char* rt : {"libgomp.so.1", "libomp.so", "libomp.so.5"})
    dlopen(rt, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  auto obj = std::make_shared<SharedObject>(h, shown, f.release());
  std::erase_if(g_loaded, [](const auto& kv) { return kv.second.expired(); });
  g_loaded[id] = obj;
  return obj;
}

}  // namespace

std::vector<std::string> split_flags(const std::string& flags) {
  std::vector<std::string> out;
  std::istringstream ss(flags);
  std::string f;
  while (ss >> f) out.push_back(f);
  return out;
}

std::string default_c_flags() {
  return "-O3 -march=native -mprefer-vector-width=512 -ffp-contract=off -fno-fast-math -fno-math-errno -fopenmp -fPIC "
         "-shared";
}

std::string configured_cache_dir() {
  if (const char* d = std::getenv("FLASHPROOF_JIT_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/')
    return std::string(x) + "/flashproof/jit";
  if (const char* h = std::getenv("HOME"); h && h[0] == '/') return std::string(h) + "/.cache/flashproof/jit";
  return "";
}

std::string default_cache_dir() {
  std::string dir = configured_cache_dir();
  return dir.empty() ? process_dir() : dir;
}

std::uint64_t jit_cache_limit() {
  return cache_size_limit("FLASHPROOF_JIT_CACHE_MAX", kDefaultJitCacheBytes);
}

CacheSpec jit_cache_spec(const std::string& dir) {
  CacheSpec spec;
  spec.dir = dir;
  spec.what = "JIT cache";
  spec.tag = "jit";
  spec.max_bytes = jit_cache_limit();
  spec.max_entry_bytes = std::min<std::uint64_t>(spec.max_bytes, kMaxObjectBytes);
  return spec;
}

int run_program(const std::vector<std::string>& argv, std::string& output) {
  output.clear();
  char tmpl[] = "/tmp/flashproof-run-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return -1;
  unlink(tmpl);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, 1);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    close(fd);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      close(fd);
      return -1;
    }
  }
  lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) output.append(buf, static_cast<std::size_t>(n));
  close(fd);
  if (WIFEXITED(status)) {
    // posix_spawnp reports a missing program as exit status 127 from the child.
    return WEXITSTATUS(status);
  }
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

SharedObject::~SharedObject() {
  if (handle_) dlclose(handle_);
  if (fd_ < 0) return;
  // Still resident (pinned by the loader): keep the descriptor, so its name never comes to mean
  // another file while the loader still answers to it.
  if (void* still = dlopen(proc_fd_path(fd_).c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(still);
    return;
  }
  close(fd_);
}

std::string SharedObject::bytes() const {
  std::string out;
  char buf[1 << 16];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd_, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw ExecError(fmt::format("reading the compiled object '{}': {}", path_, std::strerror(errno)));
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
  return out;
}

void* SharedObject::symbol(const char* name) const {
  return dlsym(handle_, name);
}

JitResult jit_compile_c(const std::string& source, const JitOptions& opts) {
  JitResult res;
  const std::string version = compiler_version(opts.cc);
  const std::string key_text = "flashproof-jit-v1\n" + opts.cc + "\n" + version + "\n" + opts.flags + "\n" +
                               cpu_identity() + "\n" + source;
  res.key = sha256_hex(key_text);
  std::optional<PrivateCache> cache;
  if (opts.use_cache)
    cache.emplace(jit_cache_spec(opts.cache_dir.empty() ? default_cache_dir() : opts.cache_dir));
  const bool cached = cache && cache->enabled();
  const std::string name = res.key + ".so";
  if (cached) {
    if (std::optional<VerifiedFile> f = cache->open_verified(name)) {
      std::string error;
      if ((res.object = load_verified(std::move(*f), cache->path_of(name), error))) {
        res.cache_hit = true;
        return res;
      }
      // Bytes we compiled that the loader now rejects (the system changed under them): compile again.
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = cached ? cache->spec().dir : process_dir();
  CompiledObject obj = compile_object(source, opts, dir, res.key);
  if (cached) {
    // The seal first: a reader that sees the new object before its seal sees a mismatch and
    // compiles again; it never loads unsealed bytes.
    cache->write_seal(name, obj.bytes);
    if (std::rename(obj.so.c_str(), cache->path_of(name).c_str()) == 0) {
      std::rename(obj.src.c_str(), cache->path_of(res.key + ".c").c_str());
      cache->account(obj.bytes.size() + source.size());
    } else {
      std::remove(obj.so.c_str());
      std::remove(obj.src.c_str());
    }
  } else {
    std::remove(obj.so.c_str());
    std::remove(obj.src.c_str());
  }
  res.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string error;
  const std::string shown = cached ? cache->path_of(name) : obj.so;
  res.object = load_verified(VerifiedFile(obj.fd, obj.bytes.size()), shown, error);
  if (!res.object) throw ExecError(fmt::format("dlopen '{}' failed: {}", shown, error));
  return res;
}

}  // namespace fp
