#pragma once
// Where an obligation's time goes, by phase (`flashproof verify --stats`, and the phase the
// progress line shows on a terminal). The engine installs one PhaseRecord per obligation on the
// thread that discharges it; each ScopedPhase inside adds its wall time to that record — the
// time of nested phases counted once, in the innermost — and tells the progress sink which phase
// runs. Without an installed record a ScopedPhase costs one thread-local read.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fp::verify {

struct PhaseRecord {
  std::map<std::string, double> seconds;           // phase → exclusive wall seconds
  std::function<void(const std::string&)> entered;  // progress: the phase now running (may be empty)
};

// Installs `record` on this thread for the scope (the engine, per obligation).
class ScopedPhaseRecord {
 public:
  explicit ScopedPhaseRecord(PhaseRecord& record);
  ~ScopedPhaseRecord();
  ScopedPhaseRecord(const ScopedPhaseRecord&) = delete;
  ScopedPhaseRecord& operator=(const ScopedPhaseRecord&) = delete;

 private:
  PhaseRecord* previous_;
};

class ScopedPhase {
 public:
  explicit ScopedPhase(const char* name);
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;
};

// The phases of several obligations summed, for the --stats table: rows sorted by total time.
struct PhaseTotal {
  std::string phase;
  double seconds = 0;
  int obligations = 0;  // obligations that spent time in it
  double max_seconds = 0;
};
std::vector<PhaseTotal> phase_totals(const std::vector<std::map<std::string, double>>& per_obligation);
std::string phase_table(const std::vector<PhaseTotal>& totals, double wall_seconds);

}  // namespace fp::verify
