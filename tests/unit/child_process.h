#pragma once
// Test helper: runs the flashproof binary (or a function) in a child process under resource
// limits, the way a full disk or a small machine would constrain it, and collects its exit status
// and output. RLIMIT_FSIZE with SIGXFSZ ignored makes every write past the limit fail with EFBIG
// (no root, no special file system needed); RLIMIT_AS makes a big allocation fail.

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fp::testing {

struct ChildLimits {
  std::optional<rlim_t> file_size;      // RLIMIT_FSIZE, bytes
  std::optional<rlim_t> address_space;  // RLIMIT_AS, bytes
  std::string stdout_path;              // standard output goes here instead of the pipe
};

struct ChildResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string output;  // standard error, and standard output unless redirected
  // "exit N signal S" and the output, for assertion messages.
  std::string text() const {
    return "exit " + std::to_string(exit_code) + " signal " + std::to_string(signal) + "\n" + output;
  }
};

inline void apply_limits(const ChildLimits& l) {
  ::signal(SIGXFSZ, SIG_IGN);
  if (l.file_size) {
    rlimit r{*l.file_size, *l.file_size};
    ::setrlimit(RLIMIT_FSIZE, &r);
  }
  if (l.address_space) {
    rlimit r{*l.address_space, *l.address_space};
    ::setrlimit(RLIMIT_AS, &r);
  }
}

// Runs body() in a forked child (limits applied, output piped) and returns its exit code.
inline ChildResult run_in_child(const std::function<int()>& body, const ChildLimits& limits = {}) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    int out = fds[1];
    if (!limits.stdout_path.empty())
      out = ::open(limits.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    apply_limits(limits);
    const int rc = body();
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(rc);
  }
  ::close(fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

// Replaces the process with FLASHPROOF_BINARY `args` (for a child); returns only on failure.
inline int exec_flashproof(const std::vector<std::string>& args) {
  std::vector<std::string> argv{FLASHPROOF_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  ::execv(FLASHPROOF_BINARY, cargv.data());
  std::perror("execv");
  return 127;
}

// Runs FLASHPROOF_BINARY with `args` in a child under `limits`, with `env` added to its environment.
inline ChildResult run_flashproof(const std::vector<std::string>& args, const ChildLimits& limits = {},
                                  const std::vector<std::pair<std::string, std::string>>& env = {}) {
  return run_in_child(
      [&] {
        for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
        return exec_flashproof(args);
      },
      limits);
}

}  // namespace fp::testing
