#include "verify/phase_clock.h"

#include <fmt/format.h>

#include <algorithm>

namespace fp::verify {

namespace {

using Clock = std::chrono::steady_clock;

struct Open {
  const char* name;
  Clock::time_point since;  // when it last resumed
};

thread_local PhaseRecord* t_record = nullptr;
thread_local std::vector<Open> t_open;

void charge(const Open& o, Clock::time_point now) {
  t_record->seconds[o.name] += std::chrono::duration<double>(now - o.since).count();
}

}  // namespace

ScopedPhaseRecord::ScopedPhaseRecord(PhaseRecord& record) : previous_(t_record) {
  t_record = &record;
  t_open.clear();
}

ScopedPhaseRecord::~ScopedPhaseRecord() {
  t_record = previous_;
  t_open.clear();
}

ScopedPhase::ScopedPhase(const char* name) {
  if (!t_record) return;
  const auto now = Clock::now();
  if (!t_open.empty()) charge(t_open.back(), now);
  t_open.push_back(Open{name, now});
  if (t_record->entered) t_record->entered(name);
}

ScopedPhase::~ScopedPhase() {
  if (!t_record || t_open.empty()) return;
  const auto now = Clock::now();
  charge(t_open.back(), now);
  t_open.pop_back();
  if (!t_open.empty()) {
    t_open.back().since = now;
    if (t_record->entered) t_record->entered(t_open.back().name);
  }
}

std::vector<PhaseTotal> phase_totals(const std::vector<std::map<std::string, double>>& per_obligation) {
  std::map<std::string, PhaseTotal> by;
  for (const auto& m : per_obligation)
    for (const auto& [phase, s] : m) {
      PhaseTotal& t = by[phase];
      t.phase = phase;
      t.seconds += s;
      t.obligations += 1;
      t.max_seconds = std::max(t.max_seconds, s);
    }
  std::vector<PhaseTotal> out;
  for (auto& [k, t] : by) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const PhaseTotal& a, const PhaseTotal& b) { return a.seconds > b.seconds; });
  return out;
}

std::string phase_table(const std::vector<PhaseTotal>& totals, double wall_seconds) {
  double sum = 0;
  for (const auto& t : totals) sum += t.seconds;
  std::string s = fmt::format("{:<28} {:>9} {:>7} {:>12} {:>9}\n", "phase", "seconds", "share", "obligations",
                              "max");
  for (const auto& t : totals)
    s += fmt::format("{:<28} {:>9.3f} {:>6.1f}% {:>12} {:>9.3f}\n", t.phase, t.seconds,
                     sum > 0 ? 100.0 * t.seconds / sum : 0.0, t.obligations, t.max_seconds);
  s += fmt::format("{:<28} {:>9.3f}   (obligations' time; the run took {:.3f} s wall)\n", "total", sum, wall_seconds);
  return s;
}

}  // namespace fp::verify
