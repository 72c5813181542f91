#pragma once
// What a campaign does when an input kills the process or never finishes, as libFuzzer does: the
// input being run is written to <prefix>crash-<target>-<sha256> from the signal handler
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT; with async-signal-safe calls only, to a temporary
// renamed into place), then the signal is raised again with its default action; an input that
// runs longer than the timeout is written to <prefix>timeout-<target>-<sha256> by a watchdog
// thread, which then ends the process with exit 70. The next campaign adopts both kinds of file as
// findings (fuzz/findings.h).
#include <string>

namespace fp::fuzz {

class CrashGuard {
 public:
  // timeout_s <= 0: no watchdog. One guard at a time per process.
  CrashGuard(std::string prefix, std::string target, double timeout_s);
  ~CrashGuard();
  CrashGuard(const CrashGuard&) = delete;
  CrashGuard& operator=(const CrashGuard&) = delete;

  // Around each execution: `input` must stay alive until end().
  void begin(const std::string& input);
  void end();
};

// Exit code of a process ended by the watchdog.
inline constexpr int kTimeoutExitCode = 70;

}  // namespace fp::fuzz
