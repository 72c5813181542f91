// The `verify` target: the verifier against planted bugs and against correct rewrites.
//
// Property: on a random attention program (no look-alike) under random gates, pick one
// application of the tier; with a mutant picked among those its shape declares
// (ShapeInfo::mutants, rewrites/mutant.h) in place of the target, the worst verdict over the
// application's obligations must be refuted; with the unmutated target, no obligation may be
// refuted (nor end in an error). Each execution reports the mutant as `killed:<shape>/<id>` or
// `survived:<shape>/<id>`, so a campaign's final stats give the mutation score; a mutant the
// interpreter cannot tell from the target on this program (one key, every score NaN) is
// `equivalent-here:<shape>/<id>`, neither.
//
// Input: a header line `application A mutant M` (M = -1 for the unmutated target; both taken
// modulo what the case has), then an attention case (fuzz/attention_case.h, JSON).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/text_printer.h"
#include "fuzz/attention_case.h"
#include "fuzz/case_header.h"
#include "fuzz/corpus.h"
#include "fuzz/hostile_data.h"
#include "fuzz/target.h"
#include "rewrites/config.h"
#include "rewrites/members.h"
#include "verify/compare.h"
#include "verify/engine.h"

namespace fp::fuzz {
namespace {

const char* const kExpectedHeader =
    "expected the header `application A mutant M` (A >= 0, M >= -1), then an attention case";

rc::Gen<std::string> verify_input() {
  AttentionCaseOptions o;
  o.allow_lookalikes = false;
  o.allow_hostile = false;
  o.max_seq = 6;
  o.max_layers = 1;
  return rc::gen::apply(
      [](AttentionCase c, std::int64_t app, std::int64_t mutant) {
        // Every member must be on for there to be anything to verify; their other keys stay random.
        for (const Member& m : tier_members()) {
          std::erase_if(c.settings, [&](const std::string& s) { return s.rfind(m.gate + "=", 0) == 0; });
          c.settings.insert(c.settings.begin(), m.gate + "=true");
        }
        return case_header_text("application", app, "mutant", mutant, attention_case_text(c));
      },
      gen_attention_case(o), rc::gen::inRange<std::int64_t>(0, 4),
      rc::gen::weightedOneOf<std::int64_t>({{1, rc::gen::just<std::int64_t>(-1)}, {4, rc::gen::inRange<std::int64_t>(0, 64)}}));
}

// Engine options of one execution: no cache, counterexamples into a scratch folder removed after.
verify::EngineOptions engine_options(const std::string& scratch) {
  verify::EngineOptions o;
  o.use_cache = false;
  o.limits.real_n = 1;
  o.limits.mpfr_rows = 1000;
  o.limits.search_trials = 400;
  o.limits.budget_s = 30;
  // The campaign's -max_total_time bounds the run too: what it cuts short ends unknown.
  o.run_budget_s = seconds_left(120);
  o.reduce_case_sizes = false;
  o.cex_dir = scratch;
  return o;
}

// True when the two routines' outputs are bitwise equal on 16 random input sets (plain and
// FP-hostile).
bool indistinguishable(const Routine& a, const Routine& b) {
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    const TensorMap in = hostile_inputs(a, seed, seed % 2 == 0 ? 0 : 20);
    if (verify::compare_outputs(verify::bitwise_output_checks(a), interpret(a, in), interpret(b, in))) return false;
  }
  return true;
}

// The verifier's own counterexample of a refuted obligation, reduced in size
// (verify/size_reduction.h), as the finding's counterexample/ folder.
void attach_reduced_counterexample(const std::vector<verify::Task>& tasks, const std::string& claim,
                                   const std::string& scratch, Finding& f) {
  verify::EngineOptions o = engine_options(scratch);
  o.reduce_case_sizes = true;
  for (const verify::Task& t : tasks) {
    if (t.obligation.claim != claim) continue;
    const verify::Verdict v = verify::discharge(t, o);
    if (v.counterexample)
      for (const auto& entry : std::filesystem::recursive_directory_iterator(v.counterexample->dir))
        if (entry.is_regular_file())
          f.files["counterexample/" + std::filesystem::relative(entry.path(), v.counterexample->dir).string()] =
              read_case_file(entry.path().string());
    break;
  }
  std::filesystem::remove_all(scratch);
}

int severity(verify::VerdictKind k) {
  using K = verify::VerdictKind;
  return k == K::Refuted ? 3 : k == K::Error ? 2 : k == K::Unknown ? 1 : 0;
}

Execution run_verify(const std::string& input, const std::string& name) {
  const CaseHeader vc = parse_case_header(input, name, "application", 0, "mutant", -1, INT64_MAX, kExpectedHeader);
  const AttentionCase c = parse_attention_case(vc.body, name);
  const Routine original = build_case_routine(c);
  verify::TierTasks tt =
      verify::tier_tasks(original, make_config("default", c.settings, {}), {}, name, "flashproof verify");
  Execution x;
  if (tt.result.applications.empty()) {
    x.features.insert("verify:no-application");
    return x;
  }
  const std::size_t app_index = static_cast<std::size_t>(vc.first) % tt.result.applications.size();
  const Application& app = tt.result.applications[app_index];
  std::vector<verify::Task> tasks;
  for (const verify::Task& t : tt.tasks)
    if (t.app.shape == app.shape && t.app.round == app.round && t.app.statements == app.statements) tasks.push_back(t);
  if (tasks.empty()) {
    x.features.insert("verify:no-obligation");
    return x;
  }
  const std::string scratch = (std::filesystem::temp_directory_path() /
                               fmt::format("flashproof-fuzz-verify-{}", ::getpid())).string();
  const verify::EngineOptions options = engine_options(scratch);
  const ShapeInfo* shape = find_shape(app.shape);
  std::vector<Mutant> mutants;
  if (vc.second >= 0 && shape && shape->mutants) mutants = shape->mutants(tasks[0].tgt, tasks[0].app);
  // A mutant only some sizes make well formed (one reading query rows with a key index when
  // sq != sk) is no program here: not planted.
  std::erase_if(mutants, [](const Mutant& m) { return !check_routine(m.tgt).empty(); });
  std::optional<verify::Verdict> worst;
  const Mutant* planted = mutants.empty() ? nullptr : &mutants[static_cast<std::size_t>(vc.second) % mutants.size()];
  if (planted)
    for (verify::Task& t : tasks) t.tgt = planted->tgt;
  for (verify::Verdict& v : verify::verify_tasks(tasks, options)) {
    x.features.insert(fmt::format("verdict:{}.{}", v.claim, verify::verdict_kind_name(v.kind)));
    if (!worst || severity(v.kind) > severity(worst->kind)) worst = std::move(v);
  }
  std::filesystem::remove_all(scratch);
  Finding f;
  f.files["src.fp"] = print_routine(tasks[0].src);
  if (planted) {
    const std::string id = app.shape + "/" + planted->id;
    if (worst->kind == verify::VerdictKind::Refuted) {
      x.features.insert("killed:" + id);
      return x;
    }
    // A planted bug may change nothing on this program (every score NaN, one key, one block): a
    // mutant the interpreter cannot tell from the target on random inputs is not counted.
    if (indistinguishable(tasks[0].tgt, planted->tgt)) {
      x.features.insert("equivalent-here:" + id);
      return x;
    }
    x.features.insert("survived:" + id);
    f.kind = "mutant-survived";
    f.where = id;
    f.message = fmt::format("the planted bug '{}' ({}) came out {}: {}", planted->id, planted->description,
                            verify::verdict_kind_name(worst->kind), worst->message);
    f.files["mutant.fp"] = print_routine(planted->tgt);
  } else if (worst->kind == verify::VerdictKind::Refuted || worst->kind == verify::VerdictKind::Error) {
    f.kind = worst->kind == verify::VerdictKind::Refuted ? "correct-rewrite-refuted" : "verify-error";
    f.where = app.shape + "/" + worst->claim;
    f.message = fmt::format("the unmutated rewrite's {} came out {}: {}", worst->claim,
                            verify::verdict_kind_name(worst->kind), worst->message);
    f.files["tgt.fp"] = print_routine(tasks[0].tgt);
    if (worst->kind == verify::VerdictKind::Refuted) attach_reduced_counterexample(tasks, worst->claim, scratch, f);
  } else {
    x.features.insert("unmutated:" + app.shape);
    return x;
  }
  x.finding = std::move(f);
  return x;
}

}  // namespace

Target verify_target() {
  return Target{.name = "verify",
                .description = "planted mutants of each rewrite must be refuted; an unmutated rewrite never refuted",
                .input_kind = "`application A mutant M` line + attention case (JSON)",
                .generate = drawing_from(verify_input()),
                .run = run_verify};
}

}  // namespace fp::fuzz
