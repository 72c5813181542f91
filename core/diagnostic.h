#pragma once
// User errors: bad input is reported as a located diagnostic plus an exit code
// (docs/architecture.md, "Exit codes"); internal errors are bugs: reported with the command that
// reproduces them, exit 70 (see FP_INTERNAL_CHECK).

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace fp {

// Exit codes of the command-line program.
enum ExitCode : int {
  kExitOk = 0,
  kExitRefuted = 1,
  kExitUnknown = 2,
  kExitExpectation = 3,  // the CI gate's expectation failed: a decline or nothing applied under
                         // --expect, a regression against --baseline (verify/gate.h)
  kExitUsage = 64,
  kExitMalformed = 65,
  kExitMissingInput = 66,
  kExitUnavailable = 69,  // EX_UNAVAILABLE: this machine cannot do it: the executor asked for cannot
                          // run here (no GPU, no compiler), or the run needs more memory than
                          // --max-memory allows
  kExitInternal = 70,
  kExitCantCreate = 73,  // EX_CANTCREAT: an output file cannot be created
  kExitIoError = 74,     // EX_IOERR: writing, flushing or renaming an output failed
};

// A user-facing error: "file:line:col: expected ...". line/col 0 means "not located in a file"
// (e.g. a routine built in memory); what() is the formatted message.
class UserError : public std::runtime_error {
 public:
  UserError(ExitCode code, std::string file, int line, int col, std::string message);
  ExitCode code() const { return code_; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int col() const { return col_; }
  const std::string& message() const { return message_; }

 private:
  ExitCode code_;
  std::string file_;
  int line_;
  int col_;
  std::string message_;
};

// Malformed input (exit 65) at file:line:col.
[[noreturn]] void throw_malformed(const std::string& file, int line, int col, const std::string& msg);

}  // namespace fp

// An invariant of flashproof itself; failing it is a bug, never a user error.
#define FP_INTERNAL_CHECK(cond, ...)                                                        \
  do {                                                                                      \
    if (!(cond)) ::fp::internal_failure(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)

// A point the code cannot reach (the end of a switch over every enumerator): reports like a failed
// FP_INTERNAL_CHECK. A plain call, so that an unoptimized build also sees the function not return.
#define FP_UNREACHABLE(...) ::fp::internal_failure(__FILE__, __LINE__, "unreachable", fmt::format(__VA_ARGS__))

namespace fp {
// A failed FP_INTERNAL_CHECK (or a reached FP_UNREACHABLE): where, the condition, the message.
struct InternalFailure {
  const char* file = "";
  int line = 0;
  const char* condition = "";
  std::string message;
};

// What a handler that throws throws, for a library user that would rather catch a bug than lose
// the process (and for tests that plant one).
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const InternalFailure& f);
  const InternalFailure& failure() const { return failure_; }

 private:
  InternalFailure failure_;
};

// Called on every internal failure, before the default report. It may throw (throw_internal_error
// is one such handler) or end the process itself; if it returns, the default runs. nullptr (the
// default): none. Returns the handler it replaces. Process-wide; set it before starting threads.
using InternalFailureHandler = void (*)(const InternalFailure&);
InternalFailureHandler set_internal_failure_handler(InternalFailureHandler handler);
// A handler that throws InternalError.
[[noreturn]] void throw_internal_error(const InternalFailure& failure);

// Runs the handler, then prints "flashproof: internal error at FILE:LINE: ..." and the command to
// reproduce it, flushes, and ends the process with exit 70 (_Exit: no destructors, no abort signal,
// no core dump — the state is already known to be broken, and the report is what the user needs).
[[noreturn]] void internal_failure(const char* file, int line, const char* cond, const std::string& msg);
// The command line internal_failure names ("reproduce with: ..."); main() records it at start-up.
void set_reproduce_command(std::string command);
}
