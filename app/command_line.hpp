#pragma once
// The command line as the user typed it, for provenance and for the command that resumes.
#include <string>
#include <vector>

#include "tuner/base/shell_words.hpp"

namespace moe::app {

// This process's arguments, argv[0] as "moebench".
std::vector<std::string> command_argv();
// Quoting and the executable's path live with the tuner, which prints commands too.
using tuner::executable_path;
using tuner::shell_join;
using tuner::shell_quote;

}  // namespace moe::app
