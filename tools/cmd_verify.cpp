// `flashproof verify`: discharges verification obligations (docs/verify.md).
//
//   flashproof verify FILE... [--set k=v] [--profile P]   runs the rewrite tier on each FILE and
//                                                        discharges every obligation it records
//   flashproof verify --src A.fp --tgt B.fp --claim C     validates a hand-written pair
//                                                        (C = exact | bounded | bounded:REL);
//                                                        --src/--tgt repeat for several pairs, with
//                                                        FILEs too: one run, one report
//   flashproof verify --src A.fp --tgt B.fp --claim C --inputs DIR
//                                                        replays one input set (a counterexample
//                                                        case): exit 1 when the claim fails on it
//
// Reports: --format text|json|jsonl|junit|sarif, -o FILE. The gate (verify/gate.h): --fail-on,
// --expect, --baseline FILE, --write-baseline FILE. Exit codes (docs/architecture.md): 0 the gate
// passes, 1 refuted, 2 unknown (with --fail-on=unknown, the default), 3 a finding fails the gate
// (a decline or nothing applied under --expect, a regression against the baseline), 65 an error
// verdict or malformed input, 64 usage, 66 missing input, 70 internal error.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "core/diagnostic.h"
#include "core/input_validation.h"
#include "core/interpreter.h"
#include "core/npy.h"
#include "core/support/input_file.h"
#include "exec/run_memory.h"
#include "verify/phase_clock.h"
#include "pipeline/checked_tier.h"
#include "rewrites/members.h"
#include "rewrites/tier.h"
#include "tools/command.h"
#include "tools/config_options.h"
#include "tools/option_checks.h"
#include "tools/routine_io.h"
#include "tools/shared_options.h"
#include "tools/standard_output.h"
#include "tools/tier_options.h"
#include "verify/compare.h"
#include "verify/engine.h"
#include "verify/pair_check.h"
#include "verify/progress.h"
#include "verify/proof_cache.h"
#include "verify/baseline.h"
#include "verify/findings.h"
#include "verify/gate.h"
#include "verify/report.h"

namespace fp::cli {
namespace {

// Ranges of the limits (tools/option_checks.h checks them as the options are read).
// Z3 takes its resource limit as a 32-bit unsigned (verify/smt clamps at 4e9).
constexpr std::uint64_t kMaxRlimit = 4'000'000'000ull;
// Terms are hash-consed nodes of a few dozen bytes each: 2^40 of them is far beyond any memory.
constexpr std::uint64_t kMaxTerms = std::uint64_t{1} << 40;
// One reals query per key count; nlsat's time grows steeply with n.
constexpr int kMaxRealN = 64;
// No binary64 exp is off by 2^20 ulps: a larger assumption is a typo, and it would only inflate
// every certified bound past use.
constexpr double kMaxExpUlp = 1 << 20;

struct VerifyOptions {
  std::vector<std::string> files;
  std::vector<std::string> src, tgt, claim, inputs_dir;
  std::string expect = "obligations";
  std::string baseline, write_baseline;
  std::string source_root;
  bool details = false;
  std::vector<std::string> obligations;
  std::string format = "text";
  std::string output;
  std::vector<std::string> reports;  // --report FORMAT=FILE
  std::string fail_on = "unknown";
  bool no_cache = false;
  const CLI::App* app = nullptr;  // the subcommand, for single_input_command
  std::string cache_mode;  // --cache: use | refresh | off (verify/proof_cache.h)
  bool no_progress = false;
  bool stats = false;
  std::optional<double> run_budget_s;
  std::string max_memory;
  verify::EngineOptions engine;
  TierOptions tier;
  ConfigOptions config;
};

// What the interpreter trials hold at once: each task runs its source and target on one input set,
// and `jobs` tasks run in parallel (the biggest ones, at worst).
// Only the hand-written pairs' tasks count: the tier's are held to the limit per obligation.
RunMemory trials_memory(const std::vector<verify::Task>& tasks, int jobs) {
  std::vector<std::pair<const Routine*, const Routine*>> pairs;
  for (const verify::Task& t : tasks)
    if (t.hand_pair) pairs.emplace_back(&t.src, &t.tgt);
  return parallel_pairs_memory(
      pairs, "interp", jobs,
      fmt::format("verify's interpreter trials: source and target of {} obligation{} "
                  "at once, every node as f64 cells",
                  std::max(jobs, 1), jobs > 1 ? "s" : ""));
}

// --stats: where the run's time went, by phase, and the per-obligation time figures (on standard
// error, so that the report's formats stay what they are).
void print_stats(const std::vector<verify::Verdict>& verdicts, double wall_seconds) {
  std::vector<std::map<std::string, double>> phases;
  std::vector<double> times;
  int cached = 0;
  for (const auto& v : verdicts) {
    phases.push_back(v.phase_seconds);
    times.push_back(v.seconds);
    cached += v.cached;
  }
  std::sort(times.begin(), times.end());
  auto pct = [&](double p) {
    if (times.empty()) return 0.0;
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(times.size()))) - 1;
    return times[std::min(k, times.size() - 1)];
  };
  fmt::print(stderr, "\nstats: {} obligation{} ({} from the cache): per obligation median {:.3f} s, p95 {:.3f} s, max {:.3f} s\n",
             verdicts.size(), verdicts.size() == 1 ? "" : "s", cached, pct(0.5), pct(0.95), pct(1.0));
  fmt::print(stderr, "{}", verify::phase_table(verify::phase_totals(phases), wall_seconds));
}

