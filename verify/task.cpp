#include "verify/task.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "core/diagnostic.h"
#include "core/ir_visit.h"
#include "verify/checkers.h"
#include "verify/error_bound.h"

namespace fp::verify {

namespace {

// `src` with only `app`'s statements rewritten as in `all` (the round's target with every sibling
// application of the shape). Aligns the two top-level statement lists: a statement the member
// left alone is the very same pointer (rewrites' rebuild keeps them); an application's anchor
// (its first statement) is replaced in place by one statement or a run of them — as many as the
// application's anchor_run says, else up to the next source statement (a rewrite that emits a new
// statement followed by definitions it moved behind it, which are the source's own statements);
// its other statements are either kept (same pointer, at its aligned place) or deleted. Nodes the
// member declared (tiles, say) are added. nullopt when the lists do not align that way.
std::optional<Routine> isolate(const Routine& src, const Routine& all,
                               const std::vector<const Application*>& siblings, const Application& app) {
  std::vector<StmtP> S = top_level_statements(src), T = top_level_statements(all);
  std::set<std::size_t> touched;
  std::map<std::size_t, int> anchors;  // anchor position -> its run's length (0: unknown)
  for (const Application* a : siblings) {
    if (a->statements.empty()) return std::nullopt;
    anchors[static_cast<std::size_t>(a->statements[0] - 1)] = a->anchor_run;
    for (int p : a->statements) touched.insert(static_cast<std::size_t>(p - 1));
  }
  // A replacement run ends at the next statement of T that is a later source statement.
  auto later_source = [&](std::size_t i, const StmtP& t) {
    for (std::size_t k = i + 1; k < S.size(); ++k)
      if (S[k] == t) return true;
    return false;
  };
  std::map<std::size_t, std::vector<StmtP>> replaced;
  std::set<const Stmt*> aligned;  // statements of T kept at their own place
  std::size_t j = 0;
  for (std::size_t i = 0; i < S.size(); ++i) {
    if (j < T.size() && S[i] == T[j]) {
      aligned.insert(T[j].get());
      ++j;
      continue;
    }
    if (!touched.count(i)) return std::nullopt;
    if (auto a = anchors.find(i); a != anchors.end()) {
      if (j >= T.size()) return std::nullopt;
      std::vector<StmtP>& run = replaced[i];
      if (a->second > 0) {  // the member said how long its run is
        if (j + static_cast<std::size_t>(a->second) > T.size()) return std::nullopt;
        for (int n = 0; n < a->second; ++n) run.push_back(T[j++]);
        continue;
      }
      run.push_back(T[j++]);
      while (j < T.size() && !later_source(i, T[j])) run.push_back(T[j++]);
    }
  }
  if (j != T.size()) return std::nullopt;
  std::set<std::size_t> mine;
  for (int p : app.statements) mine.insert(static_cast<std::size_t>(p - 1));
  std::vector<StmtP> out;
  for (std::size_t i = 0; i < S.size(); ++i) {
    if (!mine.count(i)) {
      out.push_back(S[i]);
    } else if (auto it = replaced.find(i); it != replaced.end()) {
      for (const StmtP& st : it->second) out.push_back(st);
    } else if (aligned.count(S[i].get())) {
      out.push_back(S[i]);
    }
  }
  Routine r = src;
  r.body = seq(std::move(out));
  for (const Node& n : all.nodes)
    if (!r.find_node(n.name)) r.nodes.push_back(n);
  return r;
}

bool same_application(const Application& a, const Application& b) {
  return a.shape == b.shape && a.statements == b.statements && a.matched == b.matched;
}

}  // namespace

std::optional<double> parse_claim(const std::string& claim) {
  if (claim == "exact" || claim == kCertifiedClaim) return std::nullopt;
  const std::string prefix = "bounded:";
  if (claim.rfind(prefix, 0) == 0) {
    // Rounded down: the checks never allow more than the decimal the user wrote.
    const std::optional<double> rel = parse_decimal_rounded_down(claim.substr(prefix.size()));
    if (rel && std::isfinite(*rel) && *rel > 0) return rel;
  }
  throw UserError(
      kExitUsage, "", 0, 0,
      fmt::format("--claim expects 'exact', 'bounded' (a rewrite's certified bounds) or 'bounded:REL' with REL a "
                  "positive number, found '{}'",
                  claim));
}

namespace {

// The member of `app` alone on `src`, in `app`'s round, with only `app`'s shape enabled.
MemberOutput apply_alone(const Routine& src, const Config& config, const Application& app) {
  const Member* m = find_member(app.member);
  FP_INTERNAL_CHECK(m != nullptr, "application of unknown member {}", app.member);
  MemberContext ctx;
  ctx.config = &config;
  ctx.round = app.round;
  const std::string shape = app.shape;
  ctx.shape_enabled = [shape](const std::string& id) { return id == shape; };
  return m->apply(src, ctx);
}

// `app` isolated in `out` (the member alone on `src`): the source with only its statements rewritten,
// so that each pair differs by one application (the others are their own obligations) and a bounded
// change in one layer does not reach another layer's obligation through the data. nullopt when `out`
// does not make `app`.
std::optional<Routine> isolated_target(const Routine& src, const MemberOutput& out, const Application& app) {
  const Application* made = nullptr;
  for (const auto& a : out.applications)
    if (same_application(a, app)) made = &a;
  if (!made) return std::nullopt;
  std::vector<const Application*> siblings;
  for (const auto& a : out.applications)
    if (a.shape == app.shape) siblings.push_back(&a);
  if (auto iso = isolate(src, out.routine, siblings, *made)) return iso;
  return out.routine;
}

// The tier's runs on resized copies of one routine, kept while their tasks live: every task of
// an application (and every application of a round) reaches its round from the same runs.
class TierRuns {
 public:
  const RewriteResult& run(const Routine& o, const Config& config, const TierOptions& options) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [body, result] : runs_)
      if (body == o.body) return *result;
    if (runs_.size() >= 8) runs_.erase(runs_.begin());
    runs_.emplace_back(o.body, std::make_shared<const RewriteResult>(run_tier(o, config, options)));
    return *runs_.back().second;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<StmtP, std::shared_ptr<const RewriteResult>>> runs_;
};

}  // namespace

