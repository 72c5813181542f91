// The campaign runner (campaign.h).
#include "fuzz/campaign.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/diagnostic.h"
#include "core/support/atomic_file.h"
#include "fuzz/corpus.h"
#include "fuzz/crash_guard.h"
#include "fuzz/findings.h"

namespace fp::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::atomic<bool> g_stop_requested{false};
extern "C" void on_stop_signal(int) { g_stop_requested = true; }

// SIGINT / SIGTERM finish the input in hand, then stop (restored on scope exit).
class StopSignals {
 public:
  StopSignals() {
    g_stop_requested = false;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &int_);
    ::sigaction(SIGTERM, &sa, &term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &int_, nullptr);
    ::sigaction(SIGTERM, &term_, nullptr);
  }

 private:
  struct sigaction int_ {}, term_ {};
};

// Runs one input read from a file: a UserError (the file is not an input of the target) goes to
// the caller; anything else the target throws becomes a finding — a target reports failures, it
// does not throw them.
Execution run_case(const Target& t, const std::string& input, const std::string& name) {
  try {
    return t.run(input, name);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    Execution x;
    x.finding = Finding{"exception", t.name, fmt::format("an exception escaped the target: {}", e.what()), {}};
    return x;
  }
}

// Runs one generated input: a UserError means the generator and the target disagree on the format —
// a bug of the fuzzer, reported as a finding too.
Execution run_guarded(const Target& t, const std::string& input, const std::string& name) {
  try {
    return run_case(t, input, name);
  } catch (const UserError& e) {
    Execution x;
    x.finding = Finding{"input-rejected", t.name, fmt::format("the target rejected its own input: {}", e.what()), {}};
    return x;
  }
}

bool same_failure(const Execution& e, const std::string& signature) {
  return e.finding && e.finding->signature() == signature;
}

class Progress {
 public:
  Progress(const CampaignOptions& o) : quiet_(o.quiet), terminal_(::isatty(2)) {}
  void update(const CampaignStats& s, bool force = false) {
    if (quiet_) return;
    const double every = terminal_ ? 0.5 : 10;
    if (!force && since(last_) < every) return;
    last_ = Clock::now();
    const std::string line = fmt::format("#{} execs  {:.0f}/s  corpus {}  features {}  findings {}", s.executions,
                                         s.seconds > 0 ? s.executions / s.seconds : 0.0, s.corpus_size,
                                         s.features.size(), s.findings.size());
    if (terminal_)
      std::fprintf(stderr, "\r%s\033[K", line.c_str());
    else
      std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    dirty_ = terminal_;
  }
  // A line of its own (a new finding): clears the progress line first.
  void say(const std::string& text) {
    if (quiet_) return;
    if (dirty_) std::fprintf(stderr, "\r\033[K");
    dirty_ = false;
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
  }
  void finish() {
    if (dirty_) std::fprintf(stderr, "\n");
    dirty_ = false;
  }

 private:
  bool quiet_, terminal_;
  bool dirty_ = false;
  Clock::time_point last_{};
};

// Adds an execution's features; true when one was new.
bool record_features(CampaignStats& s, const Execution& e) {
  bool fresh = false;
  for (const std::string& f : e.features) fresh |= s.features[f]++ == 0;
  return fresh;
}

}  // namespace

