#include "core/diagnostic.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace fp {

namespace {
std::string locate(const std::string& file, int line, int col, const std::string& message) {
  if (file.empty() && line == 0) return message;
  if (line == 0) return fmt::format("{}: {}", file, message);
  return fmt::format("{}:{}:{}: {}", file.empty() ? "<input>" : file, line, col, message);
}
}  // namespace

UserError::UserError(ExitCode code, std::string file, int line, int col, std::string message)
    : std::runtime_error(locate(file, line, col, message)),
      code_(code),
      file_(std::move(file)),
      line_(line),
      col_(col),
      message_(std::move(message)) {}

void throw_malformed(const std::string& file, int line, int col, const std::string& msg) {
  throw UserError(kExitMalformed, file, line, col, msg);
}

namespace {
std::string& reproduce_command() {
  static std::string command;
  return command;
}
}  // namespace

void set_reproduce_command(std::string command) {
  reproduce_command() = std::move(command);
}

InternalError::InternalError(const InternalFailure& f)
    : std::logic_error(fmt::format("internal error at {}:{}: {} ({})", f.file, f.line, f.message, f.condition)),
      failure_(f) {}

namespace {
std::atomic<InternalFailureHandler>& failure_handler() {
  static std::atomic<InternalFailureHandler> handler{nullptr};
  return handler;
}
}  // namespace

InternalFailureHandler set_internal_failure_handler(InternalFailureHandler handler) {
  return failure_handler().exchange(handler);
}

void throw_internal_error(const InternalFailure& failure) {
  throw InternalError(failure);
}

void internal_failure(const char* file, int line, const char* cond, const std::string& msg) {
  if (InternalFailureHandler handler = failure_handler().load()) handler(InternalFailure{file, line, cond, msg});
  // Standard output is left unflushed on purpose: half a report must not pass for a whole one.
  std::fprintf(stderr,
               "flashproof: internal error at %s:%d: %s (%s)\n"
               "This is a bug in flashproof; please report it with the command that produced it.\n",
               file, line, msg.c_str(), cond);
  if (!reproduce_command().empty()) std::fprintf(stderr, "reproduce with: %s\n", reproduce_command().c_str());
  std::fflush(stderr);
  std::_Exit(kExitInternal);
}

}  // namespace fp
