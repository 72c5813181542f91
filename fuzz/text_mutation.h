#pragma once
// Mutations of valid program text, for the parser's and the checker's fuzzing: a valid .fp routine
// (core/text_printer.h) or any other text in a line-oriented format with identifiers, numbers and
// brackets, damaged by a few random edits so that the result is almost always malformed but still
// close enough to valid text to reach deep into the parser.
//
// The edits (1 to 4 per mutation, each drawn uniformly): delete, duplicate or swap lines; delete a
// byte range; insert random bytes (NUL, 0xff, control characters, UTF-8, invalid UTF-8, brackets);
// replace a token with another token of the text, with a keyword, with punctuation, with an extreme
// literal (1e999, 99999999999999999999, -0x, nan, ...) or with an unbalanced bracket; truncate;
// flip one bit.
//
// Deterministic: a pure function of (text, seed), the same on every machine (SplitMix64, no std
// distributions). The result always differs from a non-empty text (an edit that happened to
// change nothing is followed by a bit flip); an empty text gets bytes inserted.

#include <rapidcheck.h>

#include <cstdint>
#include <string>

namespace fp::fuzz {

std::string mutate_text(const std::string& text, std::uint64_t seed);

// Texts drawn from `valid`, each mutated with a drawn seed; shrinking shrinks the seed (toward
// fewer, simpler edits) and the valid text.
rc::Gen<std::string> gen_malformed_text(rc::Gen<std::string> valid);

}  // namespace fp::fuzz