std::uint64_t case_seed(std::uint64_t seed, const StreamLayout& layout, std::uint64_t i) {
  const std::uint64_t g = i * static_cast<std::uint64_t>(layout.streams()) + static_cast<std::uint64_t>(layout.stream());
  std::uint64_t z = seed + (g + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

// One campaign: the findings on disk, the corpus, the stream, and the loop over it.
class Campaign {
 public:
  explicit Campaign(const CampaignOptions& o)
      : o_(o), t_(*o.target), progress_(o), start_(Clock::now()), guard_(o.artifact_prefix, t_.name, o.timeout_s) {
    if (!o.corpus_dirs.empty()) corpus_.emplace(o.corpus_dirs[0]);
  }

  CampaignStats run() {
    take_stock_of_findings();
    replay_corpus();
    run_stream(resume_point());
    progress_.update(stats_, true);
    progress_.finish();
    return stats_;
  }

 private:
  // Crash and timeout files of an earlier run become findings; the signatures already on disk are
  // counted when seen again, not rewritten.
  void take_stock_of_findings() {
    const std::string folder = prefix_folder(o_.artifact_prefix);
    if (folder != ".") create_output_directories(folder);
    for (const std::string& dir : adopt_raw_artifacts(o_.artifact_prefix, t_.name)) {
      stats_.findings.push_back(dir);
      progress_.say(fmt::format("adopted an earlier crash or timeout as the finding {}", dir));
    }
    for (const std::string& dir : finding_dirs(folder))
      if (auto r = read_finding(dir); r && r->target == t_.name) known_.insert(r->finding.signature());
  }

  // Runs one input under the crash guard (a crash or a hang writes it; crash_guard.h).
  Execution guarded(const std::string& input, const std::string& name) {
    guard_.begin(input);
    Execution e = run_guarded(t_, input, name);
    guard_.end();
    return e;
  }

  void report(FindingRecord r) {
    const std::string sig = r.finding.signature();
    if (!known_.insert(sig).second) {
      ++stats_.known_findings;
      return;
    }
    if (!write_finding(o_.artifact_prefix, r)) return;
    const std::string dir = finding_dir(o_.artifact_prefix, t_.name, sig);
    stats_.findings.push_back(dir);
    progress_.say(fmt::format("FINDING {} ({}): {}\n  case: {}\n  replay: {}/replay.sh", r.finding.kind, r.finding.where,
                              r.finding.message, dir, dir));
  }

  // The corpus first (libFuzzer's INITED): its features, and its failures. A file that is not an
  // input of the target is skipped with a warning.
  void replay_corpus() {
    for (const std::string& dir : o_.corpus_dirs) {
      for (const std::string& input : Corpus(dir).load()) {
        guard_.begin(input);
        try {
          account(run_case(t_, input, dir + "/" + input_digest(input)), input);
        } catch (const UserError& err) {
          fuzz_warning(fmt::format("{}: skipped: {}", err.file(), err.message()));
        }
        guard_.end();
      }
    }
    if (!o_.corpus_dirs.empty())
      progress_.say(fmt::format("corpus: {} inputs replayed, {} features", stats_.corpus_replays, stats_.features.size()));
  }

  void account(const Execution& e, const std::string& input) {
    ++stats_.corpus_replays;
    ++stats_.corpus_size;
    record_features(stats_, e);
    if (e.finding) report(FindingRecord{t_.name, *e.finding, input, 0, 0});
  }

  Corpus::StreamState resume_point() {
    Corpus::StreamState state{t_.name, o_.seed, o_.layout.stream(), o_.layout.streams(), 0};
    if (corpus_)
      if (auto saved = corpus_->resume(state)) state.next = saved->next;
    stats_.first_execution = state.next;
    if (state.next > 0)
      progress_.say(fmt::format("resuming stream {} of {} at execution {}", state.stream, state.streams, state.next));
    return state;
  }

  bool should_stop() {
    if (o_.runs >= 0 && static_cast<std::int64_t>(stats_.executions) >= o_.runs) return true;
    if (o_.max_total_time > 0 && since(start_) >= o_.max_total_time) return true;
    if (!g_stop_requested) return false;
    progress_.say("stopping: signal received");
    return true;
  }

  std::optional<Clock::time_point> deadline() const {
    if (o_.max_total_time <= 0) return std::nullopt;
    return start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.max_total_time));
  }

  // A failing drawn input: minimized by its shrinks (each run under the guard), then reported.
  void found(const rc::Shrinkable<std::string>& drawn, const Finding& f, std::uint64_t seed, std::uint64_t i) {
    const std::string sig = f.signature();
    if (known_.count(sig)) {
      ++stats_.known_findings;
      return;
    }
    rc::Shrinkable<std::string> small = drawn;
    const auto begin = Clock::now();
    for (bool progressed = true; progressed && since(begin) < o_.minimize_budget_s;) {
      progressed = false;
      auto shrinks = small.shrinks();
      while (auto child = shrinks.next()) {
        if (since(begin) >= o_.minimize_budget_s) break;
        if (!same_failure(guarded(child->value(), "shrink"), sig)) continue;
        small = *child;
        progressed = true;
        break;
      }
    }
    const Execution again = guarded(small.value(), "minimized");
    report(FindingRecord{t_.name, same_failure(again, sig) ? *again.finding : f, small.value(), seed, i});
  }

  // The stream from `state.next` on; the state is saved every second and at the end, with the
  // index of the first execution not finished (a kill re-runs at most what it interrupted).
  void run_stream(Corpus::StreamState state) {
    StopSignals stop_signals;
    set_campaign_deadline(deadline());  // a long execution (the verifier's) ends at it too
    auto last_save = Clock::now();
    const auto loop_start = Clock::now();
    for (std::uint64_t i = state.next; !should_stop(); ++i) {
      const std::uint64_t seed = case_seed(o_.seed, o_.layout, i);
      const rc::Shrinkable<std::string> drawn = t_.generate(seed);
      const std::string input = drawn.value();
      const Execution e = guarded(input, fmt::format("seed {}", seed));
      ++stats_.executions;
      if (record_features(stats_, e) && corpus_ && corpus_->add(input)) ++stats_.corpus_size;
      if (e.finding) found(drawn, *e.finding, seed, i);
      state.next = i + 1;
      stats_.seconds = since(loop_start);
      if (corpus_ && since(last_save) >= 1.0) {
        corpus_->save(state);
        last_save = Clock::now();
      }
      progress_.update(stats_);
    }
    set_campaign_deadline(std::nullopt);
    if (corpus_) corpus_->save(state);
    stats_.seconds = since(loop_start);
  }

  const CampaignOptions& o_;
  const Target& t_;
  CampaignStats stats_;
  Progress progress_;
  const Clock::time_point start_;
  CrashGuard guard_;
  std::optional<Corpus> corpus_;
  std::set<std::string> known_;
};

}  // namespace

