#pragma once
// Progress of a verify run on standard error. On a terminal: one line redrawn in place (done /
// total, verdict counts, the longest-running obligation and its time); otherwise a plain line
// every `period` seconds while the run lasts, so CI logs show that a long run is alive without
// drowning them. A run shorter than one period prints nothing in plain mode.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "verify/engine.h"

namespace fp::verify {

class Progress : public ProgressSink {
 public:
  Progress(int total, bool terminal, std::FILE* out, double period_s = 10);
  ~Progress() override;
  void started(const Task& t) override;
  void finished(const Task& t, const Verdict& v) override;
  void phase(const Task& t, const std::string& phase) override;
  // Stops the ticker and clears the terminal line.
  void stop();

 private:
  std::string line();
  void loop();

  int total_;
  bool terminal_;
  std::FILE* out_;
  double period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool drawn_ = false;
  int done_ = 0;
  std::map<std::string, int> counts_;
  std::map<std::string, std::chrono::steady_clock::time_point> running_;
  std::map<std::string, std::string> phase_;  // running obligation → its current phase
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;
};

}  // namespace fp::verify
