#pragma once
// The markdown summary of a sweep: per kernel and problem, the chosen config for every token
// count, its median, speed-up over the family's default config and % of the measured copy
// bandwidth; then wall time, candidates timed out of the space, and what failed.
#include <string>

#include "tuner/json_io.hpp"

namespace moe::tuner {

std::string markdown_summary(const json& results);

}  // namespace moe::tuner