CampaignStats run_campaign(const CampaignOptions& o) { return Campaign(o).run(); }

int replay_files(const Target& t, const std::vector<std::string>& files) {
  int failing = 0;
  for (const std::string& file : files) {
    const Execution e = run_case(t, read_case_file(file), file);
    if (e.finding) {
      ++failing;
      fmt::print("{}: FAILS ({} at {}): {}\n", file, e.finding->kind, e.finding->where, e.finding->message);
    } else {
      fmt::print("{}: ok ({} features)\n", file, e.features.size());
    }
  }
  std::fflush(stdout);
  return failing;
}

namespace {

// Candidate reductions of a text: each chunk of lines deleted (halves, quarters, … single lines),
// then each chunk of bytes of the last kind.
std::vector<std::string> line_reductions(const std::string& text, std::size_t chunk) {
  std::vector<std::size_t> starts = {0};
  for (std::size_t p = 0; p < text.size(); ++p)
    if (text[p] == '\n' && p + 1 < text.size()) starts.push_back(p + 1);
  starts.push_back(text.size());
  std::vector<std::string> out;
  const std::size_t lines = starts.size() - 1;
  for (std::size_t a = 0; a < lines; a += chunk) {
    const std::size_t b = std::min(lines, a + chunk);
    out.push_back(text.substr(0, starts[a]) + text.substr(starts[b]));
  }
  return out;
}

}  // namespace

