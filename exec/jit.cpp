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
#include "exec/executor.h"

extern char** environ;

namespace fp {

namespace {

// ---- SHA-256 --------------------------------------------------------------------------------------

constexpr std::array<std::uint32_t, 64> kK = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t rotr(std::uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

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

std::string sha256_hex(const std::string& data) {
  std::uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::string msg = data;
  const std::uint64_t bit_len = static_cast<std::uint64_t>(data.size()) * 8;
  msg += static_cast<char>(0x80);
  while (msg.size() % 64 != 56) msg += '\0';
  for (int i = 7; i >= 0; --i) msg += static_cast<char>((bit_len >> (8 * i)) & 0xff);
  for (std::size_t chunk = 0; chunk < msg.size(); chunk += 64) {
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + chunk + 4 * i);
      w[i] = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
    }
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = hh + s1 + ch + kK[static_cast<std::size_t>(i)] + w[i];
      const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const std::uint32_t t2 = s0 + maj;
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  std::string hex;
  for (std::uint32_t v : h) hex += fmt::format("{:08x}", v);
  return hex;
}

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
