#pragma once
// "did you mean": the closest of a set of names to a mistyped one, so an unknown flag, model or
// family is answered with the name the user most likely meant.
#include <string>
#include <vector>

namespace moe::tuner {

// The name in `names` nearest to `word` (case, '_' and '-' ignored; edit distance, a swap of
// two neighbours counting one), or "" when none is near enough to be a plausible typo.
std::string closest_name(const std::string& word, const std::vector<std::string>& names);

// " (did you mean X?)" for closest_name's answer, "" when there is none.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& names);

}  // namespace moe::tuner
