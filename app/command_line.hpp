#pragma once
// The command line as the user typed it, for provenance and for the command that resumes.
#include <string>
#include <vector>

namespace moe::app {

// This process's arguments, argv[0] as "moebench".
std::vector<std::string> command_argv();
// The arguments as one shell command line, quoting what needs it.
std::string shell_join(const std::vector<std::string>& args);

}  // namespace moe::app
