// The `rewrite` target: the tier on random attention programs and look-alikes, under every gate
// combination, held to what `flashproof diff --rewrite` holds it to.
//
// Property: the tier's output is well formed and the tier converges; a decline leaves the routine
// as it was; rewriting the output again changes nothing; and on the case's inputs
// (fuzz/hostile_data.h) every output of the rewrite agrees with the original's — bitwise where no
// bounded claim reaches it, within the certified bound where the diff plan has one
// (verify/diff_plan.h), NaN positions exactly. An output held only to the stand-in tolerance
// (verify/diff_plan.h: no certified statement) is counted when outside it, never a finding. A
// look-alike rewritten into a different result fails the same comparison.
//
// Input: an attention case (fuzz/attention_case.h, JSON).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/npy.h"
#include "core/text_printer.h"
#include "fuzz/attention_case.h"
#include "fuzz/target.h"
#include "pipeline/checked_tier.h"
#include "rewrites/config.h"
#include "rewrites/tier.h"
#include "verify/diff_plan.h"

namespace fp::fuzz {
namespace {

std::string applied_shapes(const RewriteResult& res) {
  std::set<std::string> shapes;
  for (const Application& a : res.applications) shapes.insert(a.shape);
  return fmt::format("{}", fmt::join(shapes, "+"));
}

void add_decisions(const RewriteResult& res, std::set<std::string>& features) {
  for (const Application& a : res.applications) features.insert("apply:" + a.shape);
  for (const Decline& d : res.declines) features.insert("decline:" + d.code);
}

Execution run_rewrite(const std::string& input, const std::string& name) {
  const AttentionCase c = parse_attention_case(input, name);
  const Config cfg = make_config("default", c.settings, {});  // checked when the case was parsed
  const Routine original = build_case_routine(c);
  Execution x;
  x.features.insert("lookalike:" + std::string(lookalike_name(c.lookalike)));
  auto fail = [&](const char* kind, std::string where, std::string message, const Routine* rewritten) {
    Finding f{kind, std::move(where), std::move(message), {{"original.fp", print_routine(original)}}};
    if (rewritten) f.files["rewritten.fp"] = print_routine(*rewritten);
    x.finding = std::move(f);
    return x;
  };
  RewriteResult res;
  try {
    res = run_tier_checked(original, cfg);
  } catch (const TierDidNotConverge& e) {
    return fail("tier-did-not-converge", e.member(), e.what(), nullptr);
  } catch (const MalformedRewrite& e) {
    return fail("malformed-rewrite", "tier", e.what(), nullptr);
  }
  add_decisions(res, x.features);
  if (res.applications.empty()) {
    if (!equal(res.routine, original))
      return fail("decline-changed-routine", "tier", "no rewrite applied, yet the routine changed", &res.routine);
    return x;
  }
  const RewriteResult again = run_tier_checked(res.routine, cfg);
  if (!again.applications.empty())
    return fail("not-idempotent", again.applications[0].shape,
                fmt::format("rewriting the tier's output again applies {}", again.applications[0].shape), &res.routine);

  verify::RewriteDiffPlan plan = verify::plan_rewrite_diff(original, res);
  const TensorMap in = case_inputs(c, original);
  // A finding carries the inputs and the `diff --rewrite` command that shows every cell.
  auto with_inputs = [&](Execution e) {
    if (!e.finding) return e;
    std::string cmd = "flashproof diff original.fp --executor interp --vs interp --rewrite";
    for (const std::string& s : c.settings) cmd += " --set " + s;
    for (const auto& [node, t] : in) {
      e.finding->files["inputs/" + node + ".npy"] = serialize_npy(t);
      cmd += fmt::format(" --input {}=inputs/{}.npy", node, node);
    }
    e.finding->files["README.txt"] =
        fmt::format("{}\n\nThe same comparison with diff's report (every output, the certified statement):\n  {}\n",
                    e.finding->message, cmd);
    return e;
  };
  TensorMap want = interpret(plan.source, in);
  plan.complete(want, [](const Routine& r, const TensorMap& inputs) { return interpret(r, inputs); });
  const TensorMap got = interpret(res.routine, in);
  for (const Node* n : res.routine.outputs()) {
    const verify::NodeCheck check = plan.check_for(n->name);
    const verify::OutputComparison cmp = verify::compare_output(check, want, got);
    const std::string basis = verify::comparison_basis_name(check.kind);
    x.features.insert("basis:" + basis);
    if (cmp.ok()) continue;
    if (check.kind == verify::NodeCheck::Kind::StandIn) {
      x.features.insert("outside:stand-in");
      continue;
    }
    const std::string where = fmt::format("{}{}", applied_shapes(res),
                                          c.lookalike == Lookalike::None ? "" : " on " + std::string(lookalike_name(c.lookalike)));
    return with_inputs(
        fail(check.kind == verify::NodeCheck::Kind::Bitwise ? "bitwise-mismatch" : "certified-mismatch", where,
             fmt::format("output {} ({} comparison): {} of {} cells fail; first: {}", n->name, basis, cmp.mismatches,
                         cmp.cells, cmp.first->text()),
             &res.routine));
  }
  return x;
}

}  // namespace

Target rewrite_target() {
  return Target{.name = "rewrite",
                .description = "the tier on random attention programs and look-alikes vs the original: bitwise or certified",
                .input_kind = "attention case (JSON, fuzz/attention_case.h)",
                .generate = drawing_from(rc::gen::map(gen_attention_case(), attention_case_text)),
                .run = run_rewrite};
}

}  // namespace fp::fuzz