// The claim of pair i: --claim once for every pair, or once per pair in order ("exact" without it).
std::string claim_of(const VerifyOptions& o, std::size_t i) {
  if (o.claim.empty()) return "exact";
  return o.claim.size() == 1 ? o.claim[0] : o.claim[i];
}

int replay(const VerifyOptions& o) {
  const std::string& src_path = o.src[0];
  const std::string& tgt_path = o.tgt[0];
  const std::string claim = claim_of(o, 0);
  const std::string& dir = o.inputs_dir[0];
  Routine src = load_checked_routine(src_path), tgt = load_checked_routine(tgt_path);
  preflight_memory(parallel_pairs_memory({{&src, &tgt}}, "interp", 1,
                                         "the replay: source and target on the interpreter, every node as "
                                         "f64 cells"),
                   o.max_memory, tgt_path);
  std::optional<double> rel = verify::parse_claim(claim);
  std::vector<std::string> nodes;
  for (const Node* n : src.outputs()) nodes.push_back(n->name);
  if (std::string why = verify::pair_mismatch(src, tgt, nodes); !why.empty())
    throw UserError(kExitMalformed, tgt_path, 0, 0, why);
  TensorMap in;
  for (const Node* n : src.inputs()) {
    std::string path = (std::filesystem::path(dir) / (n->name + ".npy")).string();
    if (!std::filesystem::exists(path))
      throw UserError(kExitMissingInput, path, 0, 0, fmt::format("no input file for {}", n->name));
    Tensor t = read_npy(path);
    check_input_file(*n, t, path);
    in[n->name] = std::move(t);
  }
  verify::PairRunner runner(src, tgt, verify::claim_checks(nodes, rel));
  auto m = runner.run(in);
  if (m) {
    fmt::print("replay: the claim '{}' fails on the inputs in {}: {}\n", claim, dir, m->text());
    return kExitRefuted;
  }
  fmt::print("replay: the claim '{}' holds on the inputs in {} (one input set: not a proof)\n", claim, dir);
  return kExitOk;
}

// Options that name this run's inputs, its report or its gate: a single obligation's repro leaves
// them out (they change no verdict).
bool left_out_of_repro(const std::string& name) {
  static const std::set<std::string> names = {"--src",    "--tgt",    "--claim",  "--obligation", "--baseline",
                                              "--write-baseline", "-o", "--output", "--format", "--expect",
                                              "--details", "--source-root", "--stats", "--report"};
  return names.count(name) > 0;
}