std::optional<std::string> minimize_case_file(const Target& t, const std::string& file, const std::string& prefix,
                                              double budget_s) {
  std::string input = read_case_file(file);
  const Execution first = run_case(t, input, file);
  if (!first.finding) return std::nullopt;
  const std::string sig = first.finding->signature();
  const auto start = Clock::now();
  Finding last = *first.finding;
  for (std::size_t chunk = 64; chunk >= 1 && since(start) < budget_s; chunk /= 2) {
    bool progressed = true;
    while (progressed && since(start) < budget_s) {
      progressed = false;
      for (const std::string& candidate : line_reductions(input, chunk)) {
        if (since(start) >= budget_s) break;
        Execution e = run_guarded(t, candidate, "minimize");
        if (!same_failure(e, sig)) continue;
        input = candidate;
        last = *e.finding;
        progressed = true;
        break;
      }
    }
  }
  FindingRecord r{t.name, last, input, 0, 0};
  const std::string dir = finding_dir(prefix, t.name, sig);
  if (!write_finding(prefix, r)) {
    // The signature's directory is there already: replace its case only when this one is smaller.
    auto old = read_finding(dir);
    if (old && old->input.size() <= input.size()) return dir;
    std::filesystem::remove_all(dir);
    write_finding(prefix, r);
  }
  return dir;
}

std::size_t merge_into(const Target& t, const std::string& out, const std::vector<std::string>& inputs) {
  Corpus target_corpus(out);
  CampaignStats stats;
  // A file that is not an input of the target is skipped with a warning.
  auto covers_new = [&](const std::string& input, const std::string& dir) {
    try {
      return record_features(stats, run_case(t, input, dir + "/" + input_digest(input)));
    } catch (const UserError& err) {
      fuzz_warning(fmt::format("{}: skipped: {}", err.file(), err.message()));
      return false;
    }
  };
  for (const std::string& input : target_corpus.load()) covers_new(input, out);
  std::size_t added = 0;
  for (const std::string& dir : inputs)
    for (const std::string& input : Corpus(dir).load())
      if (covers_new(input, dir) && target_corpus.add(input)) ++added;
  return added;
}

std::string final_stats_text(const Target& t, const CampaignStats& s) {
  std::string out;
  out += fmt::format("stat::target: {}\n", t.name);
  out += fmt::format("stat::number_of_executed_units: {}\n", s.executions);
  out += fmt::format("stat::corpus_replays: {}\n", s.corpus_replays);
  out += fmt::format("stat::average_exec_per_sec: {:.1f}\n", s.seconds > 0 ? s.executions / s.seconds : 0.0);
  out += fmt::format("stat::seconds: {:.1f}\n", s.seconds);
  out += fmt::format("stat::corpus_size: {}\n", s.corpus_size);
  out += fmt::format("stat::new_findings: {}\n", s.findings.size());
  out += fmt::format("stat::known_findings_seen_again: {}\n", s.known_findings);
  out += fmt::format("stat::features: {}\n", s.features.size());
  // The verify target's mutation score: distinct planted bugs refuted, of those planted.
  std::size_t killed = 0, survived = 0;
  for (const auto& [f, n] : s.features) {
    killed += f.rfind("killed:", 0) == 0;
    survived += f.rfind("survived:", 0) == 0;
  }
  if (killed + survived > 0)
    out += fmt::format("stat::mutation_score: {} of {} distinct mutants refuted\n", killed, killed + survived);
  // Features by class (the text before the first ':'), each with the executions that hit it.
  std::map<std::string, std::vector<std::string>> by_class;
  for (const auto& [f, n] : s.features) {
    const auto colon = f.find(':');
    by_class[colon == std::string::npos ? f : f.substr(0, colon)].push_back(
        fmt::format("{} ({})", colon == std::string::npos ? f : f.substr(colon + 1), n));
  }
  for (const auto& [cls, items] : by_class) out += fmt::format("covered::{}: {}\n", cls, fmt::join(items, ", "));
  return out;
}

}  // namespace fp::fuzz