TierTasks tier_tasks(const Routine& r, const Config& config, const TierOptions& options,
                     const std::string& file, const std::string& repro_base) {
  TierTasks tt;
  tt.result = run_tier(r, config, options);
  const auto origin = std::make_shared<const Routine>(r);
  const auto reach_cache = std::make_shared<TierRuns>();
  std::map<std::pair<int, std::string>, MemberOutput> outputs;
  int k = 0;
  for (const Application& app : tt.result.applications) {
    ++k;
    const Routine& src = tt.result.round_input(r, app.round, app.member);
    auto key = std::make_pair(app.round, app.shape);
    if (!outputs.count(key)) outputs.emplace(key, apply_alone(src, config, app));
    std::optional<Routine> tgt = isolated_target(src, outputs.at(key), app);
    FP_INTERNAL_CHECK(tgt.has_value(),
                      "re-running {} alone in round {} does not reproduce the application at statement {}",
                      app.shape, app.round, app.statements.empty() ? 0 : app.statements[0]);
    // What the tier emits for this source at other extents (size reduction keeps a case faithful).
    auto reemit_with = [config, app](const Routine& s, const Task::Settings& settings) {
      Config c = config;
      for (const auto& [name, value] : settings) c.set(name, value, "a proof's re-emission");
      return isolated_target(s, apply_alone(s, c, app), app);
    };
    auto reemit = [reemit_with](const Routine& s) { return reemit_with(s, {}); };
    auto reach = [config, options, app, cache = reach_cache](const Routine& o) -> std::optional<Routine> {
      const RewriteResult& res = cache->run(o, config, options);
      for (const auto& snap : res.rounds)
        if (snap.round == app.round && snap.member == app.member) return res.round_input(o, app.round, app.member);
      return std::nullopt;
    };
    for (const Obligation& ob : app.obligations) {
      Task t;
      t.id = fmt::format("{}.{}", k, ob.claim);
      t.member = app.member;
      t.shape = app.shape;
      t.app = app;
      t.obligation = ob;
      t.src = src;
      t.tgt = *tgt;
      t.file = file;
      t.repro = repro_base + " --obligation " + t.id;
      t.reemit = reemit;
      t.reemit_with = reemit_with;
      t.origin = origin;
      t.reach = reach;
      tt.tasks.push_back(std::move(t));
    }
  }
  return tt;
}

Task pair_task(Routine src, Routine tgt, const std::string& claim, const std::string& file,
               const std::string& repro) {
  Task t;
  t.id = "pair";
  t.rel = parse_claim(claim);
  t.hand_pair = true;
  t.obligation.kind = t.rel ? ObligationKind::Bounded : ObligationKind::Exact;
  t.obligation.claim = claim;
  t.obligation.description =
      t.rel ? fmt::format(
                  "every output of the target is within {} relative of the source's, NaN exactly where the "
                  "source has NaN",
                  *t.rel)
            : "every output of the target is bitwise equal to the source's";
  for (const Node* n : src.outputs()) t.obligation.covers.push_back(Cover{n->name, n->name + "[all cells]"});
  t.src = std::move(src);
  t.tgt = std::move(tgt);
  t.file = file;
  t.repro = repro;
  return t;
}

std::vector<Task> pair_tasks(Routine src, Routine tgt, const std::string& claim, const std::string& file,
                             const std::string& repro, const Limits& limits) {
  if (claim != kCertifiedClaim) return {pair_task(std::move(src), std::move(tgt), claim, file, repro)};
  PairRecognition r = recognize_pair(src, tgt, limits);
  for (Task& t : r.tasks) {
    t.file = file;
    t.repro = repro;
  }
  if (!r.tasks.empty()) return std::move(r.tasks);
  Task t = pair_task(std::move(src), std::move(tgt), claim, file, repro);
  t.obligation.kind = ObligationKind::Bounded;
  t.obligation.description = "the target is one of a rewrite's forms of the source, within its certified bounds";
  t.unrecognized = r.why_not;
  return {std::move(t)};
}

}  // namespace fp::verify
