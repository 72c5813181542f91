#pragma once
// A CI gate's baseline: today's verdicts and findings, recorded so that a later run fails only on
// what is new or worse (docs/verify.md, "Baselines").
//
//   verify ... --write-baseline FILE   records every obligation's verdict and scope and every
//                                      finding (decline, nothing applied), keyed by stable ids
//   verify ... --baseline FILE         compares: a run fails only on a regression
//
// Stable ids survive edits that do not touch what they name: an obligation is its file, its
// rewrite, the nodes it covers and its claim (never the application's number or source line); a
// finding is its file, its rule and the node its anchor writes (verify/findings.h).
//
// A regression is: a refuted, error or (under --fail-on=unknown) unknown verdict the baseline does
// not have with that verdict or a worse one; a proved obligation whose scope narrowed (all sizes
// to the sizes as given); a decline or nothing-applied finding the baseline does not have; a
// proved obligation of the baseline that a program of this run no longer has (lost). Programs
// not in this run are not compared.
//
// The file is JSON ({"schema": "flashproof-baseline", "version": 1, "obligations": {...},
// "findings": {...}}), written atomically; reading it back trusts nothing: every field is checked
// and a malformed file is exit 65 naming it and what was expected.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "verify/findings.h"
#include "verify/verdict.h"

namespace fp::verify {

inline constexpr const char* kBaselineSchema = "flashproof-baseline";
inline constexpr int kBaselineVersion = 1;
// Past this a baseline is not a file this tool wrote (a few hundred bytes per entry).
inline constexpr std::size_t kMaxBaselineBytes = std::size_t{256} << 20;

// Whether a verdict fails a gate on its own (no baseline): refuted, error, or unknown when
// `unknown_fails` (--fail-on unknown).
bool fails_on_its_own(const Verdict& v, bool unknown_fails);

// The stable id of an obligation (see above).
std::string obligation_key(const Verdict& v);

struct BaselineObligation {
  std::string file;
  std::string verdict;  // verdict_kind_name
  bool all_sizes = false;
};

struct BaselineFinding {
  std::string file;
  std::string kind;  // finding_kind_name
  std::string code;
};

struct Baseline {
  std::map<std::string, BaselineObligation> obligations;
  std::map<std::string, BaselineFinding> findings;
};

Baseline baseline_of(const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings);
std::string baseline_json(const Baseline& b);
// Parses `text`, read from `path`; UserError 65 naming the path and what was expected.
Baseline parse_baseline(const std::string& text, const std::string& path);

enum class RegressionKind : std::uint8_t { Verdict, Narrower, Finding, Lost };

struct Regression {
  RegressionKind kind = RegressionKind::Verdict;
  std::string key;
  std::string sentence;  // "1.x in a.fp (its rewrite): refuted (the baseline has bounded)"
};

struct BaselineComparison {
  std::string path;
  std::vector<Regression> regressions;
  std::set<std::string> regressed;  // the keys of `regressions`
  std::set<std::string> known;      // keys of this run's verdicts and findings the baseline has
  std::vector<Finding> lost;        // one finding per Lost regression, for the reports
};

// Compares this run with `baseline`. `files` are the programs this run verified; `unknown_fails`
// is --fail-on=unknown.
BaselineComparison compare_with_baseline(const Baseline& baseline, const std::string& path,
                                         const std::vector<Verdict>& verdicts, const std::vector<Finding>& findings,
                                         const std::set<std::string>& files, bool unknown_fails);

}  // namespace fp::verify
