#pragma once
// Cooperative wall-clock budgets. Long work (verify's obligations: solver queries, the
// counterexample search, MPFR rows, case reduction) runs under a deadline installed on its thread;
// the work polls it between steps and stops by throwing DeadlineExceeded, which names the phase it
// stopped in. Deadlines nest: the effective one is the earliest (a run budget bounds every
// obligation's budget inside it), and the exception names the budget that ran out.
//
// DeadlineExceeded deliberately does not derive from std::exception: a `catch (const
// std::exception&)` that turns a damaged cache entry or a parse failure into a fallback must not
// swallow a budget that ran out.

#include <chrono>
#include <string>

namespace fp {

struct DeadlineExceeded {
  std::string budget;  // e.g. "the obligation's wall-clock budget (300 s)"
  std::string phase;   // e.g. "counterexample search"
  std::string text() const { return budget + " ran out during the " + phase; }
};

// Installs a deadline `seconds` from now on the current thread for the object's lifetime (an
// earlier deadline already installed stays in force). `label` describes the budget.
class ScopedDeadline {
 public:
  ScopedDeadline(double seconds, std::string label);
  ScopedDeadline(std::chrono::steady_clock::time_point until, std::string label);
  ~ScopedDeadline();
  ScopedDeadline(const ScopedDeadline&) = delete;
  ScopedDeadline& operator=(const ScopedDeadline&) = delete;

 private:
  const void* previous_;
};

// Throws DeadlineExceeded(phase) when the current thread's deadline has passed.
void check_deadline(const char* phase);
// Seconds until the current thread's deadline (+inf when none; 0 once passed).
double seconds_left();
// True when a deadline is installed and has passed.
bool deadline_passed();

}  // namespace fp
