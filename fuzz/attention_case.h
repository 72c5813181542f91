#pragma once
// One attention fuzzing case: an attention program (frontend/attention.h), the tier settings it
// is rewritten under, an optional look-alike edit of its softmax chain (fuzz/lookalike.h) and its
// input data (fuzz/hostile_data.h) — everything a rewrite or verify target needs to run it again.
//
// Its text is JSON, two-space indented, keys in a fixed order, every field written (a case file
// is meant to be read and edited by hand):
//   {
//     "spec": {"batch": 1, "heads": 1, "sq": 4, "sk": 4, "d": 2, "e": 2, "dmodel": 0,
//              "scale": null, "mask": "none", "mask_fill": "-inf", "dropout": 0.0,
//              "precision": "f32", "train": false, "leaf": true, "layers": 1},
//     "settings": ["<gate>=true", "<key>=2"],
//     "lookalike": "none", "lookalike_seed": 0, "data_seed": 1, "hostile_percent": 0
//   }
// "scale": null is the default 1/sqrt(d). When parsing, a missing key keeps its default (the
// AttentionCase and AttentionSpec defaults); an unknown key, a value of the wrong type, an
// invalid spec (AttentionSpec's rules), a setting that is not key=value for a declared key with a
// valid value, an unknown look-alike or a percentage outside 0..100 is malformed. The settings are
// --set's KEY=VALUE for the config keys the registered members declare (rewrites/members.h).

#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/interpreter.h"
#include "core/ir.h"
#include "frontend/attention.h"
#include "fuzz/lookalike.h"

namespace fp::fuzz {

struct AttentionCase {
  AttentionSpec spec;                 // small: sq, sk in 1..12, d, e in 1..4, batch/heads 1..2, layers 1..2
  std::vector<std::string> settings;  // tier settings as for --set: "KEY=VALUE", ...
  Lookalike lookalike = Lookalike::None;
  std::uint64_t lookalike_seed = 0;
  std::uint64_t data_seed = 1;
  int hostile_percent = 0;  // fuzz/hostile_data.h
};

// The case as JSON (above), ending in a newline.
std::string attention_case_text(const AttentionCase& c);

// Parses attention_case_text's format. Throws UserError(kExitMalformed, source_name, line, col,
// what was expected) for malformed JSON (at the error) or a malformed case (at the offending key;
// an invalid spec at the spec's key, with the frontend's message).
AttentionCase parse_attention_case(const std::string& text, const std::string& source_name);

// build_attention(spec), then the look-alike when it applies to it (else the plain program).
Routine build_case_routine(const AttentionCase& c);

// The case's data: hostile_inputs(r, data_seed, hostile_percent).
TensorMap case_inputs(const AttentionCase& c, const Routine& r);

struct AttentionCaseOptions {
  bool allow_train = true;
  bool allow_lookalikes = true;
  bool allow_hostile = true;
  std::int64_t max_seq = 12;
  int max_layers = 2;
};

// Cases every one of which builds (build_case_routine does not throw and its routine checks).
// Draws every mask kind (prefix/padding up to sk: padding:sk leaves no key), fills -inf, finite,
// nan and +inf, the default scale or a random normal number of the precision or 0, sq != sk
// often, every float precision, leaf and non-leaf, stacked layers, training steps, dropout,
// every registered member's config keys drawn or left unset, a look-alike about 30% of the
// time, hostile data sometimes. Shrinks toward the smallest sizes, mask none, fill -inf, f32, one
// layer, no training, no dropout, no settings, no look-alike and hostile 0.
rc::Gen<AttentionCase> gen_attention_case(AttentionCaseOptions opts = {});

}  // namespace fp::fuzz
