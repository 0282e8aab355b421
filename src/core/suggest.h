// "did you mean": the candidate closest to what was typed, by edit distance
// (insertions, deletions, substitutions and swaps of neighbours each count one).
#pragma once

#include <string>
#include <vector>

namespace ds {

size_t edit_distance(const std::string& a, const std::string& b);

// The closest of `candidates` to `typed` when it is close enough to be a typo (at
// most a third of its length, at least 1 and at most 3 edits away); "" otherwise.
std::string closest(const std::string& typed, const std::vector<std::string>& candidates);

// " (did you mean X?)" for closest(), or "".
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace ds
