// Crash and timeout artifacts of a campaign (crash_guard.h).
#include "fuzz/crash_guard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "fuzz/corpus.h"

namespace fp::fuzz {
namespace {

constexpr std::size_t kPathMax = 4096;
constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// What the handler needs, prepared before each execution (the handler allocates nothing).
struct Current {
  std::atomic<const char*> data{nullptr};
  std::atomic<std::size_t> size{0};
  char crash_path[kPathMax] = {};
  char timeout_path[kPathMax] = {};
  char temporary[kPathMax] = {};
};
Current g_current;
struct sigaction g_previous[sizeof kSignals / sizeof kSignals[0]];

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void say(const char* text) { write_all(2, text, std::strlen(text)); }

// Async-signal-safe: open, write, close, rename.
void save_current(const char* path) {
  const char* data = g_current.data.load();
  if (!data || !path[0]) return;
  const int fd = ::open(g_current.temporary, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  write_all(fd, data, g_current.size.load());
  ::fsync(fd);
  ::close(fd);
  ::rename(g_current.temporary, path);
  say("flashproof fuzz: the input was written to ");
  say(path);
  say("\n");
}

void on_fatal_signal(int sig) {
  say("flashproof fuzz: deadly signal while running an input\n");
  save_current(g_current.crash_path);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

}  // namespace

struct Watchdog {
  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  std::chrono::steady_clock::time_point started;
  bool active = false;
  std::thread thread;
};
namespace {
Watchdog* g_watchdog = nullptr;
std::string g_prefix, g_target;
double g_timeout_s = 0;
}  // namespace

CrashGuard::CrashGuard(std::string prefix, std::string target, double timeout_s) {
  g_prefix = std::move(prefix);
  g_target = std::move(target);
  g_timeout_s = timeout_s;
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK;
  for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) ::sigaction(kSignals[i], &sa, &g_previous[i]);
  if (timeout_s <= 0) return;
  g_watchdog = new Watchdog;
  g_watchdog->thread = std::thread([w = g_watchdog] {
    std::unique_lock lock(w->m);
    while (!w->stop) {
      w->cv.wait_for(lock, std::chrono::milliseconds(100));
      if (!w->active) continue;
      const double ran = std::chrono::duration<double>(std::chrono::steady_clock::now() - w->started).count();
      if (ran <= g_timeout_s) continue;
      std::fprintf(stderr, "flashproof fuzz: an input ran for %.1f s, past -timeout=%g\n", ran, g_timeout_s);
      save_current(g_current.timeout_path);
      std::fflush(stderr);
      std::_Exit(kTimeoutExitCode);
    }
  });
}

CrashGuard::~CrashGuard() {
  for (std::size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
  if (!g_watchdog) return;
  {
    std::lock_guard lock(g_watchdog->m);
    g_watchdog->stop = true;
  }
  g_watchdog->cv.notify_all();
  g_watchdog->thread.join();
  delete g_watchdog;
  g_watchdog = nullptr;
}

void CrashGuard::begin(const std::string& input) {
  const std::string digest = input_digest(input);
  auto fill = [](char* out, const std::string& text) {
    std::snprintf(out, kPathMax, "%s", text.size() < kPathMax ? text.c_str() : "");
  };
  fill(g_current.crash_path, fmt::format("{}crash-{}-{}", g_prefix, g_target, digest));
  fill(g_current.timeout_path, fmt::format("{}timeout-{}-{}", g_prefix, g_target, digest));
  fill(g_current.temporary, fmt::format("{}.crash-{}.tmp", g_prefix, ::getpid()));
  g_current.size = input.size();
  g_current.data = input.data();
  if (g_watchdog) {
    std::lock_guard lock(g_watchdog->m);
    g_watchdog->started = std::chrono::steady_clock::now();
    g_watchdog->active = true;
  }
}

void CrashGuard::end() {
  if (g_watchdog) {
    std::lock_guard lock(g_watchdog->m);
    g_watchdog->active = false;
  }
  g_current.data = nullptr;
}

}  // namespace fp::fuzz
