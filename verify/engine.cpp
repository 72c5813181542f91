#include "verify/engine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/build_identity.h"
#include "core/deadline.h"
#include "core/diagnostic.h"
#include "core/text_printer.h"
#include "flashproof/version.h"
#include "rewrites/member.h"
#include "verify/case_writer.h"
#include "verify/normalizer_check.h"
#include "verify/pair_check.h"
#include "verify/error_bound.h"
#include "verify/proof_cache.h"
#include "verify/size_reduction.h"
#include "verify/smt/smt.h"
#include "verify/symbolic/symexec.h"
#include "verify/value_pass_lift.h"

namespace fp::verify {

namespace {

const Member* find_member(const std::string& id) {
  for (const auto& m : tier_members())
    if (m.id == id) return &m;
  return nullptr;
}

// The proof cache a run uses (verify/proof_cache.h): --cache-dir, else the default place (none
// without XDG_CACHE_HOME and HOME); --no-cache/--cache=off, --cache=refresh.
ProofCache engine_cache(const EngineOptions& o) {
  const CacheMode mode = !o.use_cache      ? CacheMode::Off
                         : o.refresh_cache ? CacheMode::Refresh
                                           : CacheMode::Use;
  return ProofCache(o.cache_dir.empty() ? ProofCache::default_dir() : o.cache_dir, mode);
}

// A cached verdict is about the task asking: the identity check already says so; this says the
// verdict itself agrees (a mismatch is a miss, never an answer).
bool verdict_answers(const Verdict& v, const Task& t) {
  return v.claim == t.obligation.claim && v.claimed == t.obligation.kind && v.member == t.member &&
         v.rewrite == t.shape;
}

// `src` with only `app`'s statements rewritten as in `all` (the round's target with every sibling
// application of the shape). Aligns the two top-level statement lists: a statement the member
// left alone is the very same pointer (rewrites' rebuild keeps them); an application's anchor
// (its first statement) is replaced in place; its other statements are either kept (same pointer)
// or deleted. nullopt when the lists do not align that way.
std::optional<Routine> isolate(const Routine& src, const Routine& all,
                               const std::vector<const Application*>& siblings, const Application& app) {
  std::vector<StmtP> S = top_level_statements(src), T = top_level_statements(all);
  std::set<std::size_t> anchors, touched;
  for (const Application* a : siblings) {
    if (a->statements.empty()) return std::nullopt;
    anchors.insert(static_cast<std::size_t>(a->statements[0] - 1));
    for (int p : a->statements) touched.insert(static_cast<std::size_t>(p - 1));
  }
  std::map<std::size_t, StmtP> replaced;
  std::size_t j = 0;
  for (std::size_t i = 0; i < S.size(); ++i) {
    if (j < T.size() && S[i] == T[j]) {
      ++j;
      continue;
    }
    if (!touched.count(i)) return std::nullopt;
    if (anchors.count(i)) {
      if (j >= T.size()) return std::nullopt;
      replaced[i] = T[j++];
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
      out.push_back(it->second);
    } else {
      bool kept = std::find(T.begin(), T.end(), S[i]) != T.end();
      if (kept) out.push_back(S[i]);
    }
  }
  Routine r = src;
  r.body = seq(std::move(out));
  return r;
}

bool same_application(const Application& a, const Application& b) {
  return a.shape == b.shape && a.statements == b.statements && a.matched == b.matched;
}

double elapsed(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void fill_common(Verdict& v, const Task& t, const EngineOptions& o) {
  v.id = t.id;
  v.member = t.member;
  v.rewrite = t.shape;
  v.claim = t.obligation.claim;
  v.claimed = t.obligation.kind;
  v.description = t.obligation.description;
  v.covers = t.obligation.covers;
  v.file = t.file;
  v.line = t.app.lines.empty() ? 0 : t.app.lines[0];
  v.solver = SolverInfo{"z3", smt::solver_version()};
  v.limits = o.limits;
  v.repro = t.repro;
}

std::vector<std::string> covered_nodes(const Task& t) {
  std::vector<std::string> nodes;
  for (const auto& c : t.obligation.covers) nodes.push_back(c.node);
  return nodes;
}

std::string dump_prefix(const Task& t, const EngineOptions& o) {
  if (o.dump_smt_dir.empty()) return "";
  return (std::filesystem::path(o.dump_smt_dir) / sanitize_id(t.id)).string();
}

// Whether the case as written — the violated node as the one output, compared as its replay
// compares (claim_checks of the written claim) — fails on `inputs`.
bool case_replays(const Routine& src, const Routine& tgt, const NodeCheck& check, const TensorMap& inputs) {
  const std::vector<std::string> node{check.node};
  std::optional<double> rel;
  if (check.kind != NodeCheck::Kind::Bitwise) rel = check.rel;
  PairRunner replay(with_outputs(src, node, false), with_outputs(tgt, node, false), claim_checks(node, rel));
  return replay.run(inputs).has_value();
}

const NodeCheck& violated_check(const std::vector<NodeCheck>& checks, const Mismatch& m) {
  const NodeCheck* violated = &checks.front();
  for (const auto& c : checks)
    if (c.node == m.node) violated = &c;
  return *violated;
}

// Shrinks the sizes of a refuted check's counterexample (verify/size_reduction.h), minimizes its
// cells and values and writes it. The verdict itself was decided on the original pair; only the
// case is smaller. A reduced case that does not replay as written (a bounded check the replay's
// bounded:REL cannot express) falls back to the original sizes.
// A refuted check's case: the pair it writes, the minimized inputs, the size reduction it keeps.
struct MinimizedCase {
  const Routine* src;
  const Routine* tgt;
  Found found;
  std::vector<ExtentReduction> extents;
  std::int64_t runs = 0;  // interpreter runs of the cell and value minimization
  bool minimized = true;  // false: the wall-clock budget ran out first; written as found
};

// The case at the reduced sizes, when the reduction shrank an extent and that case, minimized,
// fails its replay as written.
std::optional<MinimizedCase> reduced_case(const SizeReduction& red, const std::vector<NodeCheck>& checks) {
  if (!red.reduced()) return std::nullopt;
  PairRunner reduced(red.src, red.tgt, checks);
  Found m = minimize_counterexample(reduced, red.found);
  if (!case_replays(red.companions[0], red.companions[1], violated_check(checks, m.mismatch), m.inputs))
    return std::nullopt;
  return MinimizedCase{&red.companions[0], &red.companions[1], std::move(m), red.extents, reduced.runs()};
}

// Writes the case and records it in the verdict.
void write_minimized_case(Verdict& v, const Task& t, const EngineOptions& o, const std::vector<NodeCheck>& checks,
                          const MinimizedCase& c) {
  const MinimizedCase* small = &c;
  const NodeCheck& violated = violated_check(checks, small->found.mismatch);
  std::string dir = (std::filesystem::path(o.cex_dir) / sanitize_id(t.id)).string();
  v.counterexample = write_case(dir, *small->src, *small->tgt, small->found.inputs, violated,
                                small->found.mismatch, t.repro, small->extents);
  v.message = fmt::format("{} ({}: {}{})", v.message, small->minimized ? "minimized" : "as found",
                          small->found.mismatch.text(),
                          small->extents.empty() ? ""
                                                 : "; sizes reduced: " + extents_text(small->extents) +
                                                       " (extents substituted in both routines)");
  if (small->minimized)
    v.steps.push_back(
        fmt::format("counterexample minimized ({} interpreter runs) and written to {}", small->runs, dir));
  else
    v.steps.push_back(fmt::format("counterexample written as found to {}", dir));
}

// Reduces the sizes of `found`, minimizes it and writes it (attach_case).
void minimize_and_write_case(Verdict& v, const Task& t, const EngineOptions& o, const PairRunner& runner,
                             const std::vector<NodeCheck>& checks, Found found) {
  SizeReductionOptions so;
  so.seed = o.limits.seed;
  if (!o.reduce_case_sizes) so.budget = 0;
  const SizeReduction red = reduce_sizes(runner, found, {t.src, t.tgt}, so);
  const std::string effort =
      fmt::format("{} candidate{}, {} rejected by the checker, {} interpreter runs", red.tried,
                  red.tried == 1 ? "" : "s", red.rejected_by_checker, red.runs);
  std::optional<MinimizedCase> small = reduced_case(red, checks);
  if (small)
    v.steps.push_back(fmt::format(
        "counterexample sizes reduced: {} (extents substituted in both routines; the resized pair passes "
        "the checker and still fails; {})",
        red.text(), effort));
  else if (red.reduced())
    v.steps.push_back(fmt::format(
        "counterexample sizes not reduced: the case reduced by {} does not fail its replay as written; the "
        "case keeps the obligation's sizes ({})",
        red.text(), effort));
  else if (red.tried > 0)
    v.steps.push_back(
        fmt::format("counterexample sizes not reduced: no smaller extent keeps the failure ({})", effort));
  if (!small) {
    const std::int64_t before = runner.runs();
    Found m = minimize_counterexample(runner, std::move(found));
    small = MinimizedCase{&t.src, &t.tgt, std::move(m), {}, runner.runs() - before};
  }
  write_minimized_case(v, t, o, checks, *small);
}

void attach_case(Verdict& v, const Task& t, const EngineOptions& o, const Routine& src_run,
                 const Routine& tgt_run, const std::vector<NodeCheck>& checks, Found found) {
  PairRunner runner(src_run, tgt_run, checks);
  const Found as_found = found;
  try {
    minimize_and_write_case(v, t, o, runner, checks, std::move(found));
  } catch (const DeadlineExceeded& e) {
    // The verdict stands (it was decided before); only the case stays as found.
    v.steps.push_back(fmt::format("counterexample neither reduced nor minimized: {}", e.text()));
    write_minimized_case(v, t, o, checks, MinimizedCase{&t.src, &t.tgt, as_found, {}, 0, false});
  }
}

void from_pair_check(Verdict& v, PairCheck pc, const Task& t, const EngineOptions& o,
                     const std::vector<std::string>& nodes) {
  v.kind = pc.kind;
  v.reason = pc.reason;
  v.message = pc.message;
  for (auto& s : pc.steps) v.steps.push_back(std::move(s));
  v.scope = Scope{false, pc.scope};
  if (pc.kind == VerdictKind::Refuted && pc.counterexample) {
    std::vector<NodeCheck> checks = claim_checks(nodes, t.rel);
    attach_case(v, t, o, with_outputs(t.src, nodes, false), with_outputs(t.tgt, nodes, false), checks,
                std::move(*pc.counterexample));
  }
}

}  // namespace

std::optional<double> parse_claim(const std::string& claim) {
  if (claim == "exact") return std::nullopt;
  const std::string prefix = "bounded:";
  if (claim.rfind(prefix, 0) == 0) {
    // Rounded down: the checks never allow more than the decimal the user wrote.
    const std::optional<double> rel = parse_decimal_rounded_down(claim.substr(prefix.size()));
    if (rel && std::isfinite(*rel) && *rel > 0) return rel;
  }
  throw UserError(
      kExitUsage, "", 0, 0,
      fmt::format("--claim expects 'exact' or 'bounded:REL' with REL a positive number, found '{}'", claim));
}

TierTasks tier_tasks(const Routine& r, const Config& config, const TierOptions& options,
                     const std::string& file, const std::string& repro_base) {
  TierTasks tt;
  tt.result = run_tier(r, config, options);
  std::map<std::pair<int, std::string>, Routine> targets;
  int k = 0;
  for (const Application& app : tt.result.applications) {
    ++k;
    const Routine& src = tt.result.round_input(r, app.round, app.member);
    auto key = std::make_pair(app.round, app.shape);
    if (!targets.count(key)) {
      const Member* m = find_member(app.member);
      FP_INTERNAL_CHECK(m != nullptr, "application of unknown member {}", app.member);
      MemberContext ctx;
      ctx.config = &config;
      ctx.round = app.round;
      const std::string shape = app.shape;
      ctx.shape_enabled = [shape](const std::string& id) { return id == shape; };
      MemberOutput out = m->apply(src, ctx);
      bool found = false;
      for (const auto& a : out.applications) found = found || same_application(a, app);
      FP_INTERNAL_CHECK(found,
                        "re-running {} alone in round {} does not reproduce the application at statement {}",
                        app.shape, app.round, app.statements.empty() ? 0 : app.statements[0]);
      targets.emplace(key, std::move(out.routine));
    }
    // Isolate this application: the source with only its statements rewritten, so that each pair
    // differs by one application (the others are their own obligations) and a bounded change in
    // one layer does not reach another layer's obligation through the data.
    Routine tgt = targets.at(key);
    {
      std::vector<const Application*> siblings;
      for (const auto& a : tt.result.applications)
        if (a.round == app.round && a.shape == app.shape) siblings.push_back(&a);
      if (auto iso = isolate(src, tgt, siblings, app)) tgt = std::move(*iso);
    }
    for (const Obligation& ob : app.obligations) {
      Task t;
      t.id = fmt::format("{}.{}", k, ob.claim);
      t.member = app.member;
      t.shape = app.shape;
      t.app = app;
      t.obligation = ob;
      t.src = src;
      t.tgt = tgt;
      t.file = file;
      t.repro = repro_base + " --obligation " + t.id;
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

namespace {
// The obligation's work into `v` (filled in by fill_common), under the deadline discharge installs.
void discharge_into(Verdict& v, const Task& t, const EngineOptions& o) {
  const std::string dump = dump_prefix(t, o);
  const std::vector<std::string> nodes = covered_nodes(t);
  PairCheckOptions pco;
  pco.limits = o.limits;
  pco.dump_prefix = dump;
  pco.rel = t.rel;
  if (t.hand_pair || t.obligation.kind == ObligationKind::Exact) {
    std::optional<LiftResult> lift;
    if (!t.hand_pair && t.shape == "online-softmax.value-pass-hoist") {
      lift = lift_value_pass(t.src, t.tgt, t.app, o.limits, dump.empty() ? "" : dump + "-lift");
      for (const auto& s : lift->steps) v.steps.push_back(s);
    }
    if (lift && lift->proved) {
      // The all-sizes proof stands whatever the concrete check's budget allows.
      try {
        from_pair_check(v, check_pair(t.src, t.tgt, nodes, pco), t, o, nodes);
      } catch (const DeadlineExceeded& e) {
        v.kind = VerdictKind::Unknown;
        v.message = e.text();
        v.steps.push_back("concrete check stopped: " + e.text());
      }
    } else {
      from_pair_check(v, check_pair(t.src, t.tgt, nodes, pco), t, o, nodes);
    }
    if (lift && lift->proved) {
      // The lift is a proof for every extent; the concrete check can only agree with it.
      FP_INTERNAL_CHECK(v.kind != VerdictKind::Refuted,
                        "the all-sizes lift of {} holds but the concrete check refutes it: {}", t.id,
                        v.message);
      if (v.kind == VerdictKind::Exact || v.kind == VerdictKind::Unknown) {
        std::string concrete = v.kind == VerdictKind::Exact
                                   ? "bitwise equal at the routine's sizes"
                                   : "the concrete check was inconclusive (" + v.message + ")";
        v.kind = VerdictKind::Exact;
        v.reason = UnknownReason::None;
        v.scope = Scope{true, "all sizes"};
        v.message = fmt::format(
            "every target cell receives the same contributions in the same order for all extents (Z3, "
            "integer "
            "arithmetic), each computed from the same values; {}",
            concrete);
      }
    } else if (lift && v.kind == VerdictKind::Exact) {
      v.message +=
          "; all-sizes lift not established (" + lift->why_not + "): proved at the routine's sizes only";
    }
  } else if (t.obligation.claim == "normalizer-sum" && t.obligation.bound) {
    ProofCache cache = engine_cache(o);
    BoundedCheck bc = check_normalizer_sum(t.src, t.tgt, t.app, t.obligation, o.limits,
                                           o.use_cache ? &cache : nullptr, dump);
    v.kind = bc.kind;
    v.reason = bc.reason;
    v.message = bc.message;
    v.steps.insert(v.steps.end(), bc.steps.begin(), bc.steps.end());
    v.scope = Scope{
        false, bc.scope + fmt::format("; the bound formula holds for every n (docs/bounds.md), certified "
                                      "for n = {} by MPFR rows and n <= {} over the reals",
                                      bc.bound.n, o.limits.real_n)};
    v.bound = bc.bound;
    if (bc.kind == VerdictKind::Refuted && bc.counterexample)
      attach_case(v, t, o, bc.src_run, bc.tgt_run, bc.checks, std::move(*bc.counterexample));
  } else {
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::Unsupported;
    v.message = fmt::format("no certifier for the bounded claim {} of {}", t.obligation.claim, t.shape);
  }
  if (!v.proved() && v.scope.text.empty()) v.scope = Scope{false, concrete_scope(t.src)};
}
}  // namespace

Verdict discharge(const Task& t, const EngineOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Verdict v;
  fill_common(v, t, o);
  try {
    ScopedDeadline budget(o.limits.budget_s,
                          fmt::format("the obligation's wall-clock budget ({:g} s, --budget)", o.limits.budget_s));
    discharge_into(v, t, o);
  } catch (const DeadlineExceeded& e) {
    // The steps so far stay: they say how far the obligation got.
    v.kind = VerdictKind::Unknown;
    v.reason = UnknownReason::ResourceLimit;
    v.decided_by_clock = true;
    v.bound.reset();
    v.counterexample.reset();
    v.message = fmt::format("{}: no verdict", e.text());
    v.steps.push_back(v.message);
    v.scope = Scope{false, concrete_scope(t.src)};
  }
  v.seconds = elapsed(t0);
  return v;
}

nlohmann::json task_identity(const Task& t, const Limits& limits) {
  nlohmann::json covers = nlohmann::json::array();
  for (const auto& c : t.obligation.covers) covers.push_back({c.node, c.cells});
  nlohmann::json bound = nullptr;
  if (const auto& b = t.obligation.bound)
    bound = {{"terms", b->terms}, {"storage", prec_name(b->storage)}, {"state", prec_name(b->state)}};
  const Member* m = find_member(t.member);
  return {{"kind", "verdict"},
          {"build", build_identity()},
          {"tool", FLASHPROOF_VERSION},
          {"engine", kEngineVersion},
          {"semantics", kSemanticsVersion},
          {"solver", smt::solver_version()},
          {"member", t.member},
          {"member_version", m ? m->version : ""},  // hand pairs: no member
          {"shape", t.shape},
          {"hand_pair", t.hand_pair},
          {"claim", t.obligation.claim},
          {"claimed", obligation_kind_name(t.obligation.kind)},
          {"rel", t.rel ? nlohmann::json(fmt::format("{:.17g}", *t.rel)) : nlohmann::json(nullptr)},
          {"covers", covers},
          {"bound", bound},
          {"statements", t.app.statements},
          {"limits", to_json(limits)},
          {"src_sha256", sha256_hex(print_routine(t.src))},
          {"tgt_sha256", sha256_hex(print_routine(t.tgt))}};
}

std::string cache_key(const Task& t, const Limits& limits) {
  return ProofCache::key_of(task_identity(t, limits));
}

std::vector<Verdict> verify_tasks(const std::vector<Task>& tasks, const EngineOptions& o) {
  std::vector<Verdict> out(tasks.size());
  std::vector<std::size_t> todo;
  const ProofCache cache = engine_cache(o);
  cache.open();  // a refused directory is reported here, not from a worker thread
  const bool read_cache = cache.reads() && o.dump_smt_dir.empty();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (read_cache) {
      auto t0 = std::chrono::steady_clock::now();
      if (auto j = cache.get(task_identity(tasks[i], o.limits))) {
        try {
          Verdict v = verdict_from_json(*j);
          bool usable = verdict_answers(v, tasks[i]) &&
                        (!v.counterexample || std::filesystem::exists(v.counterexample->dir));
          if (usable) {
            v.id = tasks[i].id;
            v.repro = tasks[i].repro;
            v.file = tasks[i].file;
            v.cached = true;
            v.seconds = elapsed(t0);
            if (o.progress) {
              o.progress->started(tasks[i]);
              o.progress->finished(tasks[i], v);
            }
            out[i] = std::move(v);
            continue;
          }
        } catch (const std::exception&) {
          // a stale or damaged entry is a miss
        }
      }
    }
    todo.push_back(i);
  }
  std::atomic<std::size_t> next{0};
  const auto run_end =
      o.run_budget_s ? std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                             std::chrono::duration<double>(*o.run_budget_s))
                     : std::chrono::steady_clock::time_point::max();
  const std::string run_label =
      o.run_budget_s ? fmt::format("the run's wall-clock budget ({:g} s, --run-budget)", *o.run_budget_s) : "";
  auto worker = [&] {
    ScopedDeadline run_budget(run_end, run_label);
    for (;;) {
      std::size_t k = next.fetch_add(1);
      if (k >= todo.size()) return;
      const Task& t = tasks[todo[k]];
      if (o.progress) o.progress->started(t);
      Verdict v = discharge(t, o);
      if (cache.writes() && v.reason != UnknownReason::Timeout && !v.decided_by_clock)
        cache.put(task_identity(t, o.limits), to_json(v));
      if (o.progress) o.progress->finished(t, v);
      out[todo[k]] = std::move(v);
    }
  };
  const int jobs = std::max(1, std::min<int>(o.jobs, static_cast<int>(todo.size())));
  if (jobs <= 1) {
    worker();
  } else {
    // An exception in a worker (a case directory that cannot be written, memory exhausted) stops
    // the others and is rethrown here, on the caller's thread: never std::terminate.
    std::mutex failure_mu;
    std::exception_ptr failure;
    auto guarded = [&] {
      try {
        worker();
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mu);
        if (!failure) failure = std::current_exception();
        next.store(todo.size());
      }
    };
    std::vector<std::thread> threads;
    for (int j = 0; j < jobs; ++j) threads.emplace_back(guarded);
    for (auto& th : threads) th.join();
    if (failure) std::rethrow_exception(failure);
  }
  return out;
}

}  // namespace fp::verify
