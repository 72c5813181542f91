#include "verify/smt/z3_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/support/atomic_file.h"
#include "core/support/deadline.h"

namespace fp::verify::smt {

const char* smt_status_name(SmtStatus s) {
  switch (s) {
    case SmtStatus::Unsat:
      return "unsat";
    case SmtStatus::Sat:
      return "sat";
    case SmtStatus::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::string solver_version() {
  unsigned major = 0, minor = 0, build = 0, rev = 0;
  Z3_get_version(&major, &minor, &build, &rev);
  return fmt::format("{}.{}.{}.{}", major, minor, build, rev);
}

std::string solver_full_version() {
  return Z3_get_full_version();
}

namespace detail {

void apply_limits(z3::context& c, z3::solver& s, const SmtLimits& limits) {
  z3::params p(c);
  // Z3 takes it as unsigned: clamp instead of wrapping. The wall-clock backstop is not Z3's
  // `timeout` parameter: its scoped_timer thread pool can deadlock when a timer expires (Z3
  // 4.8.10 to 4.8.12, Z3Prover/z3#5371, #5990) — run_check interrupts the context instead.
  p.set("rlimit", static_cast<unsigned>(std::min<std::uint64_t>(limits.rlimit, 4'000'000'000ull)));
  s.set(p);
}

SmtOutcome run_check(z3::solver& s, const SmtLimits& limits) {
  if (!limits.dump_path.empty()) {
    // A dump is an output like any other: whole or absent, and a failure is exit 73/74.
    std::filesystem::path path(limits.dump_path);
    if (path.has_parent_path()) create_output_directories(path.parent_path().string());
    write_file_atomically(
        path.string(),
        fmt::format("; {}\n; solver: z3 {}; replay: z3 rlimit={} {}\n; expected by flashproof: unsat means "
                    "proved\n{}",
                    limits.comment.empty() ? "flashproof verify query" : limits.comment, solver_version(),
                    limits.rlimit, path.filename().string(), s.to_smt2()));
  }
  SmtOutcome o;
  // The thread's wall-clock budget (core/support/deadline.h) caps the backstop; a query it cuts short ends
  // the obligation (DeadlineExceeded) rather than reading as this query's own timeout.
  check_deadline("solver query");
  const double timeout_s = std::min(limits.timeout_s, seconds_left());
  auto t0 = std::chrono::steady_clock::now();
  // The wall-clock backstop: a watchdog interrupts the context (Z3_interrupt is the API meant to
  // be called from another thread) when the check outlives the timeout.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  z3::context& ctx = s.ctx();
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(timeout_s));
    if (!cv.wait_until(lock, deadline, [&] { return done; })) ctx.interrupt();
  });
  z3::check_result r = z3::unknown;
  try {
    r = s.check();
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_all();
    watchdog.join();
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r == z3::unsat) {
    o.status = SmtStatus::Unsat;
  } else if (r == z3::sat) {
    o.status = SmtStatus::Sat;
  } else {
    o.status = SmtStatus::Unknown;
    o.reason = s.reason_unknown();
    // Z3 reports an exhausted rlimit as "max. resource limit exceeded" or, from some tactics,
    // "canceled"; only the clock tells the wall-clock backstop apart.
    o.timed_out = o.reason.find("timeout") != std::string::npos || o.seconds >= 0.95 * timeout_s;
    o.resource_out = !o.timed_out;
    if (o.timed_out) check_deadline("solver query");
  }
  return o;
}

namespace {
// Decimal string times 2^k.
std::string times_pow2(std::string digits, int k) {
  for (int i = 0; i < k; ++i) {
    int carry = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
      int d = (*it - '0') * 2 + carry;
      *it = static_cast<char>('0' + d % 10);
      carry = d / 10;
    }
    if (carry) digits.insert(digits.begin(), static_cast<char>('0' + carry));
  }
  return digits;
}
}  // namespace

z3::expr real_of(z3::context& c, double v) {
  if (v == 0) return c.real_val(0);
  // v = m · 2^e exactly, with m an integer of at most 53 bits.
  int e = 0;
  double m = std::frexp(std::fabs(v), &e);
  long long mi = static_cast<long long>(std::ldexp(m, 53));
  e -= 53;
  std::string sign = v < 0 ? "-" : "";
  if (e >= 0) return c.real_val((sign + times_pow2(std::to_string(mi), e)).c_str());
  return c.real_val((sign + std::to_string(mi) + "/" + times_pow2("1", -e)).c_str());
}

InductionStep run_step(z3::solver& s, const std::string& name, const std::string& statement,
                       const SmtLimits& limits) {
  SmtLimits lim = limits;
  if (!lim.dump_path.empty()) lim.dump_path += "-" + name + ".smt2";
  return InductionStep{name, statement, run_check(s, lim)};
}

InductionStep run_real_step(const RealStep& step, const std::string& smt, const SmtLimits& limits) {
  static constexpr const char* kPrelude = "(define-fun ab ((x Real)) Real (ite (>= x 0) x (- x)))\n";
  z3::context c;
  z3::solver s(c);
  apply_limits(c, s, limits);
  s.add(c.parse_string((std::string(kPrelude) + smt).c_str()));
  return run_step(s, step.name, step.statement, limits);
}

}  // namespace detail

}  // namespace fp::verify::smt
