#pragma once
// User errors: bad input is reported as a located diagnostic plus an exit code (ARCHITECTURE.md);
// internal errors are bugs and abort (see FP_INTERNAL_CHECK).

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace fp {

// Exit codes of the command-line program.
enum ExitCode : int {
  kExitOk = 0,
  kExitRefuted = 1,
  kExitUnknown = 2,
  kExitUsage = 64,
  kExitMalformed = 65,
  kExitMissingInput = 66,
  kExitUnavailable = 69,  // EX_UNAVAILABLE: the executor asked for cannot run here (no GPU, no compiler)
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

namespace fp {
[[noreturn]] void internal_failure(const char* file, int line, const char* cond, const std::string& msg);
}
