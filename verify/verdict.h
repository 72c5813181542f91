#pragma once
// The verdict of one verification obligation: a typed value (Alive2's four outcomes plus error),
// with everything a CI gate or an engineer needs to trust or reproduce it — its scope, the solver
// and its version, the limits used, the repro command, the certified bound or the counterexample.
//
//   exact    every covered cell is bitwise equal for every input (NaN = NaN, -0 != +0)
//   bounded  every covered cell is within the certified rounding bound, NaN exactly where the
//            source has NaN
//   refuted  a concrete counterexample, run on the interpreter (real exp), minimized and written
//            as a runnable case
//   unknown  neither proved nor refuted, with the reason; never reported as proved
//   error    bad input (e.g. a source and target with different inputs)
//
// docs/verify.md explains each field; docs/report-schema.md and docs/verify-report.schema.json
// fix the JSON form.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "rewrites/application.h"

namespace fp::verify {

enum class VerdictKind : std::uint8_t { Exact, Bounded, Refuted, Unknown, Error };
const char* verdict_kind_name(VerdictKind k);  // "exact", "bounded", "refuted", "unknown", "error"

enum class UnknownReason : std::uint8_t {
  None,
  Timeout,        // the wall-clock backstop fired (not deterministic: never cached)
  ResourceLimit,  // the solver's rlimit or the symbolic-execution term budget ran out
  Unsupported,    // a construct the engine cannot reason about
  Approximation,  // only an approximated operation (exp as an uninterpreted function) separates
                  // source and target, or the target is not the recurrence a bound is about
};
const char* unknown_reason_name(UnknownReason r);  // "timeout", "resource limit", ...

// The limits a verdict was obtained under; every verdict lists them (mlir-tv: the bounds a proof
// used are flags and appear in every verdict).
struct Limits {
  std::uint64_t rlimit = 20'000'000;    // Z3 resource limit per query (deterministic)
  double timeout_s = 60;                // wall-clock backstop per query
  std::uint64_t max_terms = 4'000'000;  // symbolic-execution term budget per routine pair
  int search_trials = 1500;             // concrete counterexample-search trials per obligation
  int real_n = 0;  // Z3-over-the-reals certificate for n = 1..real_n keys (the induction replaces it; n <= 3 without it)
  double real_timeout_s = 5;            // wall backstop per reals query (nlsat does not honour rlimit
                                        // promptly; an undecided pattern is reported unknown)
  int mpfr_rows = 10000;                // MPFR reference rows per (storage, state) pair
  int mpfr_bits = 200;                  // MPFR reference precision
  double exp_ulp = 0.52;                // assumed error of fp_exp64 in binary64 ulps
  std::uint64_t seed = 1;               // seed of every random choice (inputs, rows)
  double budget_s = 600;                // wall-clock budget per obligation, every phase together
                                        // (core/support/deadline.h); running out ends in unknown
                                        // (resource limit) naming the phase
};

struct Scope {
  bool all_sizes = false;
  std::string text;  // "all sizes" or "sizes up to: ..." with the limits
};

struct SolverInfo {
  std::string name = "z3";
  std::string version;  // Z3_get_full_version
};

// One part of a bounded verdict's certificate: (i) recurrence, (a) reals, (b) MPFR, (c)
// tightness, differential. status: "proved", "confirmed", "unknown", "failed", "skipped".
struct CertificatePart {
  std::string name;
  std::string status;
  std::string detail;
};

struct DownstreamBound {
  std::string node;
  std::string formula;  // e.g. "|P' - P| <= rho_P |P|"
  double value = 0;
  std::string relative_to;    // "|P|" or "sum |P v|"
  double worst_observed = 0;  // fraction of the bound in the differential run
};

struct BoundInfo {
  std::string formula;       // the symbolic formula
  std::string instantiated;  // with n, u_storage, u_state, exp ulp filled in
  double value = 0;          // the relative bound REL
  std::string relative_to;   // "|l_src|"
  std::int64_t n = 0;
  std::string exp_assumption;
  double worst_observed = 0;  // worst |l_tgt - l_src| / (REL |l_src|) over every check
  double tightness = 0;       // worst observed / bound, on the MPFR rows
  std::vector<DownstreamBound> downstream;
  std::vector<CertificatePart> parts;
};

// One extent the written case shrank (verify/size_reduction.h): the obligation's routines have
// `original` where the case has `reduced`.
struct ExtentReduction {
  std::int64_t original = 0;
  std::int64_t reduced = 0;
  bool operator==(const ExtentReduction&) const = default;
};

// "64→2, 16→1"
std::string extents_text(const std::vector<ExtentReduction>& extents);

struct Counterexample {
  std::string dir;      // the written case (src.fp, tgt.fp, inputs as .npy, replay.sh)
  std::string replay;   // the one-line command that replays it
  std::string summary;  // the differing cell and values
  // The extents substituted in both routines of the case, largest first; empty when the case has
  // the obligation's own sizes.
  std::vector<ExtentReduction> extents;
  // The case's inputs inline, one line per input ("q f32[2, 1] = [0.5, -inf]"; a long one cut
  // after its first values, the rest in its .npy), alive-tv style: the values that fail the claim
  // are on screen, not only in files.
  std::vector<std::string> inputs;
};

struct Verdict {
  std::string id;       // stable within a run: "<application>.<claim>", or "pair"
  std::string member;   // the member's id ("" for a hand-written pair)
  std::string rewrite;  // the shape's id ("<member>.<shape>"), SARIF ruleId
  std::string claim;    // the claim's id, or "exact" / "bounded:REL" for a pair
  ObligationKind claimed = ObligationKind::Exact;
  std::string description;
  std::vector<Cover> covers;
  std::string file;
  int line = 0;

  VerdictKind kind = VerdictKind::Unknown;
  UnknownReason reason = UnknownReason::None;
  std::string message;  // one sentence: why this verdict
  Scope scope;
  SolverInfo solver;
  Limits limits;
  std::string repro;
  std::optional<BoundInfo> bound;
  std::optional<Counterexample> counterexample;
  std::vector<std::string> steps;  // what was checked, in order
  double seconds = 0;
  // Wall seconds by phase (verify/phase_clock.h): this run's measurement, never cached or
  // serialized (a cached verdict has none).
  std::map<std::string, double> phase_seconds;
  bool cached = false;
  // Decided by a wall-clock budget running out: not deterministic, so never cached.
  bool decided_by_clock = false;

  bool proved() const { return kind == VerdictKind::Exact || kind == VerdictKind::Bounded; }
};

nlohmann::json to_json(const Limits& l);
nlohmann::json to_json(const Verdict& v);
Verdict verdict_from_json(const nlohmann::json& j);  // for the proof cache; throws on mismatch

// "exact, all sizes" / "bounded (rel 6.8e-07), sizes up to: ..." / "unknown (timeout)" ...
std::string verdict_headline(const Verdict& v);

}  // namespace fp::verify