// The command that verifies one input alone (`unit`: "FILE" or "--src A --tgt B --claim C"): this
// run's options without its inputs and without what left_out_of_repro names.
std::string single_input_command(const VerifyOptions& o, const std::string& unit) {
  const std::vector<std::string>& args = command_arguments();
  std::size_t i = 0;
  while (i < args.size() && args[i] != "verify") ++i;
  std::string kept;
  for (++i; i < args.size(); ++i) {
    const std::string& tok = args[i];
    if (tok.size() < 2 || tok[0] != '-') continue;  // an input (positional)
    const std::string name = tok.substr(0, tok.find('='));
    const CLI::Option* opt = o.app ? o.app->get_option_no_throw(name) : nullptr;
    const bool takes_value = opt && opt->get_items_expected_min() > 0 && tok.find('=') == std::string::npos;
    const bool drop = left_out_of_repro(name);
    if (!drop) kept += " " + shell_quote(tok);
    if (takes_value && i + 1 < args.size()) {
      ++i;
      if (!drop) kept += " " + shell_quote(args[i]);
    }
  }
  return "flashproof verify " + unit + kept;
}

void check_inputs(const VerifyOptions& o) {
  if (o.src.size() != o.tgt.size())
    throw UserError(kExitUsage, "", 0, 0,
                    fmt::format("--src and --tgt go together: {} --src for {} --tgt", o.src.size(), o.tgt.size()));
  if (o.files.empty() && o.src.empty())
    throw UserError(kExitUsage, "", 0, 0, "nothing to verify: give FILE..., or --src A.fp --tgt B.fp --claim ...");
  if (o.claim.size() > 1 && o.claim.size() != o.src.size())
    throw UserError(kExitUsage, "", 0, 0,
                    fmt::format("--claim: give one claim for every pair or one per pair ({} claims for {} pairs)",
                                o.claim.size(), o.src.size()));
  if (!o.claim.empty() && o.src.empty())
    throw UserError(kExitUsage, "", 0, 0, "--claim is a hand-written pair's: give --src and --tgt");
  if (!o.inputs_dir.empty() && (o.src.size() != 1 || !o.files.empty() || o.inputs_dir.size() != 1))
    throw UserError(kExitUsage, "", 0, 0, "--inputs replays one pair: give one --src and one --tgt, and no FILE");
}

// Why the tier applied nothing to a program, and the setting that would change it.
std::pair<std::string, std::string> nothing_applied_reason(const Config& config, bool declined) {
  std::vector<std::string> gates;
  for (const Member& m : tier_members())
    if (m.gate_on(config)) gates.push_back(m.gate);
  if (gates.empty()) {
    std::string keys;
    for (const Member& m : tier_members()) keys += (keys.empty() ? "" : ", ") + m.gate;
    return {"every member's gate is off",
            fmt::format("turn one on: --set KEY=true for a gate among {}, or --profile approximate for every "
                        "gate (flashproof list-rewrites)",
                        keys)};
  }
  if (declined)
    return {"every candidate declined",
            "see each decline's hint below; flashproof rewrite FILE --explain shows the whole search"};
  return {fmt::format("no candidate of {} matched", fmt::join(gates, ", ")),
          "flashproof list-rewrites says what each member matches; flashproof rewrite FILE --explain shows the "
          "search"};
}

