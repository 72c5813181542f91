#pragma once
// "Did you mean ...?" for a mistyped subcommand, option or configuration key: the closest candidate by edit distance
// (optimal string alignment: insertions, deletions, substitutions and swaps of neighbours each
// cost 1), offered only when it is close enough to be a typo rather than a different word.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp {

// Edits turning `a` into `b`.
int edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` within the typo threshold (1 edit for words up to 3 letters, 2
// up to 6, 3 beyond; never the word itself), the first in `candidates` order on a tie.
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace fp
