#include "verify/smt/z3_common.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace fp::verify::smt {

const char* smt_status_name(SmtStatus s) {
  switch (s) {
    case SmtStatus::Unsat: return "unsat";
    case SmtStatus::Sat: return "sat";
    case SmtStatus::Unknown: return "unknown";
  }
  return "unknown";
}

std::string solver_version() {
  unsigned major = 0, minor = 0, build = 0, rev = 0;
  Z3_get_version(&major, &minor, &build, &rev);
  return fmt::format("{}.{}.{}.{}", major, minor, build, rev);
}

std::string solver_full_version() { return Z3_get_full_version(); }

namespace detail {

void apply_limits(z3::context& c, z3::solver& s, const SmtLimits& limits) {
  z3::params p(c);
  // Z3 takes both as unsigned: clamp instead of wrapping.
  p.set("rlimit", static_cast<unsigned>(std::min<std::uint64_t>(limits.rlimit, 4'000'000'000ull)));
  double ms = std::min(limits.timeout_s * 1000.0, 4.0e9);
  p.set("timeout", static_cast<unsigned>(std::max(1.0, ms)));
  s.set(p);
}

SmtOutcome run_check(z3::solver& s, const SmtLimits& limits) {
  if (!limits.dump_path.empty()) {
    std::filesystem::path path(limits.dump_path);
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path);
    out << "; " << (limits.comment.empty() ? "flashproof verify query" : limits.comment) << "\n";
    out << "; solver: z3 " << solver_version() << "; replay: z3 rlimit=" << limits.rlimit << " "
        << path.filename().string() << "\n";
    out << "; expected by flashproof: unsat means proved\n";
    out << s.to_smt2();
  }
  SmtOutcome o;
  auto t0 = std::chrono::steady_clock::now();
  z3::check_result r = s.check();
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
    o.timed_out = o.reason.find("timeout") != std::string::npos || o.seconds >= 0.95 * limits.timeout_s;
    o.resource_out = !o.timed_out;
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

}  // namespace detail
}  // namespace fp::verify::smt