// The tier's tasks and findings on one program.
void add_program(VerifyOptions& o, const Config& config, const std::string& file, std::vector<verify::Task>& tasks,
                 verify::ReportContext& ctx) {
  Routine r = load_checked_routine(file);
  // The tier's output is checked as `run` checks it (pipeline/checked_tier.h): a malformed one,
  // like a tier that does not converge, is a bug reported with the command that reproduces it.
  verify::TierTasks tt = verify::tier_tasks(r, config, o.tier, file, single_input_command(o, shell_quote(file)));
  check_tier_output(tt.result);
  for (const auto& n : tt.result.notes)
    if (std::find(ctx.notes.begin(), ctx.notes.end(), n) == ctx.notes.end()) ctx.notes.push_back(n);
  std::vector<verify::Finding> declines = verify::decline_findings(tt.result, r, file);
  if (tt.tasks.empty()) {
    auto [why, hint] = nothing_applied_reason(config, !declines.empty());
    ctx.findings.push_back(verify::nothing_applied(file, why, hint));
  }
  for (auto& f : declines) ctx.findings.push_back(std::move(f));
  for (auto& t : tt.tasks) tasks.push_back(std::move(t));
}

void keep_selected_obligations(const std::vector<std::string>& selected, std::vector<verify::Task>& tasks) {
  if (selected.empty()) return;
  std::vector<std::string> known;
  for (const auto& t : tasks) known.push_back(t.id);
  for (const auto& id : selected)
    if (std::find(known.begin(), known.end(), id) == known.end())
      throw UserError(kExitUsage, "", 0, 0,
                      known.empty() ? fmt::format("--obligation {}: no such obligation (the tier applied no "
                                                  "rewrite, so there are none)",
                                                  id)
                                    : fmt::format("--obligation {}: no such obligation (known: {})", id,
                                                  fmt::join(known, ", ")));
  std::vector<verify::Task> kept;
  for (auto& t : tasks)
    if (std::find(selected.begin(), selected.end(), t.id) != selected.end()) kept.push_back(std::move(t));
  tasks = std::move(kept);
}

// --report FORMAT=FILE values as (format, path); a usage error for a malformed one.
std::vector<std::pair<std::string, std::string>> extra_reports(const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<std::string> formats = report_formats();
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    const std::string format = spec.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == spec.size() ||
        std::find(formats.begin(), formats.end(), format) == formats.end())
      throw UserError(kExitUsage, "", 0, 0,
                      fmt::format("--report {}: expected FORMAT=FILE with FORMAT one of {}", spec, fmt::join(formats, ", ")));
    out.emplace_back(format, spec.substr(eq + 1));
  }
  return out;
}

// In a run of several inputs, obligation ids repeat across inputs: their counterexample cases and
// dumped queries get the input's stem in front ("attn.1.x"), and an index where stems repeat.
void name_artifacts(std::size_t inputs, std::vector<verify::Task>& tasks) {
  if (inputs < 2) return;
  std::map<std::string, int> seen;
  for (auto& t : tasks) {
    std::string name = std::filesystem::path(t.file).stem().string() + "." + t.id;
    const int n = seen[name]++;
    t.artifact_name = n == 0 ? name : fmt::format("{}-{}", name, n + 1);
  }
}

verify::Baseline read_baseline_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw UserError(kExitMissingInput, path, 0, 0,
                    "no baseline here (write one with verify --write-baseline FILE, or leave out --baseline)");
  // A regular file only, up to the baseline's cap (core/support/input_file.h).
  return verify::parse_baseline(
      read_input_file(path, InputFileRules{verify::kMaxBaselineBytes, false, "a flashproof baseline (JSON)"}), path);
}

