#pragma once
// The markdown summary of a sweep: per kernel and problem, the chosen config for every token
// count, its median, speed-up over the family's default config and % of the measured copy
// bandwidth (cuda only); then wall time, candidates timed out of the space, and what failed.
#include <cstddef>
#include <string>

#include "tuner/measure/json_io.hpp"

namespace moe::tuner {

// `config_width` > 0 abbreviates longer configs (the view on a terminal: the layer's resolved
// stage configs run to ~300 characters): parameter names to their initials, then cut to that
// width. 0 keeps them whole, as the files do.
std::string markdown_summary(const json& results, std::size_t config_width = 0);

// The summary as a command prints it: configs abbreviated to 130 characters when stdout is a
// terminal, whole otherwise (a log or a pipe is a file too).
std::string printed_summary(const json& results);

}  // namespace moe::tuner
