// Interleaved timing of compiled programs (exec/interleaved_timing.h).
#include "exec/interleaved_timing.h"

#include <algorithm>
#include <chrono>

#include "core/diagnostic.h"

namespace fp {

double ProgramTimes::median() const {
  FP_INTERNAL_CHECK(!seconds.empty(), "median of no runs");
  std::vector<double> v = seconds;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ProgramTimes::min() const {
  FP_INTERNAL_CHECK(!seconds.empty(), "minimum of no runs");
  return *std::min_element(seconds.begin(), seconds.end());
}

std::vector<ProgramTimes> time_interleaved(const std::vector<CompiledProgram*>& programs,
                                           const TensorMap& inputs, int repeats) {
  const std::size_t n = programs.size();
  std::vector<ProgramTimes> times(n);
  for (CompiledProgram* p : programs) p->run(inputs);  // warm-up
  for (int round = 0; round < repeats; ++round)
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t f = (k + static_cast<std::size_t>(round)) % n;
      const auto t0 = std::chrono::steady_clock::now();
      programs[f]->run(inputs);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const RunStats st = programs[f]->last_stats();
      times[f].seconds.push_back(st.compute_seconds >= 0 ? st.compute_seconds : wall);
      times[f].peak_bytes = st.peak_bytes;
    }
  return times;
}

}  // namespace fp