void run_verify(VerifyOptions& o) {
  check_inputs(o);
  std::vector<std::pair<std::string, std::string>> outputs = {{"-o", o.output}, {"--write-baseline", o.write_baseline}};
  for (const auto& [format, path] : extra_reports(o.reports)) outputs.emplace_back("--report " + format, path);
  check_distinct_outputs(outputs);
  if (!o.inputs_dir.empty()) {
    set_exit_code(replay(o));
    return;
  }
  // --fail-on's and --expect's values are each one of its set (tools/shared_options.h).
  verify::Gate gate;
  gate.fail_on = o.fail_on == "refuted" ? verify::FailOn::Refuted : verify::FailOn::Unknown;
  gate.expect = o.expect == "applied"    ? verify::Expect::Applied
                : o.expect == "anything" ? verify::Expect::Anything
                                         : verify::Expect::Obligations;
  // Read before anything runs: a malformed baseline is an error, not a run lost at the end.
  std::optional<verify::Baseline> baseline;
  if (!o.baseline.empty()) baseline = read_baseline_file(o.baseline);
  o.engine.run_budget_s = o.run_budget_s;
  const verify::CacheMode cache_mode = verify::resolve_cache_mode(o.cache_mode, o.no_cache);
  o.engine.use_cache = cache_mode != verify::CacheMode::Off;
  o.engine.refresh_cache = cache_mode == verify::CacheMode::Refresh;

  auto t0 = std::chrono::steady_clock::now();
  verify::ReportContext ctx;
  ctx.command = command_line();
  ctx.details = o.details;
  ctx.source_root = o.source_root;
  std::vector<verify::Task> tasks;
  if (!o.files.empty()) {
    Config config = o.config.resolve();
    warn_gated_off_selections(config, o.tier);
    ctx.config = describe_config(config);
    for (const auto& file : o.files) {
      if (o.files.size() > 1 && !o.no_progress) fmt::print(stderr, "verify: running the tier on {}\n", file);
      add_program(o, config, file, tasks, ctx);
      ctx.inputs.push_back(file);
    }
  }
  for (std::size_t i = 0; i < o.src.size(); ++i) {
    Routine src = load_checked_routine(o.src[i]), tgt = load_checked_routine(o.tgt[i]);
    const std::string claim = claim_of(o, i);
    const std::string unit =
        fmt::format("--src {} --tgt {} --claim {}", shell_quote(o.src[i]), shell_quote(o.tgt[i]), shell_quote(claim));
    for (auto& t : verify::pair_tasks(std::move(src), std::move(tgt), claim, o.tgt[i], single_input_command(o, unit),
                                      o.engine.limits))
      tasks.push_back(std::move(t));
    ctx.inputs.push_back(o.src[i] + " -> " + o.tgt[i]);
  }
  keep_selected_obligations(o.obligations, tasks);
  name_artifacts(ctx.inputs.size(), tasks);
  // A hand-written pair runs at its own sizes: too big for the machine is refused here, before
  // anything runs. The tier's obligations are proved for all sizes where their lifts apply and
  // check small instances; a concrete check at the routine's sizes (a lift's fallback) is held to
  // the same limit per obligation and ends unknown (resource limit) instead.
  if (!o.src.empty()) preflight_memory(trials_memory(tasks, o.engine.jobs), o.max_memory, o.tgt[0]);
  if (!o.files.empty()) {
    const MemoryLimit limit = resolve_memory_limit(o.max_memory);
    o.engine.interpreter_memory_bytes = limit.bytes;
    if (limit.bytes && o.engine.jobs > 1) *o.engine.interpreter_memory_bytes /= o.engine.jobs;
    o.engine.interpreter_memory_origin =
        o.engine.jobs > 1 ? fmt::format("{}, shared by {} jobs", limit.origin, o.engine.jobs) : limit.origin;
  }
  std::unique_ptr<verify::Progress> progress;
  if (!o.no_progress && !tasks.empty()) {
    progress = std::make_unique<verify::Progress>(static_cast<int>(tasks.size()),
                                                  ::isatty(STDERR_FILENO) != 0, stderr);
    o.engine.progress = progress.get();
  }
  std::vector<verify::Verdict> verdicts = verify::verify_tasks(tasks, o.engine);
  if (progress) progress->stop();
  ctx.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (baseline) {
    std::set<std::string> files(o.files.begin(), o.files.end());
    files.insert(o.tgt.begin(), o.tgt.end());
    ctx.gate = gate;
    ctx.gate.baseline = verify::compare_with_baseline(*baseline, o.baseline, verdicts, ctx.findings, files,
                                                      gate.fail_on == verify::FailOn::Unknown);
    for (const auto& f : ctx.gate.baseline->lost) ctx.findings.push_back(f);
  } else {
    ctx.gate = gate;
  }
  if (!o.write_baseline.empty())
    write_text_output(o.write_baseline, verify::baseline_json(verify::baseline_of(verdicts, ctx.findings)));
  write_text_output(o.output, verify::render_report(o.format, verdicts, ctx));
  for (const auto& [format, path] : extra_reports(o.reports))
    write_text_output(path, verify::render_report(format, verdicts, ctx));
  if (o.stats) print_stats(verdicts, ctx.seconds);
  set_exit_code(verify::gate_exit_code(verdicts, ctx.findings, ctx.gate));
}

