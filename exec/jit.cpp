// The C JIT (exec/jit.h): content-hashed object cache, compiler via posix_spawnp, dlopen.

#include "exec/jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include "core/diagnostic.h"
#include "core/sha256.h"
#include "exec/executor.h"

extern char** environ;

namespace fp {

namespace {

// ---- SHA-256 --------------------------------------------------------------------------------------


// ---- files ------------------------------------------------------------------------------------

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

}  // namespace


std::vector<std::string> split_flags(const std::string& flags) {
  std::vector<std::string> out;
  std::istringstream ss(flags);
  std::string f;
  while (ss >> f) out.push_back(f);
  return out;
}

std::string default_c_flags() {
  return "-O3 -march=native -ffp-contract=off -fno-fast-math -fno-math-errno -fopenmp -fPIC -shared";
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("FLASHPROOF_JIT_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/flashproof/jit";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/flashproof/jit";
  return fmt::format("/tmp/flashproof-jit-{}", getuid());
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
}

void* SharedObject::symbol(const char* name) const {
  return dlsym(handle_, name);
}

JitResult jit_compile_c(const std::string& source, const JitOptions& opts) {
  namespace fs = std::filesystem;
  JitResult res;
  const std::string version = compiler_version(opts.cc);
  const std::vector<std::string> flags = split_flags(opts.flags);
  std::string key_text = "flashproof-jit-v1\n" + opts.cc + "\n" + version + "\n" + opts.flags + "\n" +
                         cpu_identity() + "\n" + source;
  res.key = sha256_hex(key_text);
  const std::string dir = opts.cache_dir.empty() ? default_cache_dir() : opts.cache_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ExecError(fmt::format("cannot create the JIT cache directory '{}': {}", dir, ec.message()));
  const std::string so = dir + "/" + res.key + ".so";
  const std::string src = dir + "/" + res.key + ".c";
  if (!opts.use_cache || !fs::exists(so)) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string tag = unique_suffix();
    const std::string tmp_src = src + ".tmp-" + tag + ".c";
    const std::string tmp_so = so + ".tmp-" + tag;
    {
      std::ofstream f(tmp_src, std::ios::binary);
      f << source;
      if (!f) throw ExecError(fmt::format("cannot write '{}'", tmp_src));
    }
    std::vector<std::string> argv{opts.cc, "-x", "c"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-o", tmp_so, tmp_src, "-lm"});
    std::string out;
    const int rc = run_program(argv, out);
    if (rc != 0) {
      std::string cmd;
      for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
      fs::rename(tmp_src, src, ec);
      fs::remove(tmp_so, ec);
      std::string msg =
          fmt::format("compiling generated C failed (exit {}): {}\n  source: {}\n{}", rc, cmd, src, out);
      if (opts.flags_from_user || rc < 0 || rc == 127) throw ExecError(msg);
      internal_failure(__FILE__, __LINE__, "generated C compiles", msg);
    }
    fs::rename(tmp_src, src, ec);
    fs::rename(tmp_so, so, ec);  // atomic: a concurrent compile of the same key wrote the same bytes
    if (ec) throw ExecError(fmt::format("cannot store '{}' in the JIT cache: {}", so, ec.message()));
    res.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } else {
    res.cache_hit = true;
  }
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw ExecError(fmt::format("dlopen '{}' failed: {}", so, dlerror()));
  // The OpenMP runtime the object pulled in keeps worker threads parked inside it: unloading it
  // with the last object would pull the code from under them. Pin it for the process's lifetime.
  for (const char* rt : {"libgomp.so.1", "libomp.so", "libomp.so.5"})
    dlopen(rt, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  res.object = std::make_shared<SharedObject>(h, so);
  return res;
}

}  // namespace fp
