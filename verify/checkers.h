#pragma once
// Verification strategies (checkers), registered by id. A member names one for each claim its
// shapes make (ClaimSpec::checker, rewrites/member.h); the engine looks the claim's checker up here
// and names no member, shape or claim itself. An obligation whose claim or checker is not
// registered ends unknown (unsupported construct), never proved.
//
// The engine's own checkers (verify/checkers/, checkers/builtin.h):
//   bitwise                             every covered cell bitwise equal (pair_check.h)
//   relative                            a hand-written bounded:REL pair (pair_check.h)
//   unrecognized-pair                   a hand-written `bounded` pair no member recognizes: unknown, why
//   all-sizes-lift.loop-permutation     loops moved inside a reduction keep every cell's
//                                       summation order, for every extent (loop_permutation_lift.h),
//                                       plus the bitwise check of a small instance
// Each member's checkers live in its proof folder (verify/<member>/) and are registered with one
// line in verify/proofs.cpp; docs/rewrites.md lists them all.

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
  // own reads (a backward's gradients after a rewritten forward, say): the plan given `upstream`. Its checks hold whatever other applications perturb upstream of the
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

// A member's recognition of a hand-written pair (`verify --src A --tgt B --claim bounded`) as one
// of its rewrites: the tasks of the member's own obligations for the pair (their claims, checkers
// and bounds, with the user's target and the sizes and block the target has), covering every
// output; or, when it does not recognize the pair, why not (the first condition that failed).
struct PairRecognition {
  std::vector<Task> tasks;
  std::string why_not;
};
using PairRecognizer = std::function<PairRecognition(const Routine& src, const Routine& tgt, const Limits& limits)>;

// Every member's recognition of the pair, in tier order; the first that recognizes it wins.
// `why_not` lists each member's reason when none does.
PairRecognition recognize_pair(const Routine& src, const Routine& tgt, const Limits& limits);

// The checker an obligation is discharged by: the hand pair's (bitwise or relative), else the one
// its shape declares for its claim. nullptr, with `why`, when none is declared or registered.
const Checker* checker_for(const Task& t, std::string* why);

// Registers `c` (or a member's list of checkers) for the object's lifetime (tests); every id must
// be new.
class ScopedCheckerRegistration {
 public:
  explicit ScopedCheckerRegistration(Checker c);
  explicit ScopedCheckerRegistration(std::vector<Checker> checkers);
  ~ScopedCheckerRegistration();
  ScopedCheckerRegistration(const ScopedCheckerRegistration&) = delete;
  ScopedCheckerRegistration& operator=(const ScopedCheckerRegistration&) = delete;

 private:
  std::vector<std::string> ids_;
};

// What the checkers share.
std::vector<std::string> covered_nodes(const Task& t);
// Where a task's solver queries are dumped (--dump-smt), "" for nowhere.
std::string dump_prefix(const Task& t, const EngineOptions& o);
PairCheckOptions pair_check_options(const Task& t, const EngineOptions& o);

}  // namespace fp::verify
