#pragma once
// Verification strategies (checkers), registered by id. A member names one for each claim its
// shapes make (ClaimSpec::checker, rewrites/member.h); the engine looks the claim's checker up here
// and names no member, shape or claim itself. An obligation whose claim or checker is not
// registered ends unknown (unsupported construct), never proved.
//
// The product's checkers (verify/checkers/, listed one line each in checkers.cpp):
//   bitwise                             every covered cell bitwise equal (pair_check.h)
//   relative                            a hand-written bounded:REL pair (pair_check.h)
//   all-sizes-lift.loop-permutation     loops moved inside a reduction keep every cell's
//                                       summation order, for every extent (value_pass_lift.h),
//                                       plus the bitwise check at the routine's sizes
//   certified-bound.block-fold-sum      the block fold's l against the composed sum: the same check
//                                       with the fold's recurrence (blocks of b), its induction for
//                                       every (n, b) and MPFR rows through the fold (docs/bounds.md §7)
//   certified-bound.block-fold-output   the block fold's O against the composed (p / l)·v per cell,
//                                       relative to Σ(|p| + κ)|v|: its recurrence by term identity,
//                                       its induction for every (n, b), MPFR rows (docs/bounds.md §7)
//   certified-bound.fused-backward      the fused backward's dQ / dK per cell within docs/bounds.md §8:
//                                       term identity with the fused form, the bound confirmed on
//                                       adversarial inputs; else refuted when the pair's f64 shadows
//                                       differ beyond 1e-8, or unknown; its joint plan holds diff
//                                       --rewrite's gradients to §8.1 (fused_backward_diff_plan.h)
//   certified-bound.online-normalizer   an online (max, rescaled sum) recurrence against the
//                                       composed sum: recurrence proof, certified bound,
//                                       downstream bounds (normalizer_check.h, docs/bounds.md)

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "verify/downstream_bounds.h"
#include "verify/engine.h"
#include "verify/pair_check.h"

namespace fp::verify {

struct Checker {
  std::string id;
  std::string description;  // one line
  // Decides `t` into `v` (already filled with the task's identity and limits): kind, reason,
  // message, steps, scope, and the bound or counterexample.
  std::function<void(Verdict& v, const Task& t, const EngineOptions& o)> discharge;
  // Bounded claims: the per-output certified plan of an obligation on `src` (what diff compares
  // with and the differential checks), or nullopt with `why` when the bound has no certified form.
  std::function<std::optional<DownstreamPlan>(const Routine& src, const Application& app, const Obligation& ob,
                                              double exp_ulp, std::string* why)>
      plan;
  // Bounded claims whose bound is stated jointly with how other applications perturb what their
  // own reads (the fused backward's gradients after a rewritten forward, docs/bounds.md §8.1): the
  // plan given `upstream`. Its checks hold whatever other applications perturb upstream of the
  // nodes it read through `upstream`; a plan returns nullopt, with `why`, where a perturbation it
  // cannot carry reaches them. Takes the place of `plan` when set.
  std::function<std::optional<DownstreamPlan>(const Routine& src, const Application& app, const Obligation& ob,
                                              const UpstreamOf& upstream, double exp_ulp, std::string* why)>
      joint_plan;
  // Bounded claims: the relative tolerance of a stand-in comparison, for outputs the claim
  // reaches without a certified bound (never a proof: its violation is unknown, not mismatch).
  std::function<double(const Obligation& ob, double exp_ulp)> stand_in_tolerance;
};

const Checker* find_checker(const std::string& id);
std::vector<std::string> checker_ids();

// The checker an obligation is discharged by: the hand pair's (bitwise or relative), else the one
// its shape declares for its claim. nullptr, with `why`, when none is declared or registered.
const Checker* checker_for(const Task& t, std::string* why);

// Registers `c` for the object's lifetime (tests); its id must be new.
class ScopedCheckerRegistration {
 public:
  explicit ScopedCheckerRegistration(Checker c);
  ~ScopedCheckerRegistration();
  ScopedCheckerRegistration(const ScopedCheckerRegistration&) = delete;
  ScopedCheckerRegistration& operator=(const ScopedCheckerRegistration&) = delete;

 private:
  std::string id_;
};

// What the checkers share.
std::vector<std::string> covered_nodes(const Task& t);
// Where a task's solver queries are dumped (--dump-smt), "" for nowhere.
std::string dump_prefix(const Task& t, const EngineOptions& o);
PairCheckOptions pair_check_options(const Task& t, const EngineOptions& o);

}  // namespace fp::verify
