#pragma once
// The command line as the user typed it, for provenance and for the command that resumes.
#include <string>
#include <vector>

namespace moe::app {

// This process's arguments, argv[0] as "moebench".
std::vector<std::string> command_argv();
// The running executable's absolute path, so a printed command runs this binary wherever the
// shell's PATH points ("moebench" when the system will not say).
std::string executable_path();
// One argument as the POSIX shell reads it back unchanged: as is when it holds no character
// the shell treats specially, else in single quotes.
std::string shell_quote(const std::string& arg);
// The arguments as one shell command line, each quoted as it needs.
std::string shell_join(const std::vector<std::string>& args);

}  // namespace moe::app