void setup_verify(CLI::App& app) {
  auto o = std::make_shared<VerifyOptions>();
  CLI::App* sub = app.add_subcommand(
      "verify",
      "Discharge verification obligations: the rewrite tier's on each FILE and those of hand-written --src/--tgt "
      "pairs, in one report; the exit code is the CI gate's (--fail-on, --expect, --baseline)");
  o->app = sub;
  sub->add_option("FILE", o->files,
                  "Routines (.fp or .te) to rewrite with the tier and verify: one run, one report for them all");
  sub->add_option("--src", o->src,
                  "Source routine of a hand-written pair (translation validation); repeat --src/--tgt for several "
                  "pairs");
  sub->add_option("--tgt", o->tgt, "Target routine of a hand-written pair (the n-th --tgt goes with the n-th --src)");
  sub->add_option("--claim", o->claim,
                  "What the pair claims: exact (the default); bounded (the target is one of a registered rewrite's "
                  "forms of the source, written your own way, within that rewrite's certified bounds); or "
                  "bounded:REL (|tgt - src| <= REL·|src|). Once for every pair, or once per pair");
  sub->add_option(
      "--inputs", o->inputs_dir,
      "Replay the pair on the inputs DIR/NAME.npy (a counterexample case); exit 1 when the claim fails");
  sub->add_option("--expect", o->expect,
                  "What the gate expects besides the verdicts: obligations (the default: a run with no obligation "
                  "at all fails, exit 3), applied (every decline of an enabled shape and every program with "
                  "nothing applied fails, exit 3) or anything")
      ->check(CLI::IsMember({"obligations", "applied", "anything"}))
      ->capture_default_str();
  sub->add_option("--baseline", o->baseline,
                  "Fail only on what is new or worse than in this baseline (written by --write-baseline): a new "
                  "refuted, error or unknown verdict, a narrower scope, a new decline, a lost proof");
  sub->add_option("--write-baseline", o->write_baseline,
                  "Record this run's verdicts and findings as a baseline here (stable ids: file, rewrite, nodes, "
                  "claim)");
  sub->add_flag("--details", o->details,
                "Text report: the solver, the limits and every verdict's full certificate (the default is one line "
                "per obligation and a block per verdict that is not proved)");
  sub->add_option("--source-root", o->source_root,
                  "SARIF: the directory file locations are relative to (uriBaseId SRCROOT; default: the working "
                  "directory)");
  sub->add_option("--obligation", o->obligations,
                  "Discharge only this obligation id (repeatable), as the report lists it: APPLICATION.CLAIM");
  add_tier_options(*sub, o->tier);
  add_format_option(*sub, o->format, report_formats());
  add_output_option(*sub, o->output, "the report");
  sub->add_option("--report", o->reports,
                  "Also write the report in FORMAT to FILE (repeatable), e.g. --report sarif=out.sarif --report "
                  "junit=out.xml: one run, every format a CI wants");
  add_fail_on_option(*sub, o->fail_on);
  sub->add_option("--timeout", o->engine.limits.timeout_s,
                  "Wall-clock backstop per solver query, seconds (default 60)")
      ->transform(seconds());
  sub->add_option("--budget", o->engine.limits.budget_s,
                  "Wall-clock budget per obligation, seconds, bounding every phase (solver, search, MPFR, "
                  "reduction); running out gives unknown (resource limit) naming the phase (default 600)")
      ->transform(seconds());
  sub->add_option("--run-budget", o->run_budget_s, "Wall-clock budget of the whole run, seconds (default: none)")
      ->transform(seconds());
  sub->add_option("--rlimit", o->engine.limits.rlimit,
                  "Z3 resource limit per query (deterministic; default 20000000; 0 would mean no limit "
                  "to Z3, so it is refused)")
      ->transform(integer_in<std::uint64_t>(1, kMaxRlimit));
  sub->add_option("--jobs", o->engine.jobs, "Obligations discharged in parallel (default 1)")
      ->transform(thread_count());
  sub->add_option("--dump-smt", o->engine.dump_smt_dir,
                  "Write every solver query as SMT-LIB2 into DIR (replay: z3 FILE)");
  sub->add_option("--cache-dir", o->engine.cache_dir,
                  "Proof cache directory (default ${XDG_CACHE_HOME:-~/.cache}/flashproof/proofs; none when "
                  "neither XDG_CACHE_HOME nor HOME is set)");
  sub->add_option("--cache", o->cache_mode,
                  "Proof cache use: use (answer from it, store new verdicts), refresh (recompute everything, "
                  "store it) or off (default $FLASHPROOF_PROOF_CACHE, else use)");
  sub->add_flag("--no-cache", o->no_cache, "Neither read nor write the proof cache (--cache=off)");
  CLI::Option* case_dir = add_case_dir_option(*sub, o->engine.cex_dir,
                                              "counterexample cases, one directory per refuted obligation "
                                              "(default flashproof-cex)");
  add_deprecated_alias(*sub, "--cex-dir", case_dir, o->engine.cex_dir);
  add_seed_option(*sub, o->engine.limits.seed,
                  "every random choice: the counterexample search's inputs and the bound checks' rows "
                  "(default 1)");
  sub->add_option("--max-terms", o->engine.limits.max_terms,
                  "Symbolic-execution term budget (default 4000000)")
      ->transform(integer_in<std::uint64_t>(1, kMaxTerms));
  sub->add_option("--search-trials", o->engine.limits.search_trials,
                  "Counterexample-search trials (default 1500)")
      ->transform(integer_in(1, std::numeric_limits<int>::max()));
  sub->add_option("--real-n", o->engine.limits.real_n,
                  "Per-pattern reals certificate for n = 1..N keys as well as the induction (default 0: only when "
                  "the induction is not proved, then n <= 3)")
      ->transform(integer_in(0, kMaxRealN));
  sub->add_option("--real-timeout", o->engine.limits.real_timeout_s,
                  "Backstop per reals query, seconds (default 5)")
      ->transform(seconds());
  sub->add_option("--mpfr-rows", o->engine.limits.mpfr_rows,
                  "MPFR reference rows per precision (default 10000)")
      ->transform(integer_in(1, std::numeric_limits<int>::max()));
  sub->add_option("--exp-ulp", o->engine.limits.exp_ulp,
                  "Assumed fp_exp64 error in binary64 ulps (default 0.52)")
      ->transform(finite_in(0, kMaxExpUlp));
  sub->add_flag("--no-progress", o->no_progress, "Do not report progress on standard error");
  sub->add_flag("--stats", o->stats,
                "After the report, print on standard error where the time went: per-obligation median, p95 and "
                "max, and a table of the phases (lift, symbolic execution, solver, certificate parts, "
                "cross-checks, search)");
  add_max_memory_option(*sub, o->max_memory);
  add_config_options(*sub, o->config);
  sub->callback([o] { run_verify(*o); });
}

}  // namespace
FP_REGISTER_COMMAND("verify", setup_verify);
}  // namespace fp::cli
