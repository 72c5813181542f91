#include "verify/progress.h"

#include <fmt/format.h>

namespace fp::verify {

Progress::Progress(int total, bool terminal, std::FILE* out, double period_s)
    : total_(total),
      terminal_(terminal),
      out_(out),
      period_(period_s),
      start_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() {
  stop();
}

void Progress::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (terminal_ && drawn_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
}

void Progress::started(const Task& t) {
  std::lock_guard<std::mutex> lock(mu_);
  running_[t.id] = std::chrono::steady_clock::now();
}

void Progress::finished(const Task& t, const Verdict& v) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(t.id);
    phase_.erase(t.id);
    ++done_;
    ++counts_[verdict_kind_name(v.kind)];
  }
  cv_.notify_all();
}

void Progress::phase(const Task& t, const std::string& phase) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_[t.id] = phase;
}

std::string Progress::line() {
  auto now = std::chrono::steady_clock::now();
  std::string longest;
  double longest_s = -1;
  for (const auto& [id, t0] : running_) {
    double s = std::chrono::duration<double>(now - t0).count();
    if (s > longest_s) {
      longest_s = s;
      longest = id;
    }
  }
  std::string counts;
  for (const char* k : {"exact", "bounded", "refuted", "unknown", "error"})
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", k, counts_[k]);
  return fmt::format(
      "verify: {}/{} done ({}){}", done_, total_, counts,
      longest.empty() ? ""
                      : fmt::format("; longest running: {} ({:.1f}s{})", longest, longest_s,
                                    phase_.count(longest) ? ", " + phase_.at(longest) : std::string()));
}

void Progress::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  auto next_plain = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(period_));
  while (!stop_) {
    if (terminal_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      if (stop_) break;
      // Draw only once the run has lasted a moment, so quick runs leave no trace.
      if (std::chrono::steady_clock::now() - start_ < std::chrono::milliseconds(500)) continue;
      std::fprintf(out_, "\r\033[K%s", line().c_str());
      std::fflush(out_);
      drawn_ = true;
    } else {
      cv_.wait_until(lock, next_plain);
      if (stop_) break;
      if (std::chrono::steady_clock::now() >= next_plain) {
        std::fprintf(out_, "%s\n", line().c_str());
        std::fflush(out_);
        next_plain += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(period_));
      }
    }
  }
}

}  // namespace fp::verify
