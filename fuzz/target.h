#pragma once
// A fuzzing target: a property over one kind of random input that must never fail
// (docs/fuzzing.md). The campaign runner (fuzz/campaign.h) draws inputs from a target's generator,
// runs them, keeps those that cover a new feature in the corpus and writes every failure as a
// finding.
//
// An input is text in the target's own format — what a corpus file and a finding's case.txt
// hold — so that a campaign can be resumed from its corpus and a finding replayed from its file.
// The generator draws the input with its shrinks (RapidCheck's Shrinkable): a failing input is
// minimized by walking them before it is written.
//
// Coverage is decisions, not edges: each execution reports the features it hit — which rewrites
// applied and which reason codes declined, which verdicts came back, which kind of diagnostic a
// malformed text got — so that a campaign shows what it exercised, and the corpus keeps the inputs
// that hit something new.
#include <rapidcheck.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fp::fuzz {

// A failure of the target's property on one input.
struct Finding {
  std::string kind;     // stable class: "certified-mismatch", "parse-crash", "mutant-survived", …
  std::string where;    // the stable part of its location: an output node, a shape id, a mutant id
  std::string message;  // for people: what failed, with the cells or the verdict
  // Extra files of the case directory (name -> contents), e.g. both routines of a rewrite finding.
  std::map<std::string, std::string> files;
  // Two findings with one signature are one bug: the campaign keeps the first (smallest) case.
  std::string signature() const { return kind + ":" + where; }
};

struct Execution {
  std::optional<Finding> finding;
  std::set<std::string> features;  // "apply:<shape>", "decline:<code>", "verdict:<kind>", "outcome:<…>"
};

struct Target {
  std::string name;         // "parse", "exec", "rewrite", "verify"
  std::string description;  // one line, for `flashproof fuzz list` and --help
  std::string input_kind;   // what a case file holds: ".fp routine text", "attention case (JSON)", …
  // One input drawn from `seed`, with its shrinks.
  std::function<rc::Shrinkable<std::string>(std::uint64_t seed)> generate;
  // Runs one input. A case file that is not an input of this target throws UserError 65 located
  // at `source_name`; any other failure is returned as a finding, never thrown.
  std::function<Execution(const std::string& input, const std::string& source_name)> run;
};

// The running campaign's end (-max_total_time), for a target whose one execution can be long (the
// verifier's): the seconds left, at most `cap` (`cap` when no deadline is set).
void set_campaign_deadline(std::optional<std::chrono::steady_clock::time_point> deadline);
double seconds_left(double cap);

// Every target, in the order `flashproof fuzz list` prints them.
const std::vector<Target>& targets();
// nullptr when there is none with that name.
const Target* find_target(const std::string& name);

// Draws a generator's Shrinkable deterministically from a seed (RapidCheck's Random, nominal size).
template <typename T>
rc::Shrinkable<T> draw(const rc::Gen<T>& gen, std::uint64_t seed) {
  return gen(rc::Random(seed), rc::kNominalSize);
}

// A target's `generate`: draws from `gen` (built once) at each seed.
inline std::function<rc::Shrinkable<std::string>(std::uint64_t)> drawing_from(rc::Gen<std::string> gen) {
  return [gen = std::move(gen)](std::uint64_t seed) { return draw(gen, seed); };
}

// The targets, one file each (fuzz/target_*.cpp).
Target parse_target();
Target exec_target();
Target rewrite_target();
Target verify_target();

}  // namespace fp::fuzz
