// The registry of fuzzing targets (target.h).
#include "fuzz/target.h"

#include <algorithm>

namespace fp::fuzz {

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {parse_target(), exec_target(), rewrite_target(), verify_target()};
  return all;
}

namespace {
std::optional<std::chrono::steady_clock::time_point> g_deadline;
}

void set_campaign_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) { g_deadline = deadline; }

double seconds_left(double cap) {
  if (!g_deadline) return cap;
  const double left = std::chrono::duration<double>(*g_deadline - std::chrono::steady_clock::now()).count();
  return std::max(0.0, std::min(cap, left));
}

const Target* find_target(const std::string& name) {
  for (const Target& t : targets())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace fp::fuzz
