#include "core/support/deadline.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fp {

namespace {

struct Frame {
  std::chrono::steady_clock::time_point until;
  std::string label;
  const Frame* outer;
};

thread_local const Frame* t_current = nullptr;

std::chrono::steady_clock::time_point after(double seconds) {
  const auto now = std::chrono::steady_clock::now();
  if (!(seconds < 1e9)) return std::chrono::steady_clock::time_point::max();
  return now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(std::max(0.0, seconds)));
}

}  // namespace

ScopedDeadline::ScopedDeadline(double seconds, std::string label)
    : ScopedDeadline(after(seconds), std::move(label)) {}

ScopedDeadline::ScopedDeadline(std::chrono::steady_clock::time_point until, std::string label)
    : previous_(t_current) {
  // The effective deadline is the earliest; an outer one that is earlier keeps its own label.
  const Frame* outer = t_current;
  if (outer && outer->until <= until)
    t_current = new Frame{outer->until, outer->label, outer};
  else
    t_current = new Frame{until, std::move(label), outer};
}

ScopedDeadline::~ScopedDeadline() {
  delete t_current;
  t_current = static_cast<const Frame*>(previous_);
}

double seconds_left() {
  if (!t_current) return INFINITY;
  if (t_current->until == std::chrono::steady_clock::time_point::max()) return INFINITY;
  const double s = std::chrono::duration<double>(t_current->until - std::chrono::steady_clock::now()).count();
  return s > 0 ? s : 0;
}

bool deadline_passed() {
  return t_current && std::chrono::steady_clock::now() >= t_current->until;
}

void check_deadline(const char* phase) {
  if (deadline_passed()) throw DeadlineExceeded{t_current->label, phase};
}

}  // namespace fp
