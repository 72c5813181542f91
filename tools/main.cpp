// flashproof: the command-line program. Each subcommand lives in its own file (tools/cmd_*.cpp)
// and registers itself (tools/command.h).
//
// Nothing leaves main as a crash: a user error is its message and exit code; any other exception
// (an allocation that failed, a library's exception) is reported as an internal error with the
// command to reproduce it, exit 70, never "terminate called ..." and a core dump; an exception that
// escapes a thread goes through the same report (std::set_terminate). A failed write to standard
// output turns a verdict's exit code (0, 1, 2) into 74.
#include <cxxabi.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/diagnostic.h"
#include "core/diagnostic_render.h"
#include "core/support/executable_path.h"
#include "flashproof/version.h"
#include "fuzz/libfuzzer_flags.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/standard_output.h"

namespace {

void report_internal(const std::string& what) {
  std::fprintf(stderr, "flashproof: internal error: %s\nreproduce with: %s\n", what.c_str(),
               fp::cli::command_line().c_str());
  std::fflush(stderr);
}

std::string describe_bad_alloc() {
  return "memory was exhausted (std::bad_alloc): an allocation larger than this machine allows "
         "failed; --max-memory checks a program's buffers against a limit before running it";
}

std::string type_name(const std::type_info& t) {
  int status = 0;
  char* readable = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && readable ? readable : t.name();
  std::free(readable);
  return out;
}

// What an exception is, as one line.
std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    return describe_bad_alloc();
  } catch (const fp::UserError& u) {
    return u.what();
  } catch (const std::exception& x) {
    return fmt::format("{} ({})", x.what(), type_name(typeid(x)));
  } catch (...) {
    return "an exception of unknown type";
  }
}

// Reached when an exception escapes a thread (or a noexcept function).
[[noreturn]] void on_terminate() {
  const std::exception_ptr e = std::current_exception();
  report_internal(e ? "uncaught exception in a thread: " + describe(e) : "std::terminate was called");
  std::_Exit(fp::kExitInternal);
}

// A failed write to standard output turns a verdict's exit code into 74: the report is lost.
int checked_exit(int rc) {
  if (auto lost = fp::cli::standard_output_failure()) {
    std::fprintf(stderr, "flashproof: %s\n", lost->c_str());
    if (rc < fp::kExitUsage) rc = fp::kExitIoError;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(on_terminate);
  fp::cli::set_command_line(argc, argv);
  fp::set_reproduce_command(fp::cli::command_line());
  fp::set_flashproof_executable(fp::running_executable());
  CLI::App app{"flashproof — rewrites loop-level tensor programs and proves each rewrite"};
  app.set_version_flag("--version", std::string("flashproof ") + FLASHPROOF_VERSION);
  app.require_subcommand(1);
  fp::cli::add_registered_commands(app);
  // `fuzz` takes libFuzzer's one-dash flags (-runs=N): respelled for CLI11 (fuzz/libfuzzer_flags.h).
  std::vector<std::string> args = fp::fuzz::respell_libfuzzer_flags(argc, argv);
  std::vector<char*> arg_pointers;
  for (std::string& a : args) arg_pointers.push_back(a.data());
  try {
    app.parse(static_cast<int>(arg_pointers.size()), arg_pointers.data());
  } catch (const CLI::ParseError& e) {
    return checked_exit(fp::cli::report_parse_error(app, e));
  } catch (const fp::UserError& e) {
    fp::print_diagnostic(e);
    return e.code();
  } catch (...) {
    report_internal(describe(std::current_exception()));
    return fp::kExitInternal;
  }
  return checked_exit(fp::cli::exit_code());
}
